package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.SplittableRandom;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.Reductions;
import org.jmscclpp.cuda.kernel.DeviceCodeChecks;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The value functions: every reduction exact in any order (so any correct implementation, NCCL's
 * included, gives the bits the rank-order fold gives), no result and no moved input ever the
 * poison, the bulk expected values equal to the scalar ones, and the CUDA twins giving the same
 * bits as Java.
 */
class CollectiveValuesTest {

    private static final int[] RANK_COUNTS = {1, 2, 3, 4, 5, 8, 64};

    private static long[] column(CollectiveKind kind, DataType type, ReduceOp op, int n, long seed, long index) {
        long[] in = new long[n];
        for (int q = 0; q < n; q++) {
            in[q] = CollectiveValues.inputBits(kind, type, op, n, seed, q, index);
        }
        return in;
    }

    private static boolean isNan(DataType type, long bits) {
        return switch (type) {
            case FLOAT32 -> Float.isNaN(Float.intBitsToFloat((int) bits));
            case FLOAT64 -> Double.isNaN(Double.longBitsToDouble(bits));
            case FLOAT16 -> (bits & 0x7FFF) > 0x7C00;
            case BFLOAT16 -> (bits & 0x7FFF) > 0x7F80;
            case FP8_E4M3 -> (bits & 0x7F) == 0x7F;
            case FP8_E5M2 -> (bits & 0x7F) > 0x7C;
            default -> false;
        };
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void everyReductionIsTheSameInAnyOrderAndNeverThePoison(DataType type) {
        SplittableRandom random = new SplittableRandom(7 + type.code());
        for (ReduceOp op : ReduceOp.values()) {
            for (int n : RANK_COUNTS) {
                for (int k = 0; k < 300; k++) {
                    long seed = random.nextLong();
                    long index = random.nextLong(1L << 40);
                    long[] in = column(CollectiveKind.ALL_REDUCE, type, op, n, seed, index);
                    long result = Reductions.reduceBits(type, op, in);
                    String what = type + " " + op + " of " + n + " at " + index + ": " + java.util.Arrays.toString(in);
                    assertNotEquals(CollectiveValues.poison(type), result, what);
                    assertTrue(!isNan(type, result), what);
                    for (long input : in) {
                        assertTrue(!isNan(type, input), what);
                    }
                    // NCCL premultiplies an average by 1/n: the same only where n is a power of two
                    if (op == ReduceOp.AVG && type.isFloatingPoint() && Integer.bitCount(n) != 1) {
                        continue;
                    }
                    long[] shuffled = in.clone();
                    for (int i = shuffled.length - 1; i > 0; i--) {
                        int j = random.nextInt(i + 1);
                        long t = shuffled[i];
                        shuffled[i] = shuffled[j];
                        shuffled[j] = t;
                    }
                    assertEquals(result, Reductions.reduceBits(type, op, shuffled), "in another order: " + what);
                }
            }
        }
    }

    @Test
    void integerResultsKeepAwayFromThePoison() {
        SplittableRandom random = new SplittableRandom(11);
        for (DataType type : List.of(DataType.INT8, DataType.UINT8, DataType.INT32, DataType.UINT64)) {
            for (int n : RANK_COUNTS) {
                long seed = random.nextLong();
                long index = random.nextLong(1L << 30);
                assertEquals(0, Reductions.reduceBits(type, ReduceOp.SUM,
                        column(CollectiveKind.ALL_REDUCE, type, ReduceOp.SUM, n, seed, index)) & 1, "even sums");
                assertEquals(1, Reductions.reduceBits(type, ReduceOp.PROD,
                        column(CollectiveKind.ALL_REDUCE, type, ReduceOp.PROD, n, seed, index)) & 3, "products 1 mod 4");
                long avg = Reductions.reduceBits(type, ReduceOp.AVG,
                        column(CollectiveKind.ALL_REDUCE, type, ReduceOp.AVG, n, seed, index));
                assertEquals(0, avg >>> (type.bytes() * 8 - 1), "an average below 2^(w-1): " + avg);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void movedDataIsNeverThePoisonAndVaries(DataType type) {
        Set<Long> seen = new HashSet<>();
        for (long i = 0; i < 20_000; i++) {
            long bits = CollectiveValues.inputBits(CollectiveKind.ALL_GATHER, type, null, 4, 42, 1, i);
            assertNotEquals(CollectiveValues.poison(type), bits);
            assertEquals(0, bits & ~CollectiveValues.mask(type), "within the type's width");
            seen.add(bits);
        }
        assertTrue(seen.size() > Math.min(250, 15_000), type + ": " + seen.size() + " values");
        assertNotEquals(CollectiveValues.word(1, 0, 0), CollectiveValues.word(1, 1, 0));
        assertNotEquals(CollectiveValues.word(1, 0, 0), CollectiveValues.word(2, 0, 0));
    }

    @Test
    void floatingSumsUseManyValues() {
        Set<Long> seen = new HashSet<>();
        for (long i = 0; i < 5000; i++) {
            seen.add(CollectiveValues.inputBits(CollectiveKind.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, 4, 9, 2, i));
        }
        assertTrue(seen.size() > 4900, seen.size() + " values");
    }

    @Test
    void theBulkExpectedValuesAreTheScalarOnes() {
        SplittableRandom random = new SplittableRandom(5);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(64 * 8);
            MemorySegment rows = arena.allocate(5L * 64 * 8);
            for (CollectiveKind kind : CollectiveSample.KINDS) {
                for (DataType type : DataType.values()) {
                    for (ReduceOp op : kind.reduces() ? ReduceOp.values() : new ReduceOp[] {null}) {
                        int n = 1 + random.nextInt(5);
                        CollectiveRun run = new CollectiveRun(kind, type, op, kind.rooted() ? n - 1 : -1, n, 37, false);
                        int rank = random.nextInt(n);
                        long seed = random.nextLong();
                        long first = random.nextLong(run.recvElements() - 20);
                        CollectiveValues.writeExpected(run, seed, rank, first, 20, dst, rows);
                        for (int i = 0; i < 20; i++) {
                            assertEquals(CollectiveValues.expectedBits(run, seed, rank, first + i),
                                    CollectiveValues.get(dst, type.bytes(), i), run.describe() + " element " + i);
                        }
                    }
                }
            }
        }
    }

    /** nvcc compiles coll_data.cu's functions for the CPU; its values equal Java's, bit for bit. */
    @Test
    void cudaFunctionsGiveJavasValues(@TempDir Path dir) throws IOException, InterruptedException {
        Path nvcc = CudaTools.nvcc();
        Path include = DeviceCodeChecks.copyDeviceHeaders(dir.resolve("include"));
        CudaTools.copyResource(SampleKernels.RESOURCE_ROOT + "coll_data.cu", dir, "coll_data.cu");
        Path program = CudaTools.copyResource("org/jmscclpp/samples/coll_data_values.cu", dir, "values.cu");
        CudaTools.Result built = CudaTools.run(List.of(nvcc.toString(), "-std=c++17", "-arch=sm_90", "-I" + include,
                "-o", dir.resolve("values").toString(), program.toString()), dir, null);
        assertTrue(built.ok(), () -> "nvcc failed (exit " + built.exitCode() + "):\n" + built.output());

        SplittableRandom random = new SplittableRandom(20240601);
        List<String> cases = new ArrayList<>();
        List<String> expected = new ArrayList<>();
        for (CollectiveKind kind : CollectiveSample.KINDS) {
            for (DataType type : DataType.values()) {
                for (ReduceOp op : kind.reduces() ? ReduceOp.values() : new ReduceOp[] {null}) {
                    for (int k = 0; k < 40; k++) {
                        long seed = k < 3 ? k - 1 : random.nextLong();
                        int n = k % 7 == 0 ? RANK_COUNTS[random.nextInt(RANK_COUNTS.length)] : 1 + random.nextInt(8);
                        int rank = random.nextInt(n);
                        int root = kind.rooted() ? random.nextInt(n) : -1;
                        long count = 1 + random.nextLong(k % 5 == 0 ? 1L << 33 : 1000);
                        CollectiveRun run = new CollectiveRun(kind, type, op, root, n, count, false);
                        long index = random.nextLong(run.recvElements());
                        cases.add(String.format(Locale.ROOT, "%d %d %d %d %d %d %d %s %d", kind.code(), type.code(),
                                op == null ? -1 : op.code(), n, rank, root, count, Long.toUnsignedString(seed), index));
                        expected.add(String.format(Locale.ROOT, "v %016x %016x",
                                CollectiveValues.inputBits(kind, type, op, n, seed, rank, index),
                                CollectiveValues.expectedBits(run, seed, rank, index)));
                    }
                }
            }
        }
        Path input = dir.resolve("cases.txt");
        Files.write(input, cases, StandardCharsets.UTF_8);
        CudaTools.Result ran = CudaTools.run(List.of(dir.resolve("values").toString()), dir, input);
        assertEquals(0, ran.exitCode(), ran.output());
        List<String> lines = ran.output().lines().toList();
        for (int i = 0; i < expected.size(); i++) {
            int at = i;
            assertEquals(expected.get(i), lines.get(i), () -> "case " + cases.get(at));
        }
        assertEquals(expected.size(), lines.size(), "one line per case");
    }
}
