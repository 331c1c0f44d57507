package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MainTest {

    private record Result(int code, String out, String err) {
    }

    private static Result main(Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Main.run(List.of(args), o, e, env);
        }
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static final Map<String, String> RANK_1_OF_2 = Map.of("JMSCCLPP_RANK", "1", "JMSCCLPP_WORLD_SIZE", "2",
            "MSCCLPP_COMM_ID", "127.0.0.1:9");

    @Test
    void helpPrintsUsageWithPublicSamplesOnly() {
        Result r = main(Map.of(), "help");
        assertEquals(0, r.code());
        assertTrue(r.out().startsWith("usage: jmscclpp"), r.out());
        assertTrue(r.out().contains("bootstrap-demo"), r.out());
        assertTrue(r.out().contains("jmscclpp bench bootstrap"), r.out());
        assertTrue(r.out().contains(WriteBench.SYNOPSIS), r.out());
        assertTrue(r.out().contains("  allgather "), r.out());
        assertTrue(!r.out().contains("wait-forever") && !r.out().contains(BenchRankSample.NAME)
                && !r.out().contains(WriteBenchRankSample.NAME), r.out());
    }

    @Test
    void noArgumentsIsAUsageError() {
        Result r = main(Map.of());
        assertEquals(2, r.code());
        assertTrue(r.err().startsWith("usage: jmscclpp"), r.err());
    }

    @Test
    void oneRankRunsWithItsIdentityFromTheEnvironment() {
        // CODES is indexed by rank: only rank 1 exits with 7
        assertEquals(7, main(RANK_1_OF_2, "exit-code", "0,7").code());
        assertEquals(0, main(RANK_1_OF_2, "exit-code", "7,0").code());
    }

    @Test
    void missingIdentityIsAUsageErrorNamingTheVariables() {
        Result r = main(Map.of(), "exit-code", "0");
        assertEquals(2, r.code());
        assertTrue(r.err().contains("JMSCCLPP_RANK"), r.err());
    }

    @Test
    void unknownSampleAndBadSampleArgumentsAreUsageErrors() {
        Result unknown = main(RANK_1_OF_2, "nope");
        assertEquals(2, unknown.code());
        assertTrue(unknown.err().contains("unknown command or sample 'nope'"), unknown.err());
        Result bad = main(RANK_1_OF_2, "exit-code", "banana");
        assertEquals(2, bad.code());
        assertTrue(bad.err().contains("'banana' is neither an exit code nor 'wait'"), bad.err());
    }

    @Test
    void benchUsageErrors() {
        assertEquals(2, main(Map.of(), "bench").code());
        assertEquals(2, main(Map.of(), "bench", "allreduce").code());
        assertEquals(2, main(Map.of(), "bench", "bootstrap", "--iters", "0").code());
        assertEquals(2, main(Map.of(), "bench", "bootstrap", "--procs", "1").code());
        Result which = main(Map.of(), "bench", "allreduce");
        assertTrue(which.err().contains("one of: bootstrap, write"), which.err());
        assertEquals(2, main(Map.of(), "bench", "write", "--iters", "0").code());
    }
}
