package org.jmscclpp.cuda.collective;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.jmscclpp.cuda.GpuJob;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUDA engine's collectives of a job that spans hosts: the GPUs of this host split into two
 * pretend hosts of consecutive ranks, each with its own {@code MSCCLPP_HOSTID}, so that the
 * library may not use CUDA IPC between them. The engine runs {@code HierarchicalComm}: NVLink
 * collectives inside each half and ETHERNET between them. Aborted, saying why, with fewer than four
 * GPUs (or an odd number).
 */
@Tag("gpu")
class CudaHierarchicalGpuTest {

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(8);

    @TempDir
    Path logs;

    static int gpus;

    @BeforeAll
    static void needsFourGpus() {
        GpuJob.assumeGpus(4);
        gpus = GpuJob.ranks(4) & ~1;
    }

    @Test
    void everyKindOnTwoHostsOfGpus() {
        int perHost = gpus / 2;
        GpuJob.runAndPrint(CollectiveScenarios.class, rank -> Map.of("MSCCLPP_HOSTID", "gpu-host-" + rank / perHost),
                "coll-hosts on " + gpus + " ranks as 2 hosts", gpus, JOB_TIMEOUT, logs, "coll-hosts");
    }
}
