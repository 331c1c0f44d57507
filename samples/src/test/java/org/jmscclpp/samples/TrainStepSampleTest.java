package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.Reductions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The CPU variant of {@code train-step} in real rank processes, and the values its check relies on. */
class TrainStepSampleTest {

    private static final Duration DEADLINE = Duration.ofSeconds(150);
    private static final String MICROS = "\\d+\\.\\d";

    @TempDir
    Path shm;

    /** 2 ranks (AVG exact by powers of two) and 3 (AVG rounds: the Java twins must round alike). */
    @ParameterizedTest(name = "{0} ranks, {1}")
    @CsvSource({"2, avg", "3, avg", "3, sum"})
    @Timeout(200)
    void ranksTrainOnTheHostBackendAndEveryWeightIsExact(int ranks, String op) throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(ranks).sample(TrainStepSample.NAME, List.of("--backend", "host",
                        "--buckets", "5", "--bucket-floats", "12000", "--passes", "3", "--steps", "3", "--op", op))
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString())).output(lines::add).start()) {
            assertTrue(job.waitFor(DEADLINE), "ranks still running after " + DEADLINE);
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + text(lines));
        }
        String all = text(lines);
        List<String> out = lines.stream().filter(l -> l.rank() == 0 && !l.stderr()).map(Launcher.OutputLine::text)
                .toList();
        assertEquals(List.of(
                "train-step: " + ranks + " ranks, 5 buckets of 12000 floats (240000 B of gradients), 3 FMA passes, "
                        + "3 steps, " + op + ", host backend",
                "mode                 step µs"), out.subList(0, 2), all);
        assertTrue(out.get(2).matches("compute-only +" + MICROS), all);
        assertTrue(out.get(3).matches("comm-only +" + MICROS), all);
        assertTrue(out.get(4).matches("overlapped +" + MICROS), all);
        assertTrue(out.get(5).matches("train-step: overlapped / \\(compute \\+ comm\\) = \\d+\\.\\d{3}, overlapped / "
                + "max\\(compute, comm\\) = \\d+\\.\\d{3} \\(slowest rank, mean of 3 steps\\)"), all);
        assertEquals("train-step: after 3 steps every weight on every rank equals its exact value (" + ranks * 60000
                + " weights checked): OK", out.get(6), all);
        assertEquals(7, out.size(), all);
        assertTrue(lines.stream().noneMatch(l -> l.rank() != 0 && !l.stderr()), all);
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList(), "every rank closed its shared memory");
        }
    }

    /** The reduced gradient the check expects is the library's reference reduction of every rank's gradient, bit for bit. */
    @Test
    void reducedGradientsAreTheReferenceReductionOfEveryRanksGradient() {
        SplittableRandom random = new SplittableRandom(3);
        for (int k = 0; k < 20_000; k++) {
            int n = 1 + random.nextInt(k % 100 == 0 ? TrainStepValues.MAX_RANKS : 16);
            int step = random.nextInt(10_000);
            int bucket = random.nextInt(TrainStepSample.MAX_BUCKETS);
            long i = random.nextLong(TrainStepSample.MAX_FLOATS);
            long[] bits = new long[n];
            for (int r = 0; r < n; r++) {
                float g = TrainStepValues.gradient(r, step, bucket, i);
                assertTrue(g >= 1 && g <= 256 + r && g == Math.rint(g), "a small integer: " + g);
                bits[r] = Integer.toUnsignedLong(Float.floatToRawIntBits(g));
            }
            for (ReduceOp op : List.of(ReduceOp.SUM, ReduceOp.AVG)) {
                assertEquals(Reductions.reduceBits(DataType.FLOAT32, op, bits),
                        Integer.toUnsignedLong(Float.floatToRawIntBits(TrainStepValues.reducedGradient(n, op, step,
                                bucket, i))), () -> op + " of " + n + " ranks");
            }
        }
    }

    @Test
    void thePassesKeepTheGradientAndTheGradientsVaryAlongTheBucket() {
        for (long i = 0; i < 2000; i++) {
            float g = TrainStepValues.gradient(3, 7, 2, i);
            for (int passes : new int[] {0, 1, 2, 64, 1000}) {
                assertEquals(Float.floatToRawIntBits(g), Float.floatToRawIntBits(TrainStepValues.gradient(3, 7, 2, i,
                        passes)), "3x - 2x = x, exactly, " + passes + " passes");
            }
        }
        long changes = java.util.stream.LongStream.range(1, 10_000).filter(i -> TrainStepValues.gradient(0, 0, 0, i)
                != TrainStepValues.gradient(0, 0, 0, i - 1)).count();
        assertTrue(changes > 9_900, "neighbours differ, so misplaced data shows: " + changes);
        assertTrue(TrainStepValues.gradient(0, 1, 0, 5) != TrainStepValues.gradient(0, 2, 0, 5)
                || TrainStepValues.gradient(0, 1, 0, 6) != TrainStepValues.gradient(0, 2, 0, 6), "steps differ");
    }

    /** The closed form equals n simulated ranks, each reducing with the library's reference and updating with an fma. */
    @Test
    void expectedWeightsAreWhatRanksReducingAndUpdatingGet() {
        SplittableRandom random = new SplittableRandom(5);
        for (int k = 0; k < 2000; k++) {
            int n = 1 + random.nextInt(9);
            ReduceOp op = k % 2 == 0 ? ReduceOp.AVG : ReduceOp.SUM;
            int steps = 1 + random.nextInt(6);
            int bucket = random.nextInt(64);
            long i = random.nextLong(1L << 24);
            float w = TrainStepValues.initialWeight(bucket, i);
            for (int s = 0; s < steps; s++) {
                long[] bits = new long[n];
                for (int r = 0; r < n; r++) {
                    bits[r] = Integer.toUnsignedLong(Float.floatToRawIntBits(TrainStepValues.gradient(r, s, bucket, i,
                            2)));
                }
                float g = Float.intBitsToFloat((int) Reductions.reduceBits(DataType.FLOAT32, op, bits));
                w = Math.fma(-TrainStepValues.LR, g, w);
            }
            assertEquals(Float.floatToRawIntBits(w), Float.floatToRawIntBits(TrainStepValues.expectedWeight(n, op,
                    steps, bucket, i)));
        }
    }

    @Test
    void theCheckFindsEveryWrongWeightAndNamesTheFirst() {
        int buckets = 3;
        long floats = 1000;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment w = arena.allocate(buckets * floats * Float.BYTES, 16);
            for (int b = 0; b < buckets; b++) {
                for (long i = 0; i < floats; i++) {
                    w.setAtIndex(TrainStepValues.FLOAT, b * floats + i, TrainStepValues.expectedWeight(3, ReduceOp.AVG,
                            4, b, i));
                }
            }
            TrainStepValues.Mismatch none = TrainStepValues.compare(w, buckets, floats, 3, ReduceOp.AVG, 4);
            assertEquals(0, none.count());
            assertNull(none.first());
            assertTrue(TrainStepValues.compare(w, buckets, floats, 3, ReduceOp.AVG, 3).count() > 2900,
                    "one step less changes almost every weight");
            assertTrue(TrainStepValues.compare(w, buckets, floats, 3, ReduceOp.SUM, 4).count() > 2900,
                    "sum instead of avg too");
            float right = w.getAtIndex(TrainStepValues.FLOAT, floats + 17);
            float next = Math.nextUp(right);
            w.setAtIndex(TrainStepValues.FLOAT, floats + 17, next);
            w.setAtIndex(TrainStepValues.FLOAT, 2 * floats + 999, -0.0f);
            TrainStepValues.Mismatch two = TrainStepValues.compare(w, buckets, floats, 3, ReduceOp.AVG, 4);
            assertEquals(2, two.count(), "one ulp is wrong too");
            assertEquals(String.format("bucket 1 element 17 is %s (0x%08x), expected %s (0x%08x)", next,
                    Float.floatToRawIntBits(next), right, Float.floatToRawIntBits(right)), two.first());
        }
    }

    @Test
    void optionsParseAndBadOnesAreInvalidUsage() {
        assertEquals(new TrainStepSample.Options("cuda", 8, 1 << 20, 256, 5, ReduceOp.AVG),
                TrainStepSample.parse(List.of()));
        assertEquals(new TrainStepSample.Options("host", 8, 64 << 10, 16, 5, ReduceOp.AVG),
                TrainStepSample.parse(List.of("--backend", "host")), "smaller defaults for one Java thread");
        assertEquals(new TrainStepSample.Options("host", 8, 1 << 20, 100, 5, ReduceOp.AVG),
                TrainStepSample.parse(List.of("--bucket-floats", "1M", "--passes", "100", "--backend", "host")));
        assertEquals(new TrainStepSample.Options("host", 16, 256 << 10, 0, 2, ReduceOp.SUM),
                TrainStepSample.parse(List.of("--backend", "host", "--buckets", "16", "--bucket-floats", "256K",
                        "--passes", "0", "--steps", "2", "--op", "sum")));
        for (List<String> bad : List.of(List.of("--buckets"), List.of("--buckets", "0"), List.of("--buckets", "5000"),
                List.of("--bucket-floats", "0"), List.of("--bucket-floats", "2G"), List.of("--bucket-floats", "x"),
                List.of("--buckets", "8", "--bucket-floats", "256M"), List.of("--passes", "-1"),
                List.of("--steps", "0"), List.of("--op", "max"), List.of("--backend", "rocm"),
                List.of("--what", "1"))) {
            JmscclppException e = assertThrows(JmscclppException.class, () -> TrainStepSample.parse(bad),
                    bad::toString);
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("train-step: "), e.getMessage());
        }
    }

    private static String text(ConcurrentLinkedQueue<Launcher.OutputLine> lines) {
        return lines.stream().map(l -> "[rank " + l.rank() + (l.stderr() ? " err" : "") + "] " + l.text())
                .collect(Collectors.joining("\n"));
    }
}
