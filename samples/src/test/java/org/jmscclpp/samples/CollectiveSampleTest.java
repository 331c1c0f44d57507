package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The collective samples as {@code jmscclpp run -n N KIND ...} runs them: real rank processes, host backend, the library's CollectiveComm. */
class CollectiveSampleTest {

    private static final Duration DEADLINE = Duration.ofSeconds(90);

    @TempDir
    Path shm;

    record Outcome(int failedRank, int exitCode, List<String> rank0, String all) {
    }

    /** Runs {@code args} (a sample and its arguments) as {@code jmscclpp run} does, with the test algorithms. */
    private Outcome run(int ranks, List<String> args) throws InterruptedException {
        return run(Launcher.builder(ranks).mainClass(TestRankMain.class.getName(), args));
    }

    /** Runs {@code job} (its ranks) to the end. */
    private Outcome run(Launcher.Builder job) throws InterruptedException {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        int failedRank = -1;
        int exitCode = 0;
        try (Launcher.Job running = job.jvmArgs(TestRankMain.JVM_ARGS).env(Map.of("JMSCCLPP_SHM_DIR", shm.toString()))
                .output(lines::add).start()) {
            assertTrue(running.waitFor(DEADLINE), "ranks still running after " + DEADLINE);
            if (running.firstFailure().isPresent()) {
                failedRank = running.firstFailure().get().rank();
                exitCode = running.firstFailure().get().exitCode();
            }
        }
        StringBuilder all = new StringBuilder();
        lines.forEach(l -> all.append("[rank ").append(l.rank()).append("] ").append(l.text()).append('\n'));
        List<String> rank0 = new ArrayList<>(lines.stream().filter(l -> l.rank() == 0 && !l.stderr())
                .map(Launcher.OutputLine::text).toList());
        return new Outcome(failedRank, exitCode, rank0, all.toString());
    }

    /** The README's quick start: four ranks, no arguments, the tuning table's algorithm. */
    @Test
    @Timeout(120)
    void allgatherWithoutArgumentsChecksEveryElementOnFourRanks() throws Exception {
        Outcome o = run(Launcher.builder(4).sample("allgather", List.of()));
        assertEquals(-1, o.failedRank(), o.all());
        String first = o.rank0().getFirst();
        assertTrue(first.matches("allgather: 4 ranks, host backend, algorithm \\S+, float, 1 MiB \\(65536 elements per"
                + " rank\\), 2 checks with fresh inputs, 20 timed iterations after 5 warm-up"), o.all());
        assertTrue(o.rank0().get(1).matches("\\| placement +\\| size \\(B\\) \\| +count \\| +time µs \\| algbw GB/s \\|"
                + " busbw GB/s \\| #wrong \\|"), o.all());
        assertTrue(o.rank0().get(3).matches("\\| out-of-place \\| +1048576 \\| +65536 \\| +[0-9.]+ \\| +[0-9.]+ \\|"
                + " +[0-9.]+ \\| +0 \\|"), o.all());
        assertTrue(o.rank0().get(4).startsWith("| in-place "), o.all());
        assertEquals("allgather: every element checked on every rank: OK", o.rank0().get(5), o.all());
        assertTrue(o.all().lines().noneMatch(l -> !l.startsWith("[rank 0]") && !l.contains("WARN")
                && l.matches("\\[rank \\d] (allgather|\\|).*")), "only rank 0 prints the table");
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList(), "every rank closed its shared memory");
        }
    }

    @Test
    @Timeout(180)
    void everyOtherSampleWithoutArgumentsChecksEveryElementOnTwoRanks() throws Exception {
        for (String kind : List.of("allreduce", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv")) {
            Outcome o = run(Launcher.builder(2).sample(kind, List.of()));
            assertEquals(-1, o.failedRank(), o.all());
            String what = switch (kind) {
                case "allreduce", "reducescatter" -> "float, sum";
                case "reduce" -> "float, sum, root 0";
                case "broadcast" -> "float, root 0";
                default -> "float";
            };
            assertTrue(o.rank0().getFirst().startsWith(kind + ": 2 ranks, host backend, algorithm "),
                    o.all());
            assertTrue(o.rank0().getFirst().contains(", " + what + ", 1 MiB ("), o.all());
            // the line of what ran, the table's head and rule, a line per placement, the verdict
            assertEquals(kind.equals("sendrecv") ? 5 : 6, o.rank0().size(), o.all());
            assertEquals(kind + ": every element checked on every rank: OK", o.rank0().getLast(), o.all());
        }
    }

    @Test
    @Timeout(120)
    void theTypeReductionAndAlgorithmOptionsReachTheRanks() throws Exception {
        Outcome o = run(3, List.of("allreduce", "--algo", "rsag", "-d", "bfloat16", "--redop", "max", "--bytes", "4K",
                "--iters", "3"));
        assertEquals(-1, o.failedRank(), o.all());
        assertTrue(o.rank0().getFirst().startsWith("allreduce: 3 ranks, host backend, algorithm rsag, bfloat16, max,"
                + " 4 KiB (2048 elements), 2 checks with fresh inputs, 3 timed iterations after 3 warm-up"), o.all());
        assertEquals("allreduce: every element checked on every rank: OK", o.rank0().getLast(), o.all());
        Outcome r = run(3, List.of("reduce", "-d", "f8e5m2", "--redop", "prod", "--root", "2", "--bytes", "100",
                "--iters", "2"));
        assertEquals(-1, r.failedRank(), r.all());
        assertTrue(r.rank0().getFirst().startsWith("reduce: 3 ranks, host backend, algorithm direct, f8e5m2, prod,"
                + " root 2, 100 B (100 elements)"), r.all());
        assertEquals("reduce: every element checked on every rank: OK", r.rank0().getLast(), r.all());
    }

    /**
     * JMSCCLPP_SCRATCH_BYTES (NCCL_BUFFSIZE's counterpart) reaches the ranks: a 64 KiB scratch moves
     * 1 MiB in pieces and checks; a value below the engine's least, one that does not parse, and
     * values that differ between ranks fail every rank with INVALID_USAGE saying why.
     */
    @Test
    @Timeout(180)
    void theScratchSizeComesFromTheEnvironment() throws Exception {
        List<String> args = List.of("allreduce", "--bytes", "1M", "--iters", "2");
        Outcome small = run(Launcher.builder(2).mainClass(TestRankMain.class.getName(), args)
                .env(Map.of(CollectiveOptions.SCRATCH_ENV, "64K")));
        assertEquals(-1, small.failedRank(), small.all());
        assertEquals("allreduce: every element checked on every rank: OK", small.rank0().getLast(), small.all());

        Outcome tooSmall = run(Launcher.builder(2).mainClass(TestRankMain.class.getName(), args)
                .env(Map.of(CollectiveOptions.SCRATCH_ENV, "32K")));
        assertTrue(tooSmall.failedRank() >= 0 && tooSmall.exitCode() != 0, tooSmall.all());
        assertTrue(tooSmall.all().contains("INVALID_USAGE") && tooSmall.all().contains("at least 65536 bytes of"
                + " scratch, got 32768"), tooSmall.all());

        Outcome unreadable = run(Launcher.builder(2).mainClass(TestRankMain.class.getName(), args)
                .env(Map.of(CollectiveOptions.SCRATCH_ENV, "lots")));
        assertTrue(unreadable.failedRank() >= 0 && unreadable.exitCode() != 0, unreadable.all());
        assertTrue(unreadable.all().contains("INVALID_USAGE") && unreadable.all().contains(
                CollectiveOptions.SCRATCH_ENV + " must be a byte count"), unreadable.all());

        Outcome differ = run(Launcher.builder(2).mainClass(TestRankMain.class.getName(), args)
                .rankEnv(rank -> Map.of(CollectiveOptions.SCRATCH_ENV, rank == 0 ? "1M" : "2M")));
        assertTrue(differ.failedRank() >= 0 && differ.exitCode() != 0, differ.all());
        assertTrue(differ.all().contains("INVALID_USAGE"), differ.all());
    }

    @Test
    @Timeout(120)
    void wrongElementsFailTheSample() throws Exception {
        Outcome o = run(2, List.of("allreduce", "--algo", CorruptingComm.NAME, "--bytes", "64", "--iters", "1"));
        assertEquals(ExitCodes.FAILURE, o.exitCode(), o.all());
        // 2 ranks x 2 checks x 2 placements, one wrong element each
        assertEquals("allreduce: FAILED: 8 wrong elements", o.rank0().getLast(), o.all());
    }

    @Test
    void badArgumentsAreUsageErrors() {
        assertEquals(new CollectiveSample.Options("host", null, DataType.FLOAT32, ReduceOp.SUM, 0, 1 << 20, 20),
                CollectiveSample.parse("allgather", List.of()));
        assertEquals(new CollectiveSample.Options("cuda", "ll16", DataType.BFLOAT16, ReduceOp.AVG, 1, 64 << 10, 3),
                CollectiveSample.parse("allreduce", List.of("--backend", "cuda", "--algo", "ll16", "-d", "bfloat16",
                        "--redop", "avg", "--root", "1", "--bytes", "64K", "--iters", "3")));
        for (List<String> bad : List.of(List.of("--bytes"), List.of("--bytes", "0"), List.of("--bytes", "lots"),
                List.of("--iters", "0"), List.of("-d", "quad"), List.of("--redop", "xor"), List.of("--root", "-1"),
                List.of("--what", "1"))) {
            JmscclppException e = assertThrows(JmscclppException.class, () -> CollectiveSample.parse("allgather", bad),
                    bad::toString);
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        }
    }
}
