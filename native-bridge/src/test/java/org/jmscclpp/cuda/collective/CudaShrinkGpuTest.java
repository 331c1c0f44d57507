package org.jmscclpp.cuda.collective;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.jmscclpp.cuda.GpuJob;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 19's shrink on GPUs: four rank processes on four GPUs allreduce in a loop; the last one
 * crashes; the three survivors, whose calls fail naming it, shrink the job and finish checked
 * allreduces on the same GPUs ({@link ShrinkGpuRankMain}).
 */
@Tag("gpu")
class CudaShrinkGpuTest {

    @TempDir
    Path logs;

    @Test
    void theSurvivorsOfACrashedRankShrinkAndAllReduceOnTheSameGpus() {
        GpuJob.assumeGpus(4);
        List<String> out = GpuJob.run(ShrinkGpuRankMain.class, 4, Duration.ofMinutes(4), logs, "shrink");
        for (int rank = 0; rank < out.size(); rank++) {
            System.out.print("[shrink rank " + rank + "]\n" + out.get(rank));
        }
        assertTrue(out.get(3).contains("CRASH"), out.get(3));
        for (int rank = 0; rank < 3; rank++) {
            String o = out.get(rank);
            assertTrue(o.contains("LOST ") && o.contains("peer=3"), "rank " + rank + ":\n" + o);
            assertTrue(o.contains("SHRUNK rank=" + rank + " of 3 round 2") && o.contains("OK"), "rank " + rank + ":\n" + o);
        }
    }
}
