package org.jmscclpp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.jmscclpp.bench.BenchCommands;
import org.jmscclpp.bench.BenchRankSample;
import org.jmscclpp.bench.WriteBenchRankSample;
import org.jmscclpp.samples.Launcher;
import org.junit.jupiter.api.Test;

class MainTest {

    private static final Map<String, String> RANK_1_OF_2 = Map.of("JMSCCLPP_RANK", "1", "JMSCCLPP_WORLD_SIZE", "2",
            "MSCCLPP_COMM_ID", "127.0.0.1:9");

    @Test
    void helpPrintsUsageWithPublicSamplesOnly() {
        MainRun r = MainRun.of(Map.of(), "help");
        assertEquals(0, r.code());
        assertTrue(r.out().startsWith("Usage: jmscclpp run -n N"), r.out());
        assertTrue(r.out().contains("bootstrap-demo"), r.out());
        assertTrue(r.out().contains("jmscclpp bench bootstrap|write|"), r.out());
        String benchLine = r.out().lines().filter(l -> l.contains("jmscclpp bench ")).findFirst().orElseThrow();
        for (BenchCommands.Bench b : BenchCommands.all()) {
            assertTrue(benchLine.contains(b.name()), b.name() + " in " + benchLine);
        }
        assertTrue(r.out().contains("  allgather "), r.out());
        assertTrue(!r.out().contains("wait-forever") && !r.out().contains(BenchRankSample.NAME)
                && !r.out().contains(WriteBenchRankSample.NAME), r.out());
        assertEquals(r.out(), MainRun.of(Map.of(), "--help").out());
    }

    @Test
    void theLauncherStartsRanksWithThisMainClass() {
        assertEquals(Main.class.getName(), Launcher.SAMPLE_MAIN);
    }

    @Test
    void noArgumentsIsAUsageError() {
        MainRun r = MainRun.of(Map.of());
        assertEquals(2, r.code());
        assertTrue(r.err().startsWith("Usage: jmscclpp"), r.err());
    }

    @Test
    void oneRankRunsWithItsIdentityFromTheEnvironment() {
        // CODES is indexed by rank: only rank 1 exits with 7
        assertEquals(7, MainRun.of(RANK_1_OF_2, "exit-code", "0,7").code());
        assertEquals(0, MainRun.of(RANK_1_OF_2, "exit-code", "7,0").code());
    }

    @Test
    void missingIdentityIsAUsageErrorNamingTheVariables() {
        MainRun r = MainRun.of(Map.of(), "exit-code", "0");
        assertEquals(2, r.code());
        assertTrue(r.err().contains("JMSCCLPP_RANK"), r.err());
    }

    @Test
    void unknownSampleAndBadSampleArgumentsAreUsageErrors() {
        MainRun unknown = MainRun.of(RANK_1_OF_2, "nope");
        assertEquals(2, unknown.code());
        assertTrue(unknown.err().contains("unknown command or sample 'nope'"), unknown.err());
        MainRun bad = MainRun.of(RANK_1_OF_2, "exit-code", "banana");
        assertEquals(2, bad.code());
        assertTrue(bad.err().contains("'banana' is neither an exit code nor 'wait'"), bad.err());
    }

    @Test
    void benchUsageErrors() {
        assertEquals(2, MainRun.of(Map.of(), "bench").code());
        assertEquals(2, MainRun.of(Map.of(), "bench", "allreduce").code());
        assertEquals(2, MainRun.of(Map.of(), "bench", "bootstrap", "--iters", "0").code());
        assertEquals(2, MainRun.of(Map.of(), "bench", "bootstrap", "--procs", "1").code());
        MainRun which = MainRun.of(Map.of(), "bench", "allreduce");
        assertTrue(which.err().contains("one of: bootstrap, write"), which.err());
        assertTrue(MainRun.of(Map.of(), "bench").err().contains("which benchmark?"));
        assertEquals(2, MainRun.of(Map.of(), "bench", "write", "--iters", "0").code());
    }
}
