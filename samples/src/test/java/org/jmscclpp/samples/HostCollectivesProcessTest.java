package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Three rank processes (TCP bootstrap, shared memory across processes) run an allreduce and a port alltoall, every element checked. */
class HostCollectivesProcessTest {

    @TempDir
    Path shm;

    @Test
    @Timeout(180)
    void threeProcessesAgreeOnEveryElement() throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(3)
                .mainClass(HostCollectiveRankMain.class.getName(), List.of("ALLREDUCE/auto", "ALLTOALL/port"))
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString())).output(lines::add).start()) {
            assertTrue(job.waitFor(Duration.ofSeconds(150)), "ranks still running");
            String all = lines.stream().map(l -> "[rank " + l.rank() + "] " + l.text()).collect(Collectors.joining("\n"));
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + all);
            for (int r = 0; r < 3; r++) {
                int rank = r;
                assertEquals(1, lines.stream().filter(l -> l.rank() == rank
                        && l.text().equals("rank " + rank + ": 24 runs checked, 0 wrong")).count(), all);
            }
        }
    }
}
