package org.jmscclpp.testkit;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.Reductions;

/**
 * The tests' own idea of what a collective must produce, written apart from {@link Reductions} so
 * that a mistake in one is not repeated in the other: inputs drawn per (seed, rank, element), and
 * a check of each output element against the exact result.
 *
 * <p>The bound: integers must be exact (sums and products wrap in the type's width; min and max
 * compare signed or unsigned as the type says; avg truncates the wrapped sum's quotient toward
 * zero, unsigned division for unsigned types). Min and max of floating types must be exact.
 * Floating sums, products and averages are compared with the exact real result {@code e} computed
 * in double (exact here: at most 4 inputs of at most 24 significant bits in [-2, 2)). Accumulating
 * n inputs left to right in fp32 (fp64 for double) errs by at most (n-1)·u·S, where u is the
 * accumulator's unit roundoff (2^-24, 2^-53) and S is the sum of the inputs' magnitudes (for
 * products: |e|); the average divides once more (one more u·|e|); storing rounds once to the
 * type, at most one unit in the last place of the result. So the check is
 * |result - e| ≤ (n-1)·u·S (+ u·|e| for avg) + ulp_T(|e| + that bound).
 */
public final class CollectiveReference {

    private static final ValueLayout.OfByte BYTE = ValueLayout.JAVA_BYTE;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** fp8 codes whose value is finite and at most 2 in magnitude, per format. */
    private static final byte[] E4M3_CODES = smallCodes(DataType.FP8_E4M3);
    private static final byte[] E5M2_CODES = smallCodes(DataType.FP8_E5M2);

    private CollectiveReference() {
    }

    /**
     * The buffers of an in-place call in NCCL's layout inside {@code whole} (the larger of the send
     * and receive ranges), and where this rank's input must be written before the call:
     * allgather's send is slot {@code rank} of the receive buffer, reducescatter's receive buffer
     * is slot {@code rank} of the send buffer, the other kinds use one range for both.
     *
     * @param inputAt    the offset in {@code whole} of this rank's input
     * @param inputBytes how many bytes of input go there
     */
    public record InPlace(DeviceBuffer send, DeviceBuffer recv, long inputAt, long inputBytes) {

        public static InPlace of(CollectiveKind kind, DeviceBuffer whole, int rank, long count, int width,
                                 long sendElements) {
            long slot = rank * count * width;
            return switch (kind) {
                case ALL_GATHER -> new InPlace(count == 0 ? whole : whole.slice(slot, count * width), whole, slot,
                        count * width);
                case REDUCE_SCATTER -> new InPlace(whole, count == 0 ? whole : whole.slice(slot, count * width), 0,
                        sendElements * width);
                default -> new InPlace(whole, whole, 0, sendElements * width);
            };
        }
    }

    /** Writes {@code count} input elements of {@code rank} (element indices from {@code first}) into {@code dst}. */
    public static void fill(DataType type, long seed, int rank, long first, long count, MemorySegment dst, long offset) {
        int w = type.bytes();
        for (long i = 0; i < count; i++) {
            long bits = inputBits(type, seed, rank, first + i);
            put(dst, offset + i * w, w, bits);
        }
    }

    /** The raw bits (zero-extended) of element {@code i} of rank {@code rank}'s input. */
    public static long inputBits(DataType type, long seed, int rank, long i) {
        long h = mix(seed ^ (rank * 0x9E3779B97F4A7C15L) ^ (i * 0xC2B2AE3D27D4EB4FL));
        return switch (type) {
            case INT8, UINT8 -> h & 0xFF;
            case INT32, UINT32 -> h & 0xFFFFFFFFL;
            case INT64, UINT64 -> h;
            case FLOAT32 -> Float.floatToRawIntBits(smallFloat(h)) & 0xFFFFFFFFL;
            case FLOAT64 -> Double.doubleToRawLongBits(smallFloat(h));
            case FLOAT16 -> Float.floatToFloat16(smallFloat(h)) & 0xFFFFL;
            case BFLOAT16 -> (Float.floatToRawIntBits(smallFloat(h)) >>> 16) & 0xFFFFL;
            case FP8_E4M3 -> E4M3_CODES[(int) Long.remainderUnsigned(h, E4M3_CODES.length)] & 0xFFL;
            case FP8_E5M2 -> E5M2_CODES[(int) Long.remainderUnsigned(h, E5M2_CODES.length)] & 0xFFL;
        };
    }

    /** A float in [-2, 2) with 24 significant bits at most. */
    private static float smallFloat(long h) {
        return ((h >>> 40) & 0xFFFFFF) * 0x1p-22f - 2f;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static byte[] smallCodes(DataType type) {
        byte[] codes = new byte[256];
        int n = 0;
        for (int c = 0; c < 256; c++) {
            double v = decode(type, c);
            if (!Double.isNaN(v) && Math.abs(v) <= 2) {
                codes[n++] = (byte) c;
            }
        }
        return java.util.Arrays.copyOf(codes, n);
    }

    /**
     * Checks {@code count} output elements against op over the n inputs (input q's elements at
     * {@code inputOffsets[q]} of {@code inputs[q]}); returns the first mismatch, or null.
     */
    public static String checkReduced(DataType type, ReduceOp op, MemorySegment[] inputs, long[] inputOffsets,
                                      MemorySegment actual, long offset, long count) {
        int w = type.bytes();
        int n = inputs.length;
        long[] x = new long[n];
        boolean floating = type.isFloatingPoint();
        for (long i = 0; i < count; i++) {
            for (int q = 0; q < n; q++) {
                x[q] = get(inputs[q], inputOffsets[q] + i * w, w);
            }
            long got = get(actual, offset + i * w, w);
            String why = floating ? checkFloat(type, op, x, got) : checkInteger(type, op, x, got);
            if (why != null) {
                return "element " + i + ": " + why;
            }
        }
        return null;
    }

    private static String checkInteger(DataType type, ReduceOp op, long[] x, long got) {
        int bits = type.bytes() * 8;
        boolean signed = type.isSignedInteger();
        long[] v = new long[x.length];
        for (int q = 0; q < x.length; q++) {
            v[q] = signed ? (x[q] << (64 - bits)) >> (64 - bits) : x[q];
        }
        long r = v[0];
        for (int q = 1; q < v.length; q++) {
            r = switch (op) {
                case SUM, AVG -> r + v[q];
                case PROD -> r * v[q];
                case MIN -> (signed ? Long.compare(v[q], r) : Long.compareUnsigned(v[q], r)) < 0 ? v[q] : r;
                case MAX -> (signed ? Long.compare(v[q], r) : Long.compareUnsigned(v[q], r)) > 0 ? v[q] : r;
            };
        }
        long mask = bits == 64 ? -1L : (1L << bits) - 1;
        if (op == ReduceOp.AVG) {
            long wrapped = signed ? (r << (64 - bits)) >> (64 - bits) : r & mask;
            r = signed ? wrapped / v.length : Long.divideUnsigned(wrapped, v.length);
        }
        long expected = r & mask;
        return expected == (got & mask) ? null : "expected 0x" + Long.toHexString(expected) + ", got 0x"
                + Long.toHexString(got & mask) + " (" + op + " of " + hex(x) + ")";
    }

    private static String checkFloat(DataType type, ReduceOp op, long[] x, long got) {
        int n = x.length;
        double[] v = new double[n];
        double magnitudes = 0;
        for (int q = 0; q < n; q++) {
            v[q] = decode(type, x[q]);
            magnitudes += Math.abs(v[q]);
        }
        double e = v[0];
        for (int q = 1; q < n; q++) {
            e = switch (op) {
                case SUM, AVG -> e + v[q];
                case PROD -> e * v[q];
                case MIN -> Math.min(e, v[q]);
                case MAX -> Math.max(e, v[q]);
            };
        }
        double r = decode(type, got);
        if (op == ReduceOp.MIN || op == ReduceOp.MAX) {
            return r == e ? null : "expected " + e + ", got " + r + " (" + op + " of " + java.util.Arrays.toString(v) + ")";
        }
        double u = type == DataType.FLOAT64 ? 0x1p-53 : 0x1p-24;
        double bound = op == ReduceOp.PROD ? (n - 1) * u * Math.abs(e) : (n - 1) * u * magnitudes;
        if (op == ReduceOp.AVG) {
            e /= n;
            bound = bound / n + u * Math.abs(e);
        }
        bound += ulp(type, Math.abs(e) + bound);
        return Math.abs(r - e) <= bound ? null : "expected " + e + " ± " + bound + ", got " + r + " (" + op + " of "
                + java.util.Arrays.toString(v) + ")";
    }

    /** One unit in the last place of {@code type} at magnitude {@code m} (its smallest subnormal below the normal range). */
    static double ulp(DataType type, double m) {
        int mantissa;
        int minExponent;
        switch (type) {
            case FLOAT16 -> { mantissa = 10; minExponent = -14; }
            case BFLOAT16 -> { mantissa = 7; minExponent = -126; }
            case FP8_E4M3 -> { mantissa = 3; minExponent = -6; }
            case FP8_E5M2 -> { mantissa = 2; minExponent = -14; }
            case FLOAT32 -> { mantissa = 23; minExponent = -126; }
            default -> { mantissa = 52; minExponent = -1022; }
        }
        int exponent = m == 0 ? minExponent : Math.max(minExponent, Math.getExponent(m));
        return Math.scalb(1.0, exponent - mantissa);
    }

    /** The value of raw bits of a floating type, decoded here without {@link Reductions}. */
    public static double decode(DataType type, long bits) {
        return switch (type) {
            case FLOAT16 -> Float.float16ToFloat((short) bits);
            case BFLOAT16 -> Float.intBitsToFloat((int) (bits & 0xFFFF) << 16);
            case FLOAT32 -> Float.intBitsToFloat((int) bits);
            case FLOAT64 -> Double.longBitsToDouble(bits);
            case FP8_E4M3 -> fp8((int) bits & 0xFF, 4, 3, 7, true);
            case FP8_E5M2 -> fp8((int) bits & 0xFF, 5, 2, 15, false);
            default -> throw new IllegalArgumentException(type + " is not a floating type");
        };
    }

    private static double fp8(int code, int exponentBits, int mantissaBits, int bias, boolean finiteOnly) {
        int sign = code >>> 7;
        int e = (code >>> mantissaBits) & ((1 << exponentBits) - 1);
        int m = code & ((1 << mantissaBits) - 1);
        int maxE = (1 << exponentBits) - 1;
        double v;
        if (finiteOnly && e == maxE && m == (1 << mantissaBits) - 1) {
            v = Double.NaN;
        } else if (!finiteOnly && e == maxE) {
            v = m == 0 ? Double.POSITIVE_INFINITY : Double.NaN;
        } else if (e == 0) {
            v = Math.scalb((double) m, 1 - bias - mantissaBits);
        } else {
            v = Math.scalb((double) ((1 << mantissaBits) | m), e - bias - mantissaBits);
        }
        return sign == 1 ? -v : v;
    }

    private static String hex(long[] x) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < x.length; i++) {
            b.append(i == 0 ? "" : ", ").append("0x").append(Long.toHexString(x[i]));
        }
        return b.append(']').toString();
    }

    static long get(MemorySegment s, long offset, int width) {
        return switch (width) {
            case 1 -> s.get(BYTE, offset) & 0xFFL;
            case 2 -> s.get(SHORT, offset) & 0xFFFFL;
            case 4 -> s.get(INT, offset) & 0xFFFFFFFFL;
            default -> s.get(LONG, offset);
        };
    }

    static void put(MemorySegment s, long offset, int width, long bits) {
        switch (width) {
            case 1 -> s.set(BYTE, offset, (byte) bits);
            case 2 -> s.set(SHORT, offset, (short) bits);
            case 4 -> s.set(INT, offset, (int) bits);
            default -> s.set(LONG, offset, bits);
        }
    }

}
