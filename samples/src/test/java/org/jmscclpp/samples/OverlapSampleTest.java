package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class OverlapSampleTest {

    private static final Duration DEADLINE = Duration.ofSeconds(120);

    @TempDir
    Path shm;

    /** Real rank processes on the host backend: a ring of 2 (next = previous) and of 3. */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3})
    @Timeout(180)
    void ranksOverlapTilesOnTheHostBackendAndEveryElementIsChecked(int ranks) throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(ranks)
                .sample(OverlapSample.NAME, List.of("--backend", "host", "--tiles", "4", "--tile-bytes", "16K",
                        "--passes", "8", "--iters", "2"))
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString())).output(lines::add).start()) {
            assertTrue(job.waitFor(DEADLINE), "ranks still running after " + DEADLINE);
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + text(lines));
        }
        List<String> rank0 = lines.stream().filter(l -> l.rank() == 0 && !l.stderr()).map(Launcher.OutputLine::text)
                .toList();
        String out = String.join("\n", rank0);
        assertEquals(4, rank0.size(), out);
        assertEquals("overlap: " + ranks + " ranks, 4 tiles of 16 KiB, 8 FMA passes, 2 iterations, host backend",
                rank0.get(0), out);
        assertTrue(rank0.get(1).matches("overlap: compute-only \\d+\\.\\d µs, comm-only \\d+\\.\\d µs, overlapped "
                + "\\d+\\.\\d µs"), out);
        assertTrue(rank0.get(2).matches("overlap: overlapped / max\\(compute, comm\\) = \\d+\\.\\d{3} \\(target <= "
                + "1\\.10\\)"), out);
        assertEquals("overlap: every element of every tile checked on every rank in every run: OK", rank0.get(3), out);
        assertTrue(lines.stream().noneMatch(l -> l.rank() != 0 && !l.stderr()), text(lines));
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList(), "every rank closed its shared memory");
        }
    }

    @Test
    void optionsParseAndBadOnesAreInvalidUsage() {
        assertEquals(new OverlapSample.Options("host", 8, 1 << 20, 64, 5), OverlapSample.parse(List.of()));
        assertEquals(new OverlapSample.Options("cuda", 16, 4 << 20, 1000, 3), OverlapSample.parse(List.of("--backend",
                "cuda", "--tiles", "16", "--tile-bytes", "4M", "--passes", "1000", "--iters", "3")));
        for (List<String> bad : List.of(List.of("--tiles"), List.of("--tiles", "0"), List.of("--tiles", "2000"),
                List.of("--tile-bytes", "6"), List.of("--tile-bytes", "0"), List.of("--tile-bytes", "lots"),
                List.of("--tiles", "1024", "--tile-bytes", "2M"), List.of("--passes", "-1"), List.of("--iters", "0"),
                List.of("--what", "1"))) {
            JmscclppException e = assertThrows(JmscclppException.class, () -> OverlapSample.parse(bad), bad::toString);
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        }
    }

    @Test
    void theCheckFindsEveryWrongElementAndOnlyThose() {
        int tiles = 3;
        long elements = 2000;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment tilesOfRank1 = arena.allocate(tiles * elements * Float.BYTES, 16);
            for (int k = 0; k < tiles; k++) {
                OverlapSample.computeTile(tilesOfRank1, 1, k, elements, 5);
            }
            assertEquals(0, OverlapSample.countWrong(tilesOfRank1, 1, tiles, elements, 5));
            long fixedPoints = 0;
            for (int k = 0; k < tiles; k++) {
                for (long i = 0; i < elements; i++) {
                    fixedPoints += OverlapSample.startValue(1, k, i) == 1f ? 1 : 0;
                }
            }
            assertEquals(tiles * elements - fixedPoints, OverlapSample.countWrong(tilesOfRank1, 1, tiles, elements, 6),
                    "one more pass changes every element but those starting at 1, the fixed point");
            assertNotEquals(0, OverlapSample.countWrong(tilesOfRank1, 2, tiles, elements, 5), "another sender");
            tilesOfRank1.setAtIndex(ValueLayout.JAVA_FLOAT, elements + 7, Float.NaN);
            tilesOfRank1.setAtIndex(ValueLayout.JAVA_FLOAT, 2 * elements, 0f);
            assertEquals(2, OverlapSample.countWrong(tilesOfRank1, 1, tiles, elements, 5));
        }
    }

    @Test
    void computeIsRealArithmeticThatStaysInRange() {
        // fma(x, 0.75, 0.25) contracts towards 1 from [1, 2): every value stays a normal float
        float x = OverlapSample.startValue(3, 2, 1000);
        assertTrue(x >= 1f && x < 2f, "start " + x);
        assertEquals(Math.fma(Math.fma(x, 0.75f, 0.25f), 0.75f, 0.25f), OverlapSample.compute(x, 2));
        float many = OverlapSample.compute(x, 10_000);
        assertTrue(many >= 1f && many < 2f && Float.isFinite(many), "after 10000 passes " + many);
    }

    private static String text(ConcurrentLinkedQueue<Launcher.OutputLine> lines) {
        StringBuilder sb = new StringBuilder();
        lines.forEach(l -> sb.append("[rank ").append(l.rank()).append("] ").append(l.text()).append('\n'));
        return sb.toString();
    }
}
