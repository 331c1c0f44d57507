package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.Reductions;
import org.jmscclpp.testkit.ReductionSamples;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code jmscclpp/reduce.cuh} against {@link Reductions}, without a GPU. The header, compiled as
 * host code by nvcc into the driver {@value #DRIVER}, reduces random element bits (special values
 * among them) of every type and op for 1, 2, 3 and 5 ranks, four ways ({@code Reducer} element by
 * element, {@code Vec4Reducer}, {@code Vec8Reducer}, {@code Vec16Reducer}), and converts every
 * code of the narrow floating types and fp32 values at every rounding midpoint; each result is
 * compared bit for bit with {@link Reductions#reduceBits} and {@link Reductions#reduce}, or with
 * the scalar conversions. On the device the header runs the same code but for the conversions
 * to fp16 and from fp16, and on sm_89 and up to fp8 (PTX {@code cvt}), which
 * {@link ReduceConversionsGpuTest} checks on a GPU the same way; {@value #KERNELS}, which instantiates every reducer, is compiled for sm_90 with
 * nvcc and, where NVRTC loads, with NVRTC. Skipped, with the reason, where nvcc (or NVRTC) is
 * absent.
 */
class ReduceHeaderCrossCheckTest {

    static final String DRIVER = "org/jmscclpp/cuda/kernel/reduce/reduce_driver.cu";
    static final String KERNELS = "org/jmscclpp/cuda/kernel/reduce/reduce_kernels.cu";

    private static final int[] RANK_COUNTS = {1, 2, 3, 5};
    /** Elements per reduction: a multiple of 16, so that every type fills whole uint4s. */
    private static final int COUNT = 1024;
    private static final DataType[] NARROW_FLOATS = {DataType.FLOAT16, DataType.BFLOAT16, DataType.FP8_E4M3,
            DataType.FP8_E5M2};

    @TempDir
    static Path dir;
    private static Path driver;

    @BeforeAll
    static void compileTheDriver() throws IOException, InterruptedException {
        Path nvcc = Nvcc.require();
        Path include = DeviceHeaders.copyTo(dir.resolve("include"));
        Path source = TestKernels.copy(DRIVER, dir);
        driver = dir.resolve("reduce_driver");
        Nvcc.Result result = Nvcc.run(List.of(nvcc.toString(), "-arch=sm_90", "-std=c++17", "-I" + include, "-o",
                driver.toString(), source.toString()), dir);
        assertTrue(result.ok(), () -> "nvcc failed on " + DRIVER + " (exit " + result.exitCode() + "):\n"
                + result.output());
        assertFalse(result.output().contains("warning"), () -> "nvcc warned on " + DRIVER + ":\n" + result.output());
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(DataType.class)
    void everyReducerMatchesReductionsBitForBit(DataType type) throws IOException, InterruptedException {
        Random random = new Random(7919L * type.code() + 1);
        Records records = new Records();
        List<ReduceOp> ops = new ArrayList<>();
        List<long[][]> inputs = new ArrayList<>();
        for (ReduceOp op : ReduceOp.values()) {
            for (int n : RANK_COUNTS) {
                long[][] ranks = new long[n][COUNT];
                for (long[] rank : ranks) {
                    for (int i = 0; i < COUNT; i++) {
                        rank[i] = ReductionSamples.randomBits(type, random);
                    }
                }
                records.reduce(type, op, ranks);
                ops.add(op);
                inputs.add(ranks);
            }
        }
        ByteBuffer out = run(records);
        List<String> forms = new ArrayList<>(List.of("Reducer"));
        if (type.bytes() <= 4) {
            forms.add("Vec4Reducer");
        }
        forms.addAll(List.of("Vec8Reducer", "Vec16Reducer"));
        for (int c = 0; c < inputs.size(); c++) {
            long[][] ranks = inputs.get(c);
            ReduceOp op = ops.get(c);
            int n = ranks.length;
            long[] expected = new long[COUNT];
            for (int i = 0; i < COUNT; i++) {
                long[] column = new long[n];
                for (int r = 0; r < n; r++) {
                    column[r] = ranks[r][i];
                }
                expected[i] = Reductions.reduceBits(type, op, column);
            }
            MemorySegment fast = MemorySegment.ofArray(new long[COUNT]);
            MemorySegment[] sources = new MemorySegment[n];
            for (int r = 0; r < n; r++) {
                sources[r] = MemorySegment.ofArray(new long[COUNT]);
                for (int i = 0; i < COUNT; i++) {
                    put(type, sources[r], i, ranks[r][i]);
                }
            }
            Reductions.reduce(type, op, sources, new long[n], fast, 0, COUNT);
            for (String form : forms) {
                for (int i = 0; i < COUNT; i++) {
                    long actual = element(type, out);
                    if (actual != expected[i] || actual != get(type, fast, i)) {
                        StringBuilder in = new StringBuilder();
                        for (int r = 0; r < n; r++) {
                            in.append(r == 0 ? "" : ", ").append("0x").append(Long.toHexString(ranks[r][i]));
                        }
                        throw new AssertionError(type + " " + op + " of " + n + " ranks, element " + i + " by " + form
                                + ": inputs [" + in + "], header 0x" + Long.toHexString(actual) + ", reduceBits 0x"
                                + Long.toHexString(expected[i]) + ", reduce 0x" + Long.toHexString(get(type, fast, i)));
                    }
                }
            }
        }
        assertFalse(out.hasRemaining(), () -> out.remaining() + " bytes of output beyond the results");
    }

    @Test
    void conversionsMatchReductions() throws IOException, InterruptedException {
        Records records = new Records();
        List<int[]> encoded = new ArrayList<>();
        for (DataType type : NARROW_FLOATS) {
            int[] values = encodeVectors(type);
            int[] codes = new int[1 << type.bytes() * 8];
            for (int c = 0; c < codes.length; c++) {
                codes[c] = c;
            }
            records.convert(2, type, values);
            records.convert(3, type, codes);
            encoded.add(values);
            encoded.add(codes);
        }
        ByteBuffer out = run(records);
        int checked = 0;
        for (int t = 0; t < NARROW_FLOATS.length; t++) {
            DataType type = NARROW_FLOATS[t];
            for (int v : encoded.get(2 * t)) {
                int actual = out.getInt();
                int expected = encode(type, v);
                if (actual != expected) {
                    throw new AssertionError(type + " of fp32 0x" + Integer.toHexString(v) + " (" + Float.intBitsToFloat(v)
                            + "): header 0x" + Integer.toHexString(actual) + ", Reductions 0x"
                            + Integer.toHexString(expected));
                }
                checked++;
            }
            for (int c : encoded.get(2 * t + 1)) {
                int actual = out.getInt();
                int expected = Float.floatToRawIntBits(decode(type, c));
                if (actual != expected) {
                    throw new AssertionError(type + " code 0x" + Integer.toHexString(c) + ": header fp32 0x"
                            + Integer.toHexString(actual) + ", Reductions 0x" + Integer.toHexString(expected));
                }
                checked++;
            }
        }
        assertFalse(out.hasRemaining(), () -> out.remaining() + " bytes of output beyond the results");
        System.out.println("reduce.cuh conversions: " + checked + " values agree with Reductions");
    }

    @Test
    void compilesForTheGpu(@TempDir Path work) throws IOException, InterruptedException {
        String output = DeviceCodeChecks.assertNvccCompiles("reduce_kernels.cu", TestKernels.source(KERNELS), work);
        assertFalse(output.contains("warning"), () -> "nvcc warned on " + KERNELS + ":\n" + output);
    }

    @Test
    void compilesWithNvrtc(@TempDir Path cache) {
        DeviceCodeChecks.requireNvrtc();
        CompiledKernel kernel = KernelCompiler.create(cache).compile("reduce_kernels.cu", TestKernels.source(KERNELS),
                "sm_90", KernelCompiler.deviceHeaders());
        assertTrue(kernel.size() > 0, "a cubin of " + kernel.size() + " bytes");
        assertEquals("", kernel.log(), "no warnings");
    }

    /**
     * fp32 bit patterns to encode into {@code type}: the type's every finite value and the
     * midpoints between neighbours (and to the overflow), each exactly and one fp32 ulp either
     * side, of both signs; NaNs with payloads, infinities, zeros, fp32 subnormals and extremes;
     * and random patterns.
     */
    static int[] encodeVectors(DataType type) {
        List<Integer> v = new ArrayList<>();
        int positives = 1 << (type.bytes() * 8 - 1);
        for (int c = 0; c < positives; c++) {
            float low = decode(type, c);
            if (!Float.isFinite(low)) {
                continue;
            }
            float next = c + 1 < positives ? decode(type, c + 1) : Float.NaN;
            // past the largest finite value: the value the next code would have if the format went on
            double high = Float.isFinite(next) ? next : switch (type) {
                case FLOAT16, FP8_E5M2 -> 65536;
                case BFLOAT16 -> Math.scalb(1.0, 128);
                default -> 480;
            };
            float mid = (float) ((low + high) / 2);
            for (float x : new float[] {low, mid, Math.nextDown(mid), Math.nextUp(mid)}) {
                v.add(Float.floatToRawIntBits(x));
                v.add(Float.floatToRawIntBits(-x));
            }
        }
        for (int special : new int[] {0, 0x8000_0000, 0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0xFFC0_0000,
                0x7F80_0001, 0xFF81_2345, 0x7FFF_FFFF, 0x7FAA_AAAA, 0xFFD5_5555, 1, 0x8000_0001, 0x007F_FFFF,
                0x0080_0000, 0x7F7F_FFFF, 0xFF7F_FFFF, 0x477F_F000, 0x477F_EFFF, 0x43E0_0000, 0x43E8_0000,
                0x4760_0000, 0x4770_0000}) {
            v.add(special);
        }
        Random random = new Random(type.code());
        for (int i = 0; i < 20_000; i++) {
            v.add(random.nextInt());
            v.add(Float.floatToRawIntBits((random.nextBoolean() ? -1 : 1)
                    * Math.scalb(1 + random.nextFloat(), random.nextInt(60) - 30)));
        }
        return v.stream().mapToInt(Integer::intValue).toArray();
    }

    static float decode(DataType type, int code) {
        return switch (type) {
            case FLOAT16 -> Reductions.fp16ToFloat((short) code);
            case BFLOAT16 -> Reductions.bf16ToFloat((short) code);
            case FP8_E4M3 -> Reductions.fp8E4m3ToFloat((byte) code);
            case FP8_E5M2 -> Reductions.fp8E5m2ToFloat((byte) code);
            default -> throw new IllegalArgumentException(type.toString());
        };
    }

    static int encode(DataType type, int f32) {
        float v = Float.intBitsToFloat(f32);
        return switch (type) {
            case FLOAT16 -> Reductions.floatToFp16(v) & 0xFFFF;
            case BFLOAT16 -> Reductions.floatToBf16(v) & 0xFFFF;
            case FP8_E4M3 -> Reductions.floatToFp8E4m3(v) & 0xFF;
            case FP8_E5M2 -> Reductions.floatToFp8E5m2(v) & 0xFF;
            default -> throw new IllegalArgumentException(type.toString());
        };
    }

    private static ByteBuffer run(Records records) throws IOException, InterruptedException {
        Path input = Files.createTempFile(dir, "records", ".bin");
        Path output = Files.createTempFile(dir, "results", ".bin");
        Files.write(input, records.bytes());
        Nvcc.Result result = Nvcc.run(List.of(driver.toString(), input.toString(), output.toString()), dir);
        assertTrue(result.ok(), () -> "the driver failed (exit " + result.exitCode() + "):\n" + result.output());
        return ByteBuffer.wrap(Files.readAllBytes(output)).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Reads the next element of {@code type} from the driver's output. */
    private static long element(DataType type, ByteBuffer out) {
        return switch (type.bytes()) {
            case 1 -> out.get() & 0xFFL;
            case 2 -> out.getShort() & 0xFFFFL;
            case 4 -> out.getInt() & 0xFFFF_FFFFL;
            default -> out.getLong();
        };
    }

    private static void put(DataType type, MemorySegment segment, int index, long bits) {
        for (int k = 0; k < type.bytes(); k++) {
            segment.set(ValueLayout.JAVA_BYTE, (long) index * type.bytes() + k, (byte) (bits >>> 8 * k));
        }
    }

    private static long get(DataType type, MemorySegment segment, int index) {
        long bits = 0;
        for (int k = 0; k < type.bytes(); k++) {
            bits |= (segment.get(ValueLayout.JAVA_BYTE, (long) index * type.bytes() + k) & 0xFFL) << 8 * k;
        }
        return bits;
    }

    /** The driver's input, as its comment lays it out. */
    private static final class Records {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        void reduce(DataType type, ReduceOp op, long[][] ranks) {
            field(1);
            field(type.code());
            field(op.code());
            field(ranks.length);
            field(ranks[0].length);
            for (long[] rank : ranks) {
                for (long bits : rank) {
                    for (int k = 0; k < type.bytes(); k++) {
                        bytes.write((int) (bits >>> 8 * k));
                    }
                }
            }
        }

        /** kind 2 encodes fp32 values into the type, kind 3 decodes the type's codes into fp32. */
        void convert(int kind, DataType type, int[] values) {
            field(kind);
            field(type.code());
            field(values.length);
            for (int value : values) {
                field(value);
            }
        }

        private void field(int value) {
            for (int k = 0; k < 4; k++) {
                bytes.write(value >>> 8 * k);
            }
        }

        byte[] bytes() {
            return bytes.toByteArray();
        }
    }
}
