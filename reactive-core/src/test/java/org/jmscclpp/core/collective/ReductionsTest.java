package org.jmscclpp.core.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.testkit.ReductionSamples;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link Reductions}: the fast {@link Reductions#reduce} against the scalar
 * {@link Reductions#reduceBits} for every type, op and several rank counts; known answers for the
 * corner cases the class comment defines; the fp8, fp16 and bf16 conversions exhaustively and at
 * every rounding midpoint; in-place runs; the usage errors; and the throughput (printed).
 */
class ReductionsTest {

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int[] RANK_COUNTS = {1, 2, 3, 4, 7};
    /** Three blocks of the fast path, the last one partial. */
    private static final int COUNT = 2 * Reductions.BLOCK + 77;

    static Stream<Arguments> typesAndOps() {
        List<Arguments> all = new ArrayList<>();
        for (DataType type : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                all.add(Arguments.of(type, op));
            }
        }
        return all.stream();
    }

    // ---------------------------------------------------------------------------------------------
    // reduce against reduceBits

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("typesAndOps")
    void reduceMatchesTheScalarReferenceBitForBit(DataType type, ReduceOp op) {
        Random random = new Random(31L * type.code() + op.code());
        try (Arena arena = Arena.ofConfined()) {
            for (int n : RANK_COUNTS) {
                long[][] inputs = randomInputs(type, n, COUNT, random);
                MemorySegment[] sources = new MemorySegment[n];
                long[] offsets = new long[n];
                for (int s = 0; s < n; s++) {
                    // heap and native memory, odd offsets: nothing may depend on alignment
                    offsets[s] = 2L * s + 1;
                    MemorySegment segment = s % 2 == 0 ? arena.allocate(offsets[s] + (long) COUNT * type.bytes())
                            : MemorySegment.ofArray(new byte[(int) offsets[s] + COUNT * type.bytes()]);
                    write(type, segment, offsets[s], inputs[s]);
                    sources[s] = segment;
                }
                MemorySegment dst = arena.allocate(5 + (long) COUNT * type.bytes());
                Reductions.reduce(type, op, sources, offsets, dst, 5, COUNT);
                long[] column = new long[n];
                for (int i = 0; i < COUNT; i++) {
                    for (int s = 0; s < n; s++) {
                        column[s] = inputs[s][i];
                    }
                    long expected = Reductions.reduceBits(type, op, column);
                    long actual = read(type, dst, 5 + (long) i * type.bytes());
                    if (expected != actual) {
                        throw new AssertionError(type + " " + op + " of " + n + " at element " + i + ": inputs "
                                + hex(column) + ", reduceBits 0x" + Long.toHexString(expected) + ", reduce 0x"
                                + Long.toHexString(actual));
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(DataType.class)
    void inPlaceEqualsOutOfPlace(DataType type) {
        Random random = new Random(type.code());
        int n = 3;
        for (ReduceOp op : ReduceOp.values()) {
            long[][] inputs = randomInputs(type, n, COUNT, random);
            MemorySegment expected = MemorySegment.ofArray(new long[COUNT]);
            Reductions.reduce(type, op, segments(type, inputs), new long[n], expected, 0, COUNT);
            for (int into = 0; into < n; into++) {
                MemorySegment[] sources = segments(type, inputs);
                Reductions.reduce(type, op, sources, new long[n], sources[into], 0, COUNT);
                assertEquals(-1, sources[into].asSlice(0, (long) COUNT * type.bytes())
                                .mismatch(expected.asSlice(0, (long) COUNT * type.bytes())),
                        type + " " + op + " into source " + into);
            }
        }
    }

    @Test
    void zeroElementsTouchNothing() {
        MemorySegment dst = MemorySegment.ofArray(new byte[] {42});
        Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, new MemorySegment[] {MemorySegment.ofArray(new byte[0])},
                new long[] {0}, dst, 1, 0);
        assertEquals(42, dst.get(ValueLayout.JAVA_BYTE, 0));
    }

    // ---------------------------------------------------------------------------------------------
    // Known answers: the corner cases the class comment defines, computed by hand

    @Test
    void integersWrapAndAverageTheWrappedSum() {
        assertReduces(DataType.INT8, ReduceOp.SUM, 0x80, 0x7F, 0x01);
        // 127 + 1 + 1 wraps to -127; -127 / 3 truncates to -42 (0xD6)
        assertReduces(DataType.INT8, ReduceOp.AVG, 0xD6, 0x7F, 0x01, 0x01);
        // 255 + 2 wraps to 1; 1 / 2 = 0
        assertReduces(DataType.UINT8, ReduceOp.AVG, 0x00, 0xFF, 0x02);
        assertReduces(DataType.UINT8, ReduceOp.AVG, 0x7F, 0xFF, 0x00);
        assertReduces(DataType.INT8, ReduceOp.AVG, 0x00, 0xFF, 0x00);
        assertReduces(DataType.INT8, ReduceOp.PROD, 0x00, 0x10, 0x10);
        assertReduces(DataType.INT8, ReduceOp.MIN, 0x80, 0x7F, 0x80);
        assertReduces(DataType.UINT8, ReduceOp.MIN, 0x7F, 0x7F, 0x80);
        assertReduces(DataType.INT32, ReduceOp.MAX, 0x1, 0xFFFF_FFFFL, 0x1);
        assertReduces(DataType.UINT32, ReduceOp.MAX, 0xFFFF_FFFFL, 0xFFFF_FFFFL, 0x1);
        assertReduces(DataType.UINT32, ReduceOp.PROD, 0x0000_0001L, 0xFFFF_FFFFL, 0xFFFF_FFFFL);
        // (-7) / 2 truncates toward zero to -3
        assertReduces(DataType.INT32, ReduceOp.AVG, 0xFFFF_FFFDL, 0xFFFF_FFF9L, 0);
        assertReduces(DataType.UINT32, ReduceOp.AVG, 0x7FFF_FFFCL, 0xFFFF_FFF9L, 0);
        // MIN + -1 wraps to MAX; MAX / 2
        assertReduces(DataType.INT64, ReduceOp.AVG, 0x3FFF_FFFF_FFFF_FFFFL, Long.MIN_VALUE, -1);
        assertReduces(DataType.UINT64, ReduceOp.MIN, 1, -1, 1);
        assertReduces(DataType.INT64, ReduceOp.MIN, -1, -1, 1);
    }

    @Test
    void floatsFoldLeftToRightInTheAccumulator() {
        long one = 0x3F80_0000L;
        long halfUlp = 0x3380_0000L; // 2^-24: half an ulp of 1
        // 1 + 2^-24 ties back to 1, twice; 2^-24 + 2^-24 + 1 is 1 + 2^-23
        assertReduces(DataType.FLOAT32, ReduceOp.SUM, one, one, halfUlp, halfUlp);
        assertReduces(DataType.FLOAT32, ReduceOp.SUM, 0x3F80_0001L, halfUlp, halfUlp, one);
        // fp16 rounds once: 1 + 2^-11 + 2^-11 is 1 + 2^-10 in fp32, one fp16 ulp above 1
        assertReduces(DataType.FLOAT16, ReduceOp.SUM, 0x3C01, 0x3C00, 0x1000, 0x1000);
        // bf16 likewise: 1 + 3 * 2^-9 is 3/4 of a bf16 ulp above 1, where each bf16 step would stay at 1
        assertReduces(DataType.BFLOAT16, ReduceOp.SUM, 0x3F81, 0x3F80, 0x3B00, 0x3B00, 0x3B00);
        // (1 + 2 + 2) / 3 in fp32, then to fp64-free fp32 bits
        assertReduces(DataType.FLOAT32, ReduceOp.AVG, Float.floatToIntBits(5f / 3f), one, 0x4000_0000L,
                0x4000_0000L);
        assertReduces(DataType.FLOAT64, ReduceOp.AVG, Double.doubleToLongBits(1.5), Double.doubleToLongBits(1),
                Double.doubleToLongBits(2));
        // e4m3: (2^-9 + 0) / 2 = 2^-10, halfway between 0 and the smallest subnormal: to the even 0
        assertReduces(DataType.FP8_E4M3, ReduceOp.AVG, 0x00, 0x01, 0x00);
        assertReduces(DataType.FP8_E4M3, ReduceOp.AVG, 0x01, 0x01, 0x01);
        assertReduces(DataType.FP8_E4M3, ReduceOp.PROD, 0x38, 0x38, 0x38, 0x38);
    }

    @Test
    void minAndMaxKeepTheFirstOfEqualZerosAndTheFirstNaNQuieted() {
        assertReduces(DataType.FLOAT32, ReduceOp.MIN, 0x8000_0000L, 0x8000_0000L, 0);
        assertReduces(DataType.FLOAT32, ReduceOp.MIN, 0, 0, 0x8000_0000L);
        assertReduces(DataType.FLOAT32, ReduceOp.MAX, 0x8000_0000L, 0x8000_0000L, 0);
        assertReduces(DataType.FLOAT64, ReduceOp.MAX, 0, 0, 0x8000_0000_0000_0000L);
        assertReduces(DataType.FLOAT16, ReduceOp.MIN, 0x8000, 0x8000, 0x0000);
        assertReduces(DataType.FP8_E4M3, ReduceOp.MAX, 0x80, 0x80, 0x00);
        // a signalling NaN comes out quiet, payload kept; the first NaN wins whatever follows
        assertReduces(DataType.FLOAT32, ReduceOp.MAX, 0x7FC0_0001L, 0x7F80_0001L, 0x3F80_0000L);
        assertReduces(DataType.FLOAT32, ReduceOp.MIN, 0xFFE0_0000L, 0x3F80_0000L, 0xFFA0_0000L, 0x7FC0_0000L);
        assertReduces(DataType.FLOAT64, ReduceOp.MIN, 0xFFF8_0000_0000_0001L, 0xFFF0_0000_0000_0001L,
                0x7FF8_0000_0000_0000L);
        assertReduces(DataType.FLOAT16, ReduceOp.MAX, 0x7E01, 0x3C00, 0x7C01, 0xFE00);
        assertReduces(DataType.BFLOAT16, ReduceOp.MAX, 0x7FC1, 0x7F81, 0x3F80);
        // fp8 NaNs are stored canonical, with their sign
        assertReduces(DataType.FP8_E5M2, ReduceOp.MIN, 0xFF, 0x38, 0xFD, 0x7E);
        assertReduces(DataType.FP8_E4M3, ReduceOp.MIN, 0xFF, 0xFF, 0x7F);
        assertReduces(DataType.FLOAT32, ReduceOp.MAX, 0x7F80_0000L, 0xFF80_0000L, 0x7F80_0000L);
    }

    @Test
    void arithmeticNaNsAreCanonical() {
        assertReduces(DataType.FLOAT32, ReduceOp.SUM, 0x7FC0_0000L, 0xFFC1_2345L, 0x3F80_0000L);
        assertReduces(DataType.FLOAT32, ReduceOp.SUM, 0x7FC0_0000L, 0x7F80_0000L, 0xFF80_0000L);
        assertReduces(DataType.FLOAT32, ReduceOp.PROD, 0x7FC0_0000L, 0x7F80_0000L, 0);
        assertReduces(DataType.FLOAT32, ReduceOp.AVG, 0x7FC0_0000L, 0x7F80_0001L);
        assertReduces(DataType.FLOAT64, ReduceOp.SUM, 0x7FF8_0000_0000_0000L, 0xFFF8_0000_0000_0001L);
        assertReduces(DataType.FLOAT16, ReduceOp.SUM, 0x7E00, 0xFD55, 0x3C00);
        assertReduces(DataType.BFLOAT16, ReduceOp.PROD, 0x7FC0, 0xFFA5, 0x3F80);
        assertReduces(DataType.FP8_E4M3, ReduceOp.SUM, 0x7F, 0xFF, 0x38);
        assertReduces(DataType.FP8_E5M2, ReduceOp.AVG, 0x7F, 0x7C, 0xFC);
    }

    @Test
    void fp8SaturatesAndFp16Overflows() {
        assertReduces(DataType.FP8_E4M3, ReduceOp.SUM, 0x7E, 0x7E, 0x7E);
        assertReduces(DataType.FP8_E4M3, ReduceOp.SUM, 0xFE, 0xFE, 0xF0);
        assertReduces(DataType.FP8_E5M2, ReduceOp.SUM, 0x7B, 0x7B, 0x7B);
        // infinities are beyond the largest finite value too
        assertReduces(DataType.FP8_E5M2, ReduceOp.SUM, 0x7B, 0x7C, 0x3C);
        assertReduces(DataType.FP8_E5M2, ReduceOp.MIN, 0xFB, 0xFC, 0x00);
        assertReduces(DataType.FP8_E5M2, ReduceOp.MAX, 0x80, 0xFC, 0x80);
        assertReduces(DataType.FLOAT16, ReduceOp.SUM, 0x7C00, 0x7BFF, 0x7BFF);
        assertReduces(DataType.BFLOAT16, ReduceOp.SUM, 0xFF80, 0xFF7F, 0xFF7F);
    }

    private static void assertReduces(DataType type, ReduceOp op, long expected, long... inputs) {
        long scalar = Reductions.reduceBits(type, op, inputs);
        assertEquals(expected, scalar, () -> type + " " + op + " of " + hex(inputs) + ": reduceBits 0x"
                + Long.toHexString(scalar));
        long[][] columns = new long[inputs.length][];
        for (int s = 0; s < inputs.length; s++) {
            columns[s] = new long[] {inputs[s]};
        }
        MemorySegment dst = MemorySegment.ofArray(new long[1]);
        Reductions.reduce(type, op, segments(type, columns), new long[inputs.length], dst, 0, 1);
        assertEquals(expected, read(type, dst, 0), () -> type + " " + op + " of " + hex(inputs) + ": reduce");
    }

    // ---------------------------------------------------------------------------------------------
    // Conversions

    @Test
    void everyFp8CodeDecodesToItsValue() {
        for (int c = 0; c < 256; c++) {
            int sign = c >> 7;
            int e = c >> 3 & 0xF;
            int m = c & 7;
            float e4m3 = Reductions.fp8E4m3ToFloat((byte) c);
            if (e == 15 && m == 7) {
                assertEquals(sign << 31 | 0x7FF0_0000, Float.floatToRawIntBits(e4m3), "e4m3 NaN " + c);
            } else {
                double magnitude = e == 0 ? Math.scalb((double) m, -9) : Math.scalb(1 + m / 8.0, e - 7);
                assertEquals(sign == 1 ? -magnitude : magnitude, e4m3, "e4m3 0x" + Integer.toHexString(c));
                assertEquals(sign, Float.floatToRawIntBits(e4m3) >>> 31, "e4m3 sign of 0x" + Integer.toHexString(c));
            }
            e = c >> 2 & 0x1F;
            m = c & 3;
            float e5m2 = Reductions.fp8E5m2ToFloat((byte) c);
            if (e == 31) {
                if (m == 0) {
                    assertEquals(sign == 1 ? Float.NEGATIVE_INFINITY : Float.POSITIVE_INFINITY, e5m2);
                } else {
                    assertEquals(sign << 31 | 0x7FC0_0000 | m << 21, Float.floatToRawIntBits(e5m2), "e5m2 NaN " + c);
                }
            } else {
                double magnitude = e == 0 ? Math.scalb((double) m, -16) : Math.scalb(1 + m / 4.0, e - 15);
                assertEquals(sign == 1 ? -magnitude : magnitude, e5m2, "e5m2 0x" + Integer.toHexString(c));
                assertEquals(sign, Float.floatToRawIntBits(e5m2) >>> 31, "e5m2 sign of 0x" + Integer.toHexString(c));
            }
        }
    }

    @Test
    void everyFp8CodeRoundTrips() {
        for (int c = 0; c < 256; c++) {
            int e4m3 = Reductions.floatToFp8E4m3(Reductions.fp8E4m3ToFloat((byte) c)) & 0xFF;
            assertEquals(c, e4m3, "e4m3 0x" + Integer.toHexString(c));
            int e5m2 = Reductions.floatToFp8E5m2(Reductions.fp8E5m2ToFloat((byte) c)) & 0xFF;
            int expected = switch (c & 0x7F) {
                case 0x7C -> c & 0x80 | 0x7B; // infinity saturates
                case 0x7D, 0x7E, 0x7F -> c & 0x80 | 0x7F; // every NaN is stored as 0x7F
                default -> c;
            };
            assertEquals(expected, e5m2, "e5m2 0x" + Integer.toHexString(c));
        }
    }

    @Test
    void fp8RoundsToNearestEvenAtEveryMidpoint() {
        checkFp8Midpoints(false);
        checkFp8Midpoints(true);
    }

    private static void checkFp8Midpoints(boolean e5m2) {
        int max = e5m2 ? 0x7B : 0x7E;
        for (int c = 0; c <= max; c++) {
            float low = fp8(e5m2, c);
            // beyond the largest code: the midpoint to the value the next code would have
            float high = c < max ? fp8(e5m2, c + 1) : (e5m2 ? 65536f : 480f);
            float mid = (low + high) / 2;
            int even = c < max ? ((c & 1) == 0 ? c : c + 1) : max;
            int up = c < max ? c + 1 : max;
            for (int sign : new int[] {0, 0x80}) {
                float s = sign == 0 ? 1 : -1;
                String what = (e5m2 ? "e5m2" : "e4m3") + " between 0x" + Integer.toHexString(c | sign) + " and next";
                assertEquals(c | sign, toFp8(e5m2, s * low), what + ": the low end");
                assertEquals(even | sign, toFp8(e5m2, s * mid), what + ": the midpoint " + s * mid);
                assertEquals(c | sign, toFp8(e5m2, s * Math.nextDown(mid)), what + ": below the midpoint");
                assertEquals(up | sign, toFp8(e5m2, s * Math.nextUp(mid)), what + ": above the midpoint");
            }
        }
    }

    @Test
    void fp8SaturatesInfinityAndLargeValuesAndKeepsNaNSigns() {
        for (float v : new float[] {448f, 464f, Math.nextUp(464f), 1e6f, Float.MAX_VALUE, Float.POSITIVE_INFINITY}) {
            assertEquals(0x7E, Reductions.floatToFp8E4m3(v) & 0xFF, "e4m3 of " + v);
            assertEquals(0xFE, Reductions.floatToFp8E4m3(-v) & 0xFF, "e4m3 of " + -v);
        }
        assertEquals(0x7D, Reductions.floatToFp8E4m3(Math.nextDown(432f)) & 0xFF);
        for (float v : new float[] {57344f, 61440f, 65520f, 65536f, 1e30f, Float.POSITIVE_INFINITY}) {
            assertEquals(0x7B, Reductions.floatToFp8E5m2(v) & 0xFF, "e5m2 of " + v);
            assertEquals(0xFB, Reductions.floatToFp8E5m2(-v) & 0xFF, "e5m2 of " + -v);
        }
        for (int nan : new int[] {0x7FC0_0000, 0x7F80_0001, 0x7FFF_FFFF}) {
            assertEquals(0x7F, Reductions.floatToFp8E4m3(Float.intBitsToFloat(nan)) & 0xFF);
            assertEquals(0xFF, Reductions.floatToFp8E4m3(Float.intBitsToFloat(nan | 0x8000_0000)) & 0xFF);
            assertEquals(0x7F, Reductions.floatToFp8E5m2(Float.intBitsToFloat(nan)) & 0xFF);
            assertEquals(0xFF, Reductions.floatToFp8E5m2(Float.intBitsToFloat(nan | 0x8000_0000)) & 0xFF);
        }
        // below half the smallest subnormal: a zero of the input's sign
        assertEquals(0x80, Reductions.floatToFp8E4m3(-0x1p-11f) & 0xFF);
        assertEquals(0x00, Reductions.floatToFp8E5m2(Float.MIN_VALUE) & 0xFF);
    }

    @Test
    void fp8EncodingIsTheNearestFiniteCode() {
        Random random = new Random(8);
        for (int i = 0; i < 100_000; i++) {
            // magnitudes from far below the subnormals to beyond the largest finite value
            float v = (random.nextBoolean() ? -1 : 1) * Math.scalb(1 + random.nextFloat(), random.nextInt(40) - 24);
            assertEquals(nearestFp8(false, v), Reductions.floatToFp8E4m3(v) & 0xFF, "e4m3 of " + v);
            assertEquals(nearestFp8(true, v), Reductions.floatToFp8E5m2(v) & 0xFF, "e5m2 of " + v);
        }
    }

    /** Brute force: the finite code nearest to {@code v} (so beyond the largest, the largest), ties to the even code. */
    private static int nearestFp8(boolean e5m2, float v) {
        double magnitude = Math.abs((double) v);
        int best = 0;
        for (int c = 1; c <= (e5m2 ? 0x7B : 0x7E); c++) {
            double d = Math.abs(fp8(e5m2, c) - magnitude);
            double b = Math.abs(fp8(e5m2, best) - magnitude);
            if (d < b || (d == b && (c & 1) == 0)) {
                best = c;
            }
        }
        return best | (v < 0 || Float.floatToRawIntBits(v) < 0 ? 0x80 : 0);
    }

    private static float fp8(boolean e5m2, int code) {
        return e5m2 ? Reductions.fp8E5m2ToFloat((byte) code) : Reductions.fp8E4m3ToFloat((byte) code);
    }

    private static int toFp8(boolean e5m2, float v) {
        return (e5m2 ? Reductions.floatToFp8E5m2(v) : Reductions.floatToFp8E4m3(v)) & 0xFF;
    }

    @Test
    void everyFp16AndBf16CodeRoundTripsAndNaNsComeBackQuiet() {
        for (int c = 0; c < 0x10000; c++) {
            boolean fp16Nan = (c & 0x7FFF) > 0x7C00;
            float h = Reductions.fp16ToFloat((short) c);
            if (fp16Nan) {
                assertEquals((c & 0x8000) << 16 | 0x7FC0_0000 | (c & 0x3FF) << 13, Float.floatToRawIntBits(h));
            } else {
                assertEquals(Float.float16ToFloat((short) c), h, "fp16 0x" + Integer.toHexString(c));
            }
            assertEquals(fp16Nan ? c | 0x200 : c, Reductions.floatToFp16(h) & 0xFFFF, "fp16 0x" + Integer.toHexString(c));
            boolean bf16Nan = (c & 0x7FFF) > 0x7F80;
            float b = Reductions.bf16ToFloat((short) c);
            assertEquals(bf16Nan ? c << 16 | 0x40_0000 : c << 16, Float.floatToRawIntBits(b));
            assertEquals(bf16Nan ? c | 0x40 : c, Reductions.floatToBf16(b) & 0xFFFF, "bf16 0x" + Integer.toHexString(c));
        }
    }

    /**
     * The bulk conversions that let a reduction in steps accumulate in float32: every code of each
     * narrow type widens to the scalar conversion's value, and float32 values (the codes' own, their
     * midpoints' neighbours and random ones) narrow as the scalar conversions round them.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = DataType.class, names = {"FLOAT16", "BFLOAT16", "FP8_E4M3", "FP8_E5M2"})
    void bulkConversionsToAndFromFloat32AgreeWithTheScalarOnes(DataType type) {
        int codes = type.bytes() == 2 ? 0x10000 : 0x100;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment narrow = arena.allocate((long) codes * type.bytes() + 3);
            MemorySegment wide = arena.allocate(codes * 4L + 8);
            for (int c = 0; c < codes; c++) {
                if (type.bytes() == 2) {
                    narrow.set(SHORT, 3 + 2L * c, (short) c);
                } else {
                    narrow.set(ValueLayout.JAVA_BYTE, 3 + c, (byte) c);
                }
            }
            Reductions.toFloat32(type, narrow, 3, wide, 8, codes);
            Random random = new Random(7);
            for (int c = 0; c < codes; c++) {
                float want = scalarToFloat(type, c);
                float got = wide.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 8 + 4L * c);
                if (Float.isNaN(want)) {
                    assertTrue(Float.isNaN(got), type + " code " + c);
                } else {
                    assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(got), type + " code " + c);
                }
                // replace it by a float near it, so the narrowing rounds
                float near = switch (random.nextInt(3)) {
                    case 0 -> got;
                    case 1 -> Math.nextUp(got) * (1 + random.nextFloat() / 8);
                    default -> (random.nextFloat() - 0.5f) * 1e4f;
                };
                wide.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 8 + 4L * c, near);
            }
            Reductions.fromFloat32(type, wide, 8, narrow, 3, codes);
            for (int c = 0; c < codes; c++) {
                float from = wide.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 8 + 4L * c);
                int got = type.bytes() == 2 ? narrow.get(SHORT, 3 + 2L * c) & 0xFFFF
                        : narrow.get(ValueLayout.JAVA_BYTE, 3 + c) & 0xFF;
                if (Float.isNaN(from)) {
                    assertTrue(Float.isNaN(scalarToFloat(type, got)), type + " NaN stays NaN");
                } else {
                    assertEquals(scalarFromFloat(type, from), got, type + " from " + from);
                }
            }
            assertThrows(IllegalArgumentException.class,
                    () -> Reductions.toFloat32(type, narrow, 4, wide, 8, codes), "past the narrow segment's end");
            assertThrows(IllegalArgumentException.class,
                    () -> Reductions.fromFloat32(type, wide, 12, narrow, 3, codes), "past the wide segment's end");
        }
        assertThrows(IllegalArgumentException.class, () -> Reductions.toFloat32(DataType.INT32, MemorySegment.NULL, 0,
                MemorySegment.NULL, 0, 0), "not a float type");
    }

    private static float scalarToFloat(DataType type, int code) {
        return switch (type) {
            case FLOAT16 -> Reductions.fp16ToFloat((short) code);
            case BFLOAT16 -> Reductions.bf16ToFloat((short) code);
            case FP8_E4M3 -> Reductions.fp8E4m3ToFloat((byte) code);
            default -> Reductions.fp8E5m2ToFloat((byte) code);
        };
    }

    private static int scalarFromFloat(DataType type, float value) {
        return switch (type) {
            case FLOAT16 -> Reductions.floatToFp16(value) & 0xFFFF;
            case BFLOAT16 -> Reductions.floatToBf16(value) & 0xFFFF;
            case FP8_E4M3 -> Reductions.floatToFp8E4m3(value) & 0xFF;
            default -> Reductions.floatToFp8E5m2(value) & 0xFF;
        };
    }

    @Test
    void fp16AndBf16RoundToNearestEvenAtEveryMidpoint() {
        for (int c = 0; c < 0x7C00; c++) {
            float low = Float.float16ToFloat((short) c);
            // 0x7BFF's upper neighbour is 65536, where fp16 overflows
            float high = c < 0x7BFF ? Float.float16ToFloat((short) (c + 1)) : 65536f;
            float mid = (low + high) / 2;
            int even = (c & 1) == 0 ? c : c + 1;
            for (int sign : new int[] {0, 0x8000}) {
                float s = sign == 0 ? 1 : -1;
                assertEquals(even | sign, Reductions.floatToFp16(s * mid) & 0xFFFF, "fp16 midpoint " + s * mid);
                assertEquals(c | sign, Reductions.floatToFp16(s * Math.nextDown(mid)) & 0xFFFF);
                assertEquals((c + 1) | sign, Reductions.floatToFp16(s * Math.nextUp(mid)) & 0xFFFF);
            }
        }
        for (int c = 0; c < 0x7F80; c++) {
            int mid = c << 16 | 0x8000;
            int even = (c & 1) == 0 ? c : c + 1;
            for (int sign : new int[] {0, 0x8000}) {
                assertEquals(even | sign, bf16Bits(sign << 16 | mid), "bf16 midpoint above 0x" + Integer.toHexString(c));
                assertEquals(c | sign, bf16Bits(sign << 16 | (mid - 1)));
                assertEquals((c + 1) | sign, bf16Bits(sign << 16 | (mid + 1)));
            }
        }
        assertEquals(0x7F80, bf16Bits(0x7F7F_8000), "halfway to infinity: to the even infinity");
        assertEquals(0x7F7F, bf16Bits(0x7F7F_7FFF));
        assertEquals(0x7FC0, bf16Bits(0x7F80_0001), "a signalling NaN that rounding would carry into infinity");
        assertEquals(0xFE00 | 0x155, Reductions.floatToFp16(Float.intBitsToFloat(0xFFAA_A000)) & 0xFFFF);
    }

    private static int bf16Bits(int f32) {
        return Reductions.floatToBf16(Float.intBitsToFloat(f32)) & 0xFFFF;
    }

    // ---------------------------------------------------------------------------------------------
    // Usage errors

    @Test
    void invalidArgumentsAreRejectedBeforeAnyMemoryIsTouched() {
        MemorySegment a = MemorySegment.ofArray(new byte[64]);
        MemorySegment b = MemorySegment.ofArray(new byte[64]);
        MemorySegment dst = MemorySegment.ofArray(new byte[64]);
        a.fill((byte) 1);
        b.fill((byte) 2);
        dst.fill((byte) 7);
        MemorySegment[] two = {a, b};
        assertInvalid("count is -1", () -> Reductions.reduce(DataType.INT32, ReduceOp.SUM, two, new long[2], dst, 0, -1));
        assertInvalid("no sources", () -> Reductions.reduce(DataType.INT32, ReduceOp.SUM, new MemorySegment[0],
                new long[0], dst, 0, 1));
        assertInvalid("2 sources but 3 source offsets", () -> Reductions.reduce(DataType.INT32, ReduceOp.SUM, two,
                new long[3], dst, 0, 1));
        assertInvalid("source 1's 16 elements of int32 at byte offset 4 (64 bytes) do not fit its segment of 64 bytes",
                () -> Reductions.reduce(DataType.INT32, ReduceOp.SUM, two, new long[] {0, 4}, dst, 0, 16));
        assertInvalid("source 0's 1 elements of double at byte offset -1",
                () -> Reductions.reduce(DataType.FLOAT64, ReduceOp.SUM, two, new long[] {-1, 0}, dst, 0, 1));
        assertInvalid("the destination's 9 elements of double at byte offset 0 (72 bytes)",
                () -> Reductions.reduce(DataType.FLOAT64, ReduceOp.MAX, two, new long[2], dst, 0, 9));
        assertInvalid("more bytes than a long counts", () -> Reductions.reduce(DataType.UINT64, ReduceOp.SUM, two,
                new long[2], dst, 0, Long.MAX_VALUE / 4));
        assertInvalid("read-only", () -> Reductions.reduce(DataType.INT8, ReduceOp.SUM, two, new long[2],
                dst.asReadOnly(), 0, 1));
        // in place at another offset, even by one byte, would read elements already written
        assertInvalid("the destination (offset 1) overlaps source 1 (offset 0)", () -> Reductions.reduce(
                DataType.INT32, ReduceOp.SUM, two, new long[2], b, 1, 8));
        assertInvalid("no inputs", () -> Reductions.reduceBits(DataType.INT8, ReduceOp.SUM, new long[0]));
        assertInvalid("input 1 is 0x100, wider than int8's 8 bits",
                () -> Reductions.reduceBits(DataType.INT8, ReduceOp.SUM, new long[] {1, 0x100}));
        assertInvalid("input 0 is 0x100000000, wider than float's 32 bits",
                () -> Reductions.reduceBits(DataType.FLOAT32, ReduceOp.SUM, new long[] {1L << 32}));
        for (MemorySegment s : new MemorySegment[] {a, b, dst}) {
            byte expected = s == a ? (byte) 1 : s == b ? (byte) 2 : (byte) 7;
            for (long i = 0; i < s.byteSize(); i++) {
                assertEquals(expected, s.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " untouched");
            }
        }
        // a source may overlap another source, and be the destination at its own offset
        Reductions.reduce(DataType.INT8, ReduceOp.SUM, new MemorySegment[] {a, a, dst}, new long[] {0, 1, 8}, dst, 8, 4);
        assertEquals(9, dst.get(ValueLayout.JAVA_BYTE, 8));
    }

    private static void assertInvalid(String detail, Executable call) {
        JmscclppException e = assertThrows(JmscclppException.class, call::execute);
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals("reduce", e.phase());
        assertTrue(e.detail().contains(detail), () -> "'" + e.detail() + "' should contain '" + detail + "'");
    }

    // ---------------------------------------------------------------------------------------------
    // Throughput

    @Test
    void throughputIsPrinted() {
        int count = 1 << 21;
        int n = 4;
        try (Arena arena = Arena.ofConfined()) {
            for (DataType type : new DataType[] {DataType.INT32, DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16,
                    DataType.BFLOAT16, DataType.FP8_E4M3, DataType.INT8}) {
                long begin = System.nanoTime();
                MemorySegment[] sources = new MemorySegment[n];
                Random random = new Random(type.code());
                long[] bits = new long[count + n];
                for (int i = 0; i < bits.length; i++) {
                    bits[i] = ReductionSamples.randomBits(type, random);
                }
                for (int s = 0; s < n; s++) {
                    // the same random elements, shifted by one per source
                    sources[s] = arena.allocate((long) count * type.bytes());
                    write(type, sources[s], 0, Arrays.copyOfRange(bits, s, s + count));
                }
                MemorySegment dst = arena.allocate((long) count * type.bytes());
                long setUp = System.nanoTime();
                StringBuilder line = new StringBuilder("Reductions.reduce " + type + ", " + n + " sources, " + count
                        + " elements:");
                for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX}) {
                    // compiled before it is timed: whole-method C2 code, not on-stack replacement of a first call
                    for (int warmUp = 0; warmUp < 30; warmUp++) {
                        Reductions.reduce(type, op, sources, new long[n], dst, 0, 1 << 14);
                    }
                    long best = Long.MAX_VALUE;
                    for (int run = 0; run < 5; run++) {
                        long start = System.nanoTime();
                        Reductions.reduce(type, op, sources, new long[n], dst, 0, count);
                        best = Math.min(best, System.nanoTime() - start);
                    }
                    line.append(String.format(" %s %.0f M elements/s (%.0f M inputs/s);", op, count * 1e3 / best,
                            (double) count * n * 1e3 / best));
                }
                System.out.println(line + " (set-up " + (setUp - begin) / 1_000_000 + " ms, runs " + (System.nanoTime() - setUp) / 1_000_000 + " ms)");
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Helpers

    private static long[][] randomInputs(DataType type, int n, int count, Random random) {
        long[][] inputs = new long[n][count];
        for (int s = 0; s < n; s++) {
            for (int i = 0; i < count; i++) {
                inputs[s][i] = ReductionSamples.randomBits(type, random);
            }
        }
        return inputs;
    }

    private static MemorySegment[] segments(DataType type, long[][] inputs) {
        MemorySegment[] segments = new MemorySegment[inputs.length];
        for (int s = 0; s < inputs.length; s++) {
            segments[s] = MemorySegment.ofArray(new long[inputs[s].length]);
            write(type, segments[s], 0, inputs[s]);
        }
        return segments;
    }

    private static void write(DataType type, MemorySegment segment, long offset, long[] bits) {
        int size = type.bytes();
        for (int i = 0; i < bits.length; i++) {
            long at = offset + (long) i * size;
            switch (size) {
                case 1 -> segment.set(ValueLayout.JAVA_BYTE, at, (byte) bits[i]);
                case 2 -> segment.set(SHORT, at, (short) bits[i]);
                case 4 -> segment.set(INT, at, (int) bits[i]);
                default -> segment.set(LONG, at, bits[i]);
            }
        }
    }

    private static long read(DataType type, MemorySegment segment, long offset) {
        long bits = 0;
        for (int k = 0; k < type.bytes(); k++) {
            bits |= (segment.get(ValueLayout.JAVA_BYTE, offset + k) & 0xFFL) << 8 * k;
        }
        return bits;
    }

    private static String hex(long[] bits) {
        StringBuilder sb = new StringBuilder("[");
        for (long b : bits) {
            sb.append(sb.length() > 1 ? ", " : "").append("0x").append(Long.toHexString(b));
        }
        return sb.append(']').toString();
    }
}
