package org.jmscclpp.cuda;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An abort reaching running kernels on two GPUs (one process each, {@link AbortScenarios}): the
 * waiting rank's call or kernel ends within seconds, far below the device deadline, without a
 * trap, and the same processes then build new jobs on the same GPUs that work. Each rank's output
 * is printed as the record of the run. Aborted, saying why, where fewer than two GPUs are found.
 */
@Tag("gpu")
class CudaAbortGpuTest {

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(5);

    @TempDir
    Path logs;

    @BeforeAll
    static void needsTwoGpus() {
        GpuJob.assumeGpus(2);
    }

    private void job(String scenario) {
        GpuJob.runAndPrint(AbortScenarios.class, scenario + " on 2 GPUs", 2, JOB_TIMEOUT, logs, scenario,
                "address2=127.0.0.1:" + freePort(), "address3=127.0.0.1:" + freePort());
    }

    @Test
    void anAbortEndsAWaitingAllReduceAndANewJobRunsOnTheSameGpus() {
        job("abort-collective");
    }

    @Test
    void aCollectivePastItsDeviceDeadlineFailsWithTimeoutWithoutATrapAndANewJobRuns() {
        job("timeout-collective");
    }

    @Test
    void anAbortEndsAKernelWaitingOnASemaphoreWithoutATrapAndTheContextStaysUsable() {
        job("abort-kernel");
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
