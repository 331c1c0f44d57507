package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import org.jmscclpp.core.collective.CollectiveKind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three rank processes (TCP bootstrap, shared memory across processes) run the library's allreduce,
 * alltoall and sendrecv on registered and staged buffers, every element checked.
 */
class HostCollectivesProcessTest {

    @TempDir
    Path shm;

    @Test
    @Timeout(180)
    void threeProcessesAgreeOnEveryElement() throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(3)
                .mainClass(HostCollectiveRankMain.class.getName(), List.of("ALL_REDUCE", "ALL_TO_ALL", "SEND"))
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString())).output(lines::add).start()) {
            assertTrue(job.waitFor(Duration.ofSeconds(150)), "ranks still running");
            String all = lines.stream().map(l -> "[rank " + l.rank() + "] " + l.text()).collect(Collectors.joining("\n"));
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + all);
            int runs = HostCollectiveRankMain.runs(CollectiveKind.ALL_REDUCE)
                    + HostCollectiveRankMain.runs(CollectiveKind.ALL_TO_ALL) + HostCollectiveRankMain.runs(CollectiveKind.SEND);
            assertEquals(32 + 16 + 8, runs);
            for (int r = 0; r < 3; r++) {
                int rank = r;
                assertEquals(1, lines.stream().filter(l -> l.rank() == rank
                        && l.text().equals("rank " + rank + ": " + runs + " runs checked, 0 wrong")).count(), all);
            }
        }
    }

    /**
     * Two rank processes as two hosts, rank 1 naming a rails' transport it cannot use
     * ({@code MSCCLPP_RAIL_TRANSPORT=IB0}: no RDMA device here): both fail the setup with
     * INVALID_USAGE at once, rank 1 saying why, rank 0 naming rank 1; neither waits for the other.
     */
    @Test
    @Timeout(120)
    void aRankNamingARailTransportItCannotUseFailsEveryRank() throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(2)
                .mainClass(HostCollectiveRankMain.class.getName(), List.of("ALL_REDUCE"))
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString()))
                .rankEnv(r -> r == 1 ? Map.of("MSCCLPP_HOSTID", "rail-host-1", "MSCCLPP_RAIL_TRANSPORT", "IB0")
                        : Map.of("MSCCLPP_HOSTID", "rail-host-0"))
                .output(lines::add).start()) {
            assertTrue(job.waitFor(Duration.ofSeconds(100)), "ranks still running");
            String all = lines.stream().map(l -> "[rank " + l.rank() + "] " + l.text()).collect(Collectors.joining("\n"));
            assertTrue(job.firstFailure().isPresent(), all);
            assertTrue(lines.stream().anyMatch(l -> l.rank() == 1 && l.text().contains("INVALID_USAGE")
                    && l.text().contains("MSCCLPP_RAIL_TRANSPORT=IB0, which this rank cannot use")), all);
            assertTrue(lines.stream().anyMatch(l -> l.rank() == 0 && l.text().contains("INVALID_USAGE")
                    && l.text().contains("rank 1 names a rails' transport (MSCCLPP_RAIL_TRANSPORT) that it cannot use")),
                    all);
        }
    }
}
