package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class AllGatherSampleTest {

    private static final Duration DEADLINE = Duration.ofSeconds(120);

    @TempDir
    Path shm;

    /** Four rank processes gather 4 KiB each over HOST_IPC; rank 0 prints the seed, the table and OK. */
    @Test
    @Timeout(180)
    void fourRanksGatherEverySliceAndRankZeroPrintsTheTable() throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(4)
                .sample(AllGatherSample.NAME, List.of("--bytes", "4K", "--iters", "5", "--warmup", "1"))
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString())).output(lines::add).start()) {
            assertTrue(job.waitFor(DEADLINE), "ranks still running after " + DEADLINE);
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + text(lines));
        }
        List<String> rank0 = lines.stream().filter(l -> l.rank() == 0 && !l.stderr()).map(Launcher.OutputLine::text)
                .toList();
        String out = String.join("\n", rank0);
        assertTrue(rank0.getFirst().matches("allgather: 4 ranks, 4 KiB per rank, 5 iterations after 1 warm-up, host "
                + "backend, seed 0x[0-9a-f]{16}"), out);
        assertTrue(rank0.get(1).matches("\\| ranks \\| bytes per rank \\| iterations \\| mean µs \\| median µs \\| "
                + "algbw GB/s \\|"), out);
        assertTrue(rank0.get(2).matches("\\|(-+:\\|){6}"), out);
        assertTrue(rank0.get(3).matches("\\|\\s+4 \\|\\s+4096 \\|\\s+5 \\|\\s+\\d+\\.\\d \\|\\s+\\d+\\.\\d \\|"
                + "\\s+\\d+\\.\\d{3} \\|"), out);
        assertEquals("allgather: every byte of every slice checked on every rank in every iteration: OK", rank0.get(4),
                out);
        assertEquals(5, rank0.size(), out);
        // only rank 0 prints; the others print nothing on stdout
        assertTrue(lines.stream().noneMatch(l -> l.rank() != 0 && !l.stderr()), text(lines));
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList(), "every rank closed its shared memory");
        }
    }

    @Test
    void anUnknownBackendIsAUsageErrorSayingWhichExist() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            // the backend is opened before the bootstrap: no root is needed to fail
            code = Main.run(List.of(AllGatherSample.NAME, "--backend", "nope"), System.out, e,
                    Map.of("JMSCCLPP_RANK", "0", "JMSCCLPP_WORLD_SIZE", "1", "MSCCLPP_COMM_ID", "127.0.0.1:9"));
        }
        String message = err.toString(StandardCharsets.UTF_8);
        assertEquals(Main.USAGE, code, message);
        assertTrue(message.contains("no backend called nope (known: [") && message.contains("host"), message);
    }

    @Test
    void optionsParseAndBadOnesAreInvalidUsage() {
        assertEquals(new AllGatherSample.Options("host", 1 << 20, 20, 5, null), AllGatherSample.parse(List.of()));
        assertEquals(new AllGatherSample.Options("cuda", 64 << 10, 3, 0, 0x10L), AllGatherSample.parse(
                List.of("--backend", "cuda", "--bytes", "64K", "--iters", "3", "--warmup", "0", "--seed", "0x10")));
        for (List<String> bad : List.of(List.of("--bytes"), List.of("--bytes", "0"), List.of("--bytes", "lots"),
                List.of("--iters", "0"), List.of("--warmup", "-1"), List.of("--seed", "x"), List.of("--what", "1"))) {
            JmscclppException e = assertThrows(JmscclppException.class, () -> AllGatherSample.parse(bad), bad::toString);
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        }
    }

    @Test
    void slicesAreRandomPerOwnerAndReproduciblePerSeed() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(1001);
            MemorySegment b = arena.allocate(1001);
            AllGatherSample.fillSlice(a, 42, 0);
            AllGatherSample.fillSlice(b, 42, 0);
            assertEquals(-1, a.mismatch(b), "same seed and owner, same bytes");
            AllGatherSample.fillSlice(b, 42, 1);
            assertNotEquals(-1, a.mismatch(b), "another owner");
            AllGatherSample.fillSlice(b, 43, 0);
            assertNotEquals(-1, a.mismatch(b), "another seed");
        }
    }

    @Test
    void aWrongByteIsFoundAndNamedBySliceAndOffset() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment expected = arena.allocate(4 * 100);
            MemorySegment actual = arena.allocate(4 * 100);
            for (int r = 0; r < 4; r++) {
                AllGatherSample.fillSlice(expected.asSlice(r * 100L, 100), 7, r);
            }
            actual.copyFrom(expected);
            assertNull(AllGatherSample.firstMismatch(actual, expected, 100));
            byte old = actual.get(ValueLayout.JAVA_BYTE, 237);
            actual.set(ValueLayout.JAVA_BYTE, 237, (byte) ~old);
            assertEquals(String.format("slice of rank 2, byte 37: expected 0x%02x, found 0x%02x", old, (byte) ~old),
                    AllGatherSample.firstMismatch(actual, expected, 100));
        }
    }

    @Test
    void tableTakesTheSlowestRankPerIteration() {
        // slowest per iteration: 2000, 4000 ns -> mean 3 µs; 2 x 3000 B in 3000 ns = 2 GB/s
        List<AllGatherSample.Outcome> outcomes = List.of(new AllGatherSample.Outcome(new long[] {2000, 1000}, 0),
                new AllGatherSample.Outcome(new long[] {500, 4000}, 0));
        List<String> lines = AllGatherSample.table(2, 3000, 2, outcomes).lines().toList();
        assertEquals("|     2 |           3000 |          2 |     3.0 |       3.0 |      2.000 |", lines.get(2));
        AllGatherSample.Outcome o = new AllGatherSample.Outcome(new long[] {5, 6, 7}, 2);
        List<AllGatherSample.Outcome> back = AllGatherSample.Outcome.decodeAll(o.encode(), 1, 3);
        assertEquals(2, back.getFirst().failures());
        assertEquals(List.of(5L, 6L, 7L), Arrays.stream(back.getFirst().times()).boxed().toList());
    }

    private static String text(ConcurrentLinkedQueue<Launcher.OutputLine> lines) {
        StringBuilder sb = new StringBuilder();
        lines.forEach(l -> sb.append("[rank ").append(l.rank()).append("] ").append(l.text()).append('\n'));
        return sb.toString();
    }
}
