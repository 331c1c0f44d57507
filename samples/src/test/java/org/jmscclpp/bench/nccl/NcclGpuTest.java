package org.jmscclpp.bench.nccl;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.jmscclpp.cuda.GpuJob;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NCCL through {@link NcclCommunicator} in jobs of one process per GPU ({@link NcclScenarios}):
 * the four collectives of the bench on two GPUs, every element checked, plus a graph-captured
 * all-reduce; and an init that one rank never joins, which must end in TIMEOUT. The processes run
 * with {@code NCCL_NVLS_ENABLE=0}. Aborted with the reason where there is no GPU or no libnccl.
 */
@Tag("gpu")
class NcclGpuTest {

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(4);

    @TempDir
    Path logs;

    @BeforeAll
    static void needsGpusAndNccl() {
        GpuJob.assumeGpus(1);
        NcclCommunicator.unavailableReason().ifPresent(reason -> Assumptions.abort("no NCCL here: " + reason));
    }

    @Test
    void collectivesOnTwoGpus() {
        GpuJob.assumeOwnGpus(2);
        job(2, "nccl-collectives");
    }

    @Test
    void initTimesOutWhenARankNeverJoins() {
        job(1, "nccl-init-timeout");
    }

    private void job(int ranks, String scenario) {
        List<String> outputs = GpuJob.run(NcclScenarios.class, ranks, JOB_TIMEOUT, logs, scenario);
        for (int rank = 0; rank < outputs.size(); rank++) {
            System.out.print("[" + scenario + " rank " + rank + "]\n" + outputs.get(rank));
        }
    }
}
