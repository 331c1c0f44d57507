package org.jmscclpp.cuda;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * Base of the GPU test classes whose tests are jobs of two processes, one GPU each ({@link GpuJob}):
 * aborted with the reason where there are fewer than two GPUs; each job's rank outputs are printed.
 */
abstract class TwoGpuJobTest {

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(4);

    @TempDir
    Path logs;

    @BeforeAll
    static void needsTwoGpus() {
        GpuJob.assumeGpus(2);
    }

    /** Runs {@code scenario} on two ranks and prints their outputs under {@code label}. */
    void runJob(String label, String scenario, String... args) {
        GpuJob.runAndPrint(label, 2, JOB_TIMEOUT, logs, scenario, args);
    }
}
