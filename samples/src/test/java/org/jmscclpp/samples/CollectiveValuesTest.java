package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The value functions: exact sums, the poison's promise, and the CUDA twins giving the same bits. */
class CollectiveValuesTest {

    /** Round to nearest even of a float's bits to bfloat16, for finite values. */
    private static int bf16(float v) {
        int bits = Float.floatToRawIntBits(v);
        return (bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16;
    }

    @Test
    void quartersMatchJavasConversions() {
        for (long q = -70_000; q <= 70_000; q++) {
            float v = q / 4.0f;   // exact: |q| < 2^24
            assertEquals(Float.floatToRawIntBits(v), CollectiveValues.quartersToBits(DataType.FLOAT32, q), "f32 " + q);
            int f16 = q == 0 ? 0 : Float.floatToFloat16(v) & 0xFFFF;
            assertEquals(f16, CollectiveValues.quartersToBits(DataType.FLOAT16, q), "f16 " + q);
            assertEquals(q == 0 ? 0 : bf16(v), CollectiveValues.quartersToBits(DataType.BFLOAT16, q), "bf16 " + q);
        }
    }

    @Test
    void allreduceSumsAreExactAndNeverThePoison() {
        SplittableRandom random = new SplittableRandom(7);
        for (DataType type : DataType.values()) {
            for (int n : new int[] {2, 3, 8, 64}) {
                for (int k = 0; k < 2000; k++) {
                    long seed = random.nextLong();
                    long index = random.nextLong(1L << 40);
                    int sum = CollectiveValues.reducedBits(type, seed, n, index);
                    assertNotEquals(CollectiveValues.poison(type), sum);
                    if (type == DataType.INT32) {
                        int expected = 0;
                        for (int p = 0; p < n; p++) {
                            expected += CollectiveValues.inputBits(CollectiveKind.ALLREDUCE, type, seed, p, index);
                        }
                        assertEquals(expected, sum);
                        continue;
                    }
                    double exact = 0;
                    for (int p = 0; p < n; p++) {
                        double v = toDouble(type, CollectiveValues.inputBits(CollectiveKind.ALLREDUCE, type, seed, p,
                                index));
                        assertTrue(v >= -2 && v < 2 && v * 4 == Math.rint(v * 4), "input " + v);
                        exact += v;
                    }
                    assertEquals(exact, toDouble(type, sum), type + " sum of " + n);
                }
            }
        }
    }

    @Test
    void movedDataIsNeverThePoisonAndVaries() {
        for (DataType type : DataType.values()) {
            java.util.Set<Integer> seen = new java.util.HashSet<>();
            for (long i = 0; i < 200_000; i++) {
                int bits = CollectiveValues.inputBits(CollectiveKind.ALLGATHER, type, 42, 1, i);
                assertNotEquals(CollectiveValues.poison(type), bits);
                seen.add(bits);
            }
            assertTrue(seen.size() > (type.bytes() == 2 ? 60_000 : 190_000), type + ": " + seen.size() + " values");
        }
        assertNotEquals(CollectiveValues.word(1, 0, 0), CollectiveValues.word(1, 1, 0));
        assertNotEquals(CollectiveValues.word(1, 0, 0), CollectiveValues.word(2, 0, 0));
    }

    static double toDouble(DataType type, int bits) {
        return switch (type) {
            case FLOAT32 -> Float.intBitsToFloat(bits);
            case FLOAT16 -> Float.float16ToFloat((short) bits);
            case BFLOAT16 -> Float.intBitsToFloat(bits << 16);
            case INT32 -> bits;
        };
    }

    /** nvcc compiles coll_data.cu's functions for the CPU; its values equal Java's, bit for bit. */
    @Test
    void cudaFunctionsGiveJavasValues(@TempDir Path dir) throws IOException, InterruptedException {
        Path nvcc = CudaTools.nvcc();
        CudaTools.copyResource(SampleKernels.RESOURCE_ROOT + "coll_data.cu", dir, "coll_data.cu");
        Path program = CudaTools.copyResource("org/jmscclpp/samples/coll_data_values.cu", dir, "values.cu");
        CudaTools.Result built = CudaTools.run(List.of(nvcc.toString(), "-std=c++17", "-arch=sm_90", "-o",
                dir.resolve("values").toString(), program.toString()), dir, null);
        assertTrue(built.ok(), () -> "nvcc failed (exit " + built.exitCode() + "):\n" + built.output());

        SplittableRandom random = new SplittableRandom(20240601);
        List<String> cases = new ArrayList<>();
        List<String> expected = new ArrayList<>();
        for (CollectiveKind kind : CollectiveKind.values()) {
            for (DataType type : DataType.values()) {
                for (int k = 0; k < 250; k++) {
                    long seed = k < 3 ? k - 1 : random.nextLong();
                    int n = 1 + random.nextInt(k % 5 == 0 ? 64 : 8);
                    int rank = random.nextInt(n);
                    long count = 1 + random.nextLong(k % 7 == 0 ? 1L << 33 : 1000);
                    long index = random.nextLong(CollectiveValues.outputElements(kind, n, count));
                    cases.add(String.format(Locale.ROOT, "%d %d %s %d %d %d %d", CollectiveValues.kindCode(kind),
                            type.code(), Long.toUnsignedString(seed), n, rank, count, index));
                    expected.add(String.format(Locale.ROOT, "v %016x %08x %08x", CollectiveValues.word(seed, rank, index),
                            CollectiveValues.inputBits(kind, type, seed, rank, index),
                            CollectiveValues.expectedBits(kind, type, seed, n, rank, count, index)));
                }
            }
        }
        Path input = dir.resolve("cases.txt");
        Files.write(input, cases, StandardCharsets.UTF_8);
        CudaTools.Result ran = CudaTools.run(List.of(dir.resolve("values").toString()), dir, input);
        assertEquals(0, ran.exitCode(), ran.output());
        List<String> lines = ran.output().lines().toList();
        int at = 0;
        for (DataType type : List.of(DataType.FLOAT16, DataType.FLOAT32, DataType.BFLOAT16)) {
            for (long q = -70_000; q <= 70_000; q++) {
                assertEquals(String.format(Locale.ROOT, "q %d %d %08x", type.code(), q,
                        CollectiveValues.quartersToBits(type, q)), lines.get(at++));
            }
        }
        assertEquals(expected, lines.subList(at, lines.size()), "the CUDA values for " + cases.size() + " cases");
    }
}
