package org.jmscclpp.cuda.collective;

import java.nio.file.Path;
import java.time.Duration;
import org.jmscclpp.cuda.GpuJob;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUDA collective engine on every GPU of this host (2 to 8), one process per GPU: the scenarios
 * of {@link CollectiveScenarios}, each rank's output printed as the record of the run. Aborted,
 * saying why, where fewer than two GPUs are found.
 */
@Tag("gpu")
class CudaCollectivesGpuTest {

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(8);

    @TempDir
    Path logs;

    static int gpus;

    @BeforeAll
    static void needsTwoGpus() {
        GpuJob.assumeGpus(2);
        gpus = GpuJob.ranks(2);
    }

    private void job(String scenario) {
        GpuJob.runAndPrint(CollectiveScenarios.class, scenario + " on " + gpus + " ranks", gpus, JOB_TIMEOUT, logs, scenario);
    }

    @Test
    void everyKindTypeCountOffsetPlacementAndAlgorithm() {
        job("coll-matrix");
    }

    @Test
    void externalPointersAndStreams() {
        job("coll-external");
    }

    @Test
    void graphCaptureReplaysOnFreshInputs() {
        job("coll-graph");
    }

    @Test
    void groupsMixSendsReceivesAndCollectives() {
        job("coll-group");
    }

    @Test
    void ranksMayMixInPlaceAndOutOfPlace() {
        job("coll-mixed");
    }

    @Test
    void mismatchedCallsFailEveryRank() {
        job("coll-mismatch");
    }

    @Test
    void aSendOrReceiveAgainstACollectiveFailsEveryRankAtOnce() {
        job("coll-crossing");
        if (gpus < 3 && "1".equals(System.getenv(GpuJob.SHARE_ENV))) {
            // a rank that is in neither call of the crossed pair: it learns of it from the sending or receiving rank
            GpuJob.runAndPrint(CollectiveScenarios.class, "coll-crossing on 3 ranks", 3, JOB_TIMEOUT, logs, "coll-crossing");
        }
    }
}
