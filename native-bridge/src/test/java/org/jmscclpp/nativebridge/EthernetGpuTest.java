package org.jmscclpp.nativebridge;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPU memory over {@code ETHERNET} (the bootstrap module's TCP transport, found through its
 * {@code TransportProvider}) between two processes, one GPU each: the sender stages device memory
 * through pinned host memory, the receiver copies into device memory off its event loop. BasicWrite,
 * WriteWithDeviceSemaphores (the token lands in device memory while the peer's kernel waits on it)
 * and PortChannel ping-pong driven by kernels through each rank's proxy, every element checked.
 * Each test prints every rank's output. Aborted with the reason where there are fewer than two GPUs.
 */
@Tag("gpu")
class EthernetGpuTest {

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(4);

    @TempDir
    Path logs;

    @BeforeAll
    static void needsTwoGpus() {
        new CudaBackendProvider().unavailableReason().ifPresent(reason -> Assumptions.abort("no GPU here: " + reason));
        int gpus = CudaContext.deviceCount();
        Assumptions.assumeTrue(gpus >= 2, "these tests need 2 GPUs, this host has " + gpus);
    }

    @Test
    void basicWrite() {
        job("basic-write");
    }

    @Test
    void writeWithDeviceSemaphores() {
        job("device-semaphores");
    }

    /** 50 iterations per size: every one moves up to 16 MiB each way through TCP and staging. */
    @Test
    void portChannelPingPong() {
        job("port-ping-pong", "iters=50");
    }

    private void job(String scenario, String... args) {
        List<String> all = new java.util.ArrayList<>(List.of("transport=ETHERNET"));
        all.addAll(List.of(args));
        List<String> outputs = GpuJob.run(2, JOB_TIMEOUT, logs, scenario, all.toArray(String[]::new));
        for (int rank = 0; rank < outputs.size(); rank++) {
            System.out.print("[ETHERNET " + scenario + " rank " + rank + "]\n" + outputs.get(rank));
        }
    }
}
