package org.jmscclpp.core.collective;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.Optional;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * Element-wise reductions of every {@link DataType} under every {@link ReduceOp} on the host: what
 * the host backend's collectives compute, and the reference that the device code is checked
 * against. The device header {@code jmscclpp/reduce.cuh} (module native-bridge) computes the same
 * bits with the same algorithms; native-bridge's {@code ReduceHeaderCrossCheckTest} compiles it
 * and compares the two.
 *
 * <p>Every result is defined to the bit, NaNs included, so that any two backends agree:
 * <ul>
 *   <li>Inputs {@code x0 .. x(N-1)} (in rank order, {@code N >= 1}) are folded left to right:
 *       {@code acc = x0; acc = op(acc, x1); ...}.</li>
 *   <li>Accumulators: {@link DataType#FLOAT16}, {@link DataType#BFLOAT16},
 *       {@link DataType#FP8_E4M3} and {@link DataType#FP8_E5M2} are converted to fp32 (exactly)
 *       and accumulated in fp32, each step rounded to nearest even in fp32 (no fused
 *       multiply-add); the result is rounded once to the type. {@link DataType#FLOAT32} accumulates
 *       in fp32, {@link DataType#FLOAT64} in fp64. Integers accumulate in their own width, sums
 *       and products wrapping around (two's complement).</li>
 *   <li>{@link ReduceOp#MIN}, {@link ReduceOp#MAX}: integers compare signed or unsigned as the
 *       type is. Floating types: the first NaN in rank order wins, quieted (its fp32 or fp64 quiet
 *       bit set), and is then stored as any result is (see the conversions below); otherwise the
 *       smaller (larger) value, where {@code -0.0} and {@code +0.0} compare equal and the earlier
 *       one is kept.</li>
 *   <li>{@link ReduceOp#AVG}: floating types: the fp32 (fp64) sum divided by {@code N} in that
 *       type, one IEEE division rounded to nearest even, then rounded once to the type. Integers:
 *       the wrapped sum divided by {@code N}, truncating toward zero for signed types, unsigned
 *       division for unsigned ones.</li>
 *   <li>A NaN result of {@link ReduceOp#SUM}, {@link ReduceOp#PROD} or {@link ReduceOp#AVG} is
 *       the type's canonical quiet NaN, positive: fp32 {@code 0x7FC00000}, fp64
 *       {@code 0x7FF8000000000000}, fp16 {@code 0x7E00}, bf16 {@code 0x7FC0}, both fp8
 *       {@code 0x7F}. Hardware disagrees on the payload of a NaN that arithmetic produces (x86
 *       keeps the first operand's, NVIDIA GPUs return {@code 0x7FFFFFFF}), so a defined result
 *       needs one.</li>
 * </ul>
 *
 * <p>Conversions (exact from the type to fp32, but that a NaN comes back quiet; from fp32 to the
 * type rounding to nearest, ties to even):
 * <ul>
 *   <li>fp16: IEEE binary16, as {@link Float#float16ToFloat} and {@link Float#floatToFloat16};
 *       beyond the largest finite value it becomes infinity. A NaN becomes a quiet NaN with the
 *       same sign and the top payload bits: fp16 {@code h} to fp32
 *       {@code sign | 0x7FC00000 | (h & 0x3FF) << 13}, fp32 {@code b} to fp16
 *       {@code sign | 0x7E00 | (b >> 13) & 0x3FF}.</li>
 *   <li>bf16: the upper 16 bits of an fp32; a NaN {@code b} becomes {@code (b >> 16) | 0x40}, and
 *       decodes with the fp32 quiet bit set.</li>
 *   <li>fp8 e4m3 (OCP E4M3FN: bias 7, subnormals, no infinities, largest finite 448 =
 *       {@code 0x7E}, NaN {@code 0x7F} and {@code 0xFF}) and e5m2 (bias 15, subnormals,
 *       infinities {@code 0x7C}/{@code 0xFC}, largest finite 57344 = {@code 0x7B}, NaN
 *       {@code 0x7D..0x7F} with either sign): from fp32 with saturation (PTX's {@code satfinite}):
 *       a magnitude that rounds beyond the largest finite value, infinity included, becomes the
 *       largest finite value with its sign, so a reduction never stores an e5m2 infinity; a NaN
 *       becomes {@code 0x7F} with the input's sign bit. e4m3's NaN decodes to
 *       {@code sign | 0x7FF00000}; e5m2 decodes as the fp16 whose upper byte it is, NaNs
 *       included.</li>
 * </ul>
 *
 * <p>Everything runs on the calling thread; the class holds no state but constant tables.
 */
public final class Reductions {

    private static final ValueLayout.OfByte BYTE = ValueLayout.JAVA_BYTE;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble DOUBLE =
            ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * Elements per block: each block of every source is read into arrays that stay in the L1
     * cache before the block of the destination is written, which makes in-place reductions safe
     * and lets the JIT vectorise one tight loop per (type, op) instead of dispatching per element.
     */
    static final int BLOCK = 2048;

    private static final int F32_ABS = 0x7FFF_FFFF;
    private static final int F32_INF = 0x7F80_0000;
    private static final int F32_QUIET = 0x0040_0000;
    private static final long F64_ABS = 0x7FFF_FFFF_FFFF_FFFFL;
    private static final long F64_INF = 0x7FF0_0000_0000_0000L;
    private static final long F64_QUIET = 0x0008_0000_0000_0000L;
    /** fp32 bits of 448, e4m3's largest finite value. */
    private static final int E4M3_MAX_BITS = 0x43E0_0000;
    /** fp32 bits of 57344, e5m2's largest finite value. */
    private static final int E5M2_MAX_BITS = 0x4760_0000;

    /** fp32 bits of every fp8 code, and the same as floats: decoding is a table look-up. */
    private static final int[] E4M3_BITS = new int[256];
    private static final int[] E5M2_BITS = new int[256];
    private static final float[] E4M3_FLOATS = new float[256];
    private static final float[] E5M2_FLOATS = new float[256];

    static {
        for (int c = 0; c < 256; c++) {
            E4M3_BITS[c] = e4m3ToBits(c);
            E5M2_BITS[c] = e5m2ToBits(c);
            E4M3_FLOATS[c] = Float.intBitsToFloat(E4M3_BITS[c]);
            E5M2_FLOATS[c] = Float.intBitsToFloat(E5M2_BITS[c]);
        }
    }

    private Reductions() {
    }

    // ---------------------------------------------------------------------------------------------
    // Scalar conversions

    /** The value of an fp8 e4m3 code; NaN ({@code 0x7F}, {@code 0xFF}) decodes to a quiet NaN of its sign. */
    public static float fp8E4m3ToFloat(byte code) {
        return Float.intBitsToFloat(E4M3_BITS[code & 0xFF]);
    }

    /** The fp8 e4m3 code nearest to {@code value}, ties to even, saturating at ±448; NaN gives {@code 0x7F} with its sign. */
    public static byte floatToFp8E4m3(float value) {
        return (byte) bitsToE4m3(Float.floatToRawIntBits(value));
    }

    /** The value of an fp8 e5m2 code: the fp16 whose upper byte it is. */
    public static float fp8E5m2ToFloat(byte code) {
        return Float.intBitsToFloat(E5M2_BITS[code & 0xFF]);
    }

    /**
     * The fp8 e5m2 code nearest to {@code value}, ties to even, saturating at ±57344 (infinities
     * included); NaN gives {@code 0x7F} with its sign.
     */
    public static byte floatToFp8E5m2(float value) {
        return (byte) bitsToE5m2(Float.floatToRawIntBits(value));
    }

    /** The value of a bfloat16: its bits as the upper half of an fp32; a NaN comes back quiet. */
    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat(bf16ToBits(bits & 0xFFFF));
    }

    /** The bfloat16 nearest to {@code value}, ties to even; a NaN {@code b} gives {@code (b >> 16) | 0x40}. */
    public static short floatToBf16(float value) {
        return (short) bitsToBf16(Float.floatToRawIntBits(value));
    }

    /** {@link Float#float16ToFloat}, except that a NaN comes back quiet, as the class comment says. */
    public static float fp16ToFloat(short bits) {
        return Float.intBitsToFloat(fp16ToBits(bits & 0xFFFF));
    }

    /** {@link Float#floatToFloat16}, except for the payload of a NaN, which the class comment defines. */
    public static short floatToFp16(float value) {
        return (short) bitsToFp16(Float.floatToRawIntBits(value));
    }

    // The conversions on raw bits (element bits in the low bits of an int, fp32 bits as an int):
    // NaN payloads travel in ints, never through a float that a platform could quiet or replace.

    private static boolean isNan(int f32) {
        return (f32 & F32_ABS) > F32_INF;
    }

    private static boolean isNan(long f64) {
        return (f64 & F64_ABS) > F64_INF;
    }

    private static int fp16ToBits(int h) {
        if ((h & 0x7FFF) > 0x7C00) {
            return (h & 0x8000) << 16 | F32_INF | F32_QUIET | (h & 0x3FF) << 13;
        }
        return Float.floatToRawIntBits(Float.float16ToFloat((short) h));
    }

    private static int bitsToFp16(int b) {
        if (isNan(b)) {
            return (b >>> 16 & 0x8000) | 0x7E00 | (b >>> 13 & 0x3FF);
        }
        return Float.floatToFloat16(Float.intBitsToFloat(b)) & 0xFFFF;
    }

    private static int bf16ToBits(int h) {
        int b = h << 16;
        return isNan(b) ? b | F32_QUIET : b;
    }

    private static int bitsToBf16(int b) {
        if (isNan(b)) {
            return (b >>> 16 | 0x40) & 0xFFFF;
        }
        // the carry of a round-up may run into the exponent: the next binade, or infinity
        return (b + 0x7FFF + (b >>> 16 & 1)) >>> 16 & 0xFFFF;
    }

    private static int e4m3ToBits(int c) {
        int sign = (c & 0x80) << 24;
        int e = c >>> 3 & 0xF;
        int m = c & 7;
        if (e == 0xF && m == 7) {
            return sign | F32_INF | F32_QUIET | m << 20;
        }
        if (e == 0) {
            // subnormal: m * 2^-9, exact in fp32
            return sign | Float.floatToRawIntBits(m * 0x1p-9f);
        }
        return sign | (e + 120) << 23 | m << 20;
    }

    private static int bitsToE4m3(int b) {
        int sign = b >>> 24 & 0x80;
        int abs = b & F32_ABS;
        if (abs > F32_INF) {
            return sign | 0x7F;
        }
        // from 448 up every value rounds to 448 or beyond it, which saturates to 448
        if (abs >= E4M3_MAX_BITS) {
            return sign | 0x7E;
        }
        return sign | roundToNarrow(abs, 3, 7);
    }

    private static int e5m2ToBits(int c) {
        return fp16ToBits((c & 0xFF) << 8);
    }

    private static int bitsToE5m2(int b) {
        int sign = b >>> 24 & 0x80;
        int abs = b & F32_ABS;
        if (abs > F32_INF) {
            return sign | 0x7F;
        }
        if (abs >= E5M2_MAX_BITS) {
            return sign | 0x7B;
        }
        return sign | roundToNarrow(abs, 2, 15);
    }

    /**
     * The code (without sign) of a format with {@code mant} mantissa bits and exponent bias
     * {@code bias} nearest to the fp32 magnitude {@code abs}, ties to even; {@code abs} is not NaN
     * and below the format's overflow. reduce.cuh's roundToNarrow is the same algorithm.
     */
    private static int roundToNarrow(int abs, int mant, int bias) {
        int shift = 23 - mant;
        if (abs >= (128 - bias) << 23) {
            // a normal of the format: rebias the exponent and round off the low mantissa bits
            int v = abs - ((127 - bias) << 23);
            return (v + (1 << shift - 1) - 1 + (v >>> shift & 1)) >>> shift;
        }
        int e = abs >>> 23;
        if (e == 0) {
            // zero, or an fp32 subnormal: far below half the format's smallest subnormal
            return 0;
        }
        // a subnormal of the format: count units of its smallest subnormal, 2^(1 - bias - mant)
        int s = 151 - bias - mant - e;
        if (s > 25) {
            return 0;
        }
        int m = (abs & 0x7F_FFFF) | 0x80_0000;
        return (m + (1 << s - 1) - 1 + (m >>> s & 1)) >>> s;
    }

    /** fp32 bits of an element of a floating type of at most 4 bytes, given in the low bits of {@code bits}. */
    private static int toF32Bits(DataType type, int bits) {
        return switch (type) {
            case FLOAT32 -> bits;
            case FLOAT16 -> fp16ToBits(bits & 0xFFFF);
            case BFLOAT16 -> bf16ToBits(bits & 0xFFFF);
            case FP8_E4M3 -> E4M3_BITS[bits & 0xFF];
            case FP8_E5M2 -> E5M2_BITS[bits & 0xFF];
            default -> throw new IllegalArgumentException(type + " has no fp32 accumulator");
        };
    }

    /** The element of a floating type of at most 4 bytes nearest to the fp32 {@code b}, zero-extended. */
    private static int fromF32Bits(DataType type, int b) {
        return switch (type) {
            case FLOAT32 -> b;
            case FLOAT16 -> bitsToFp16(b);
            case BFLOAT16 -> bitsToBf16(b);
            case FP8_E4M3 -> bitsToE4m3(b);
            case FP8_E5M2 -> bitsToE5m2(b);
            default -> throw new IllegalArgumentException(type + " has no fp32 accumulator");
        };
    }

    // ---------------------------------------------------------------------------------------------
    // The scalar reference

    /**
     * One element's reduction, as plainly as it can be written: the reference the fast
     * {@link #reduce} and the device code are tested against. {@code inputBits[r]} is rank
     * {@code r}'s element as raw bits, zero-extended; so is the result.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} (phase "reduce") when
     *                           {@code inputBits} is empty or a value has bits beyond the type's width
     */
    public static long reduceBits(DataType type, ReduceOp op, long[] inputBits) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
        if (inputBits.length == 0) {
            throw invalid("no inputs: a reduction needs at least one");
        }
        int width = type.bytes() * 8;
        for (int r = 0; r < inputBits.length; r++) {
            if (width < 64 && inputBits[r] >>> width != 0) {
                throw invalid("input " + r + " is 0x" + Long.toHexString(inputBits[r]) + ", wider than " + type
                        + "'s " + width + " bits");
            }
        }
        if (!type.isFloatingPoint()) {
            return integerBits(type, op, inputBits);
        }
        return type == DataType.FLOAT64 ? float64Bits(op, inputBits) : float32Bits(type, op, inputBits);
    }

    private static long integerBits(DataType type, ReduceOp op, long[] in) {
        int width = type.bytes() * 8;
        long mask = width == 64 ? -1L : (1L << width) - 1;
        boolean signed = type.isSignedInteger();
        long acc = in[0];
        for (int r = 1; r < in.length; r++) {
            long x = in[r];
            acc = switch (op) {
                case SUM, AVG -> acc + x;
                case PROD -> acc * x;
                case MAX -> compareInteger(x, acc, width, signed) > 0 ? x : acc;
                case MIN -> compareInteger(x, acc, width, signed) < 0 ? x : acc;
            };
            // the low `width` bits of a 64-bit sum or product are those of the wrapped one
            acc &= mask;
        }
        if (op == ReduceOp.AVG) {
            long n = in.length;
            if (signed) {
                acc = signExtend(acc, width) / n;
            } else {
                acc = Long.divideUnsigned(acc, n);
            }
        }
        return acc & mask;
    }

    private static int compareInteger(long a, long b, int width, boolean signed) {
        return signed ? Long.compare(signExtend(a, width), signExtend(b, width)) : Long.compareUnsigned(a, b);
    }

    private static long signExtend(long bits, int width) {
        return bits << (64 - width) >> (64 - width);
    }

    private static long float32Bits(DataType type, ReduceOp op, long[] in) {
        if (op == ReduceOp.MIN || op == ReduceOp.MAX) {
            int acc = toF32Bits(type, (int) in[0]);
            acc = isNan(acc) ? acc | F32_QUIET : acc;
            for (int r = 1; r < in.length && !isNan(acc); r++) {
                int x = toF32Bits(type, (int) in[r]);
                if (isNan(x)) {
                    acc = x | F32_QUIET;
                } else if (op == ReduceOp.MAX ? Float.intBitsToFloat(x) > Float.intBitsToFloat(acc)
                        : Float.intBitsToFloat(x) < Float.intBitsToFloat(acc)) {
                    acc = x;
                }
            }
            return fromF32Bits(type, acc) & 0xFFFF_FFFFL;
        }
        float acc = Float.intBitsToFloat(toF32Bits(type, (int) in[0]));
        for (int r = 1; r < in.length; r++) {
            float x = Float.intBitsToFloat(toF32Bits(type, (int) in[r]));
            acc = op == ReduceOp.PROD ? acc * x : acc + x;
        }
        if (op == ReduceOp.AVG) {
            acc /= in.length;
        }
        // floatToIntBits gives every NaN as the canonical 0x7FC00000
        return fromF32Bits(type, Float.floatToIntBits(acc)) & 0xFFFF_FFFFL;
    }

    private static long float64Bits(ReduceOp op, long[] in) {
        if (op == ReduceOp.MIN || op == ReduceOp.MAX) {
            long acc = isNan(in[0]) ? in[0] | F64_QUIET : in[0];
            for (int r = 1; r < in.length && !isNan(acc); r++) {
                long x = in[r];
                if (isNan(x)) {
                    acc = x | F64_QUIET;
                } else if (op == ReduceOp.MAX ? Double.longBitsToDouble(x) > Double.longBitsToDouble(acc)
                        : Double.longBitsToDouble(x) < Double.longBitsToDouble(acc)) {
                    acc = x;
                }
            }
            return acc;
        }
        double acc = Double.longBitsToDouble(in[0]);
        for (int r = 1; r < in.length; r++) {
            double x = Double.longBitsToDouble(in[r]);
            acc = op == ReduceOp.PROD ? acc * x : acc + x;
        }
        if (op == ReduceOp.AVG) {
            acc /= in.length;
        }
        return Double.doubleToLongBits(acc);
    }

    // ---------------------------------------------------------------------------------------------
    // The fast reduction

    /**
     * Reduces {@code count} elements of {@code type}: {@code dst[i] = op(sources[0][i], ...,
     * sources[N-1][i])} with {@code N = sources.length}, folded in array order, each source's
     * elements starting at the byte offset of the same index in {@code sourceOffsets} and the
     * destination's at {@code dstOffset}; little-endian, no alignment required. {@code dst} may be
     * one of the sources at the same offset (in place): each block of elements is read from every
     * source before it is written. Returns when done; runs on the calling thread.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} (phase "reduce"), before any memory
     *                           is read or written, when {@code count < 0}, {@code sources} is
     *                           empty, {@code sourceOffsets} has another length, a range is outside
     *                           its segment, {@code dst} is read-only, or {@code dst} shares
     *                           memory with a source without being exactly that source's range
     *                           (in place)
     */
    public static void reduce(DataType type, ReduceOp op, MemorySegment[] sources, long[] sourceOffsets,
                              MemorySegment dst, long dstOffset, long count) {
        check(type, op, sources, sourceOffsets, dst, dstOffset, count);
        if (count == 0) {
            return;
        }
        switch (type) {
            case INT8, UINT8, INT32, UINT32 -> reduceInts(type, op, sources, sourceOffsets, dst, dstOffset, count);
            case INT64, UINT64 -> reduceLongs(type, op, sources, sourceOffsets, dst, dstOffset, count);
            case FLOAT64 -> {
                if (op == ReduceOp.MIN || op == ReduceOp.MAX) {
                    selectDoubles(op, sources, sourceOffsets, dst, dstOffset, count);
                } else {
                    reduceDoubles(op, sources, sourceOffsets, dst, dstOffset, count);
                }
            }
            default -> {
                if (op == ReduceOp.MIN || op == ReduceOp.MAX) {
                    selectFloats(type, op, sources, sourceOffsets, dst, dstOffset, count);
                } else {
                    reduceFloats(type, op, sources, sourceOffsets, dst, dstOffset, count);
                }
            }
        }
    }

    private static void check(DataType type, ReduceOp op, MemorySegment[] sources, long[] sourceOffsets,
                              MemorySegment dst, long dstOffset, long count) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
        Objects.requireNonNull(dst, "dst");
        if (count < 0) {
            throw invalid("count is " + count + "; it must be 0 or more");
        }
        if (sources.length == 0) {
            throw invalid("no sources: a reduction needs at least one");
        }
        if (sourceOffsets.length != sources.length) {
            throw invalid(sources.length + " sources but " + sourceOffsets.length + " source offsets");
        }
        if (count > Long.MAX_VALUE / type.bytes()) {
            throw invalid(count + " elements of " + type + " are more bytes than a long counts");
        }
        long bytes = count * type.bytes();
        if (dst.isReadOnly()) {
            throw invalid("the destination segment is read-only");
        }
        MemorySegment to = range("the destination", dst, dstOffset, bytes, count, type);
        for (int s = 0; s < sources.length; s++) {
            MemorySegment source = Objects.requireNonNull(sources[s], "source " + s);
            MemorySegment from = range("source " + s, source, sourceOffsets[s], bytes, count, type);
            // two ranges of the same length share all their bytes exactly when they are the same range
            Optional<MemorySegment> overlap = to.asOverlappingSlice(from);
            if (overlap.isPresent() && overlap.get().byteSize() != bytes) {
                throw invalid("the destination (offset " + dstOffset + ") overlaps source " + s + " (offset "
                        + sourceOffsets[s] + ") without starting where it does; only an exactly in-place "
                        + "source may share memory with the destination");
            }
        }
    }

    private static MemorySegment range(String what, MemorySegment segment, long offset, long bytes, long count,
                                       DataType type) {
        if (offset < 0 || offset > segment.byteSize() - bytes) {
            throw invalid(what + "'s " + count + " elements of " + type + " at byte offset " + offset + " ("
                    + bytes + " bytes) do not fit its segment of " + segment.byteSize() + " bytes");
        }
        return segment.asSlice(offset, bytes);
    }

    private static JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("reduce").build();
    }

    // Integers of 1 and 4 bytes, in int lanes: sign- or zero-extended, so that signed Math.min/max
    // order them; uint32 is offset by 2^31 (the sign bit flipped) while it is compared.

    /**
     * Converts {@code count} values of a floating {@code type} at {@code srcOffset} to float32 at
     * {@code dstOffset} (exact: every fp16, bf16 and fp8 value is a float32). With
     * {@link #fromFloat32}, lets a reduction that runs in several steps accumulate in float32 and
     * round to the type once, as a single-step reduction does.
     *
     * @throws IllegalArgumentException when {@code type} is not FLOAT16, BFLOAT16, FP8_E4M3, FP8_E5M2
     *                                  or FLOAT32, or a range is outside its segment
     */
    public static void toFloat32(DataType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset,
                                 long count) {
        checkConversion(type, src, srcOffset, dst, dstOffset, count);
        convert(type, true, src, srcOffset, dst, dstOffset, count);
    }

    /**
     * Converts {@code count} float32 values at {@code srcOffset} to {@code type} at
     * {@code dstOffset}, each rounded once (to nearest even; NaN stays NaN), as a reduction stores
     * its result.
     *
     * @throws IllegalArgumentException as {@link #toFloat32}
     */
    public static void fromFloat32(DataType type, MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset,
                                   long count) {
        checkConversion(type, dst, dstOffset, src, srcOffset, count);
        convert(type, false, src, srcOffset, dst, dstOffset, count);
    }

    /** {@link #toFloat32} ({@code widen}) or {@link #fromFloat32}, block by block, on checked ranges. */
    private static void convert(DataType type, boolean widen, MemorySegment src, long srcOffset, MemorySegment dst,
                                long dstOffset, long count) {
        int size = type.bytes();
        int block = (int) Math.min(Math.max(count, 1), BLOCK);
        float[] values = new float[block];
        short[] shorts = new short[size == 2 ? block : 0];
        byte[] bytes = new byte[size == 1 ? block : 0];
        for (long done = 0; done < count; done += block) {
            int len = (int) Math.min(block, count - done);
            if (widen) {
                loadFloats(type, src, srcOffset + done * size, values, shorts, bytes, len);
                MemorySegment.copy(values, 0, dst, FLOAT, dstOffset + done * 4, len);
            } else {
                MemorySegment.copy(src, FLOAT, srcOffset + done * 4, values, 0, len);
                storeFloats(type, values, shorts, bytes, dst, dstOffset + done * size, len);
            }
        }
    }

    private static void checkConversion(DataType type, MemorySegment narrow, long narrowOffset, MemorySegment wide,
                                        long wideOffset, long count) {
        switch (type) {
            case FLOAT16, BFLOAT16, FP8_E4M3, FP8_E5M2, FLOAT32 -> { }
            default -> throw new IllegalArgumentException("not a float32-widenable type: " + type);
        }
        if (count < 0 || narrowOffset < 0 || wideOffset < 0
                || narrowOffset > narrow.byteSize() - count * type.bytes()
                || wideOffset > wide.byteSize() - count * 4) {
            throw new IllegalArgumentException("range outside its segment: " + count + " values of " + type + " at "
                    + narrowOffset + " of " + narrow.byteSize() + " bytes, as float32 at " + wideOffset + " of "
                    + wide.byteSize() + " bytes");
        }
    }

    private static void reduceInts(DataType type, ReduceOp op, MemorySegment[] sources, long[] offsets,
                                   MemorySegment dst, long dstOffset, long count) {
        int size = type.bytes();
        int block = (int) Math.min(count, BLOCK);
        int[] acc = new int[block];
        int[] in = new int[block];
        byte[] bytes = new byte[size == 1 ? block : 0];
        int flip = type == DataType.UINT32 && (op == ReduceOp.MIN || op == ReduceOp.MAX) ? Integer.MIN_VALUE : 0;
        int n = sources.length;
        for (long done = 0; done < count; done += block) {
            int len = (int) Math.min(block, count - done);
            loadInts(type, sources[0], offsets[0] + done * size, acc, bytes, len, flip);
            for (int s = 1; s < n; s++) {
                loadInts(type, sources[s], offsets[s] + done * size, in, bytes, len, flip);
                switch (op) {
                    case SUM, AVG -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] += in[i];
                        }
                    }
                    case PROD -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] *= in[i];
                        }
                    }
                    case MAX -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] = Math.max(acc[i], in[i]);
                        }
                    }
                    case MIN -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] = Math.min(acc[i], in[i]);
                        }
                    }
                }
            }
            if (op == ReduceOp.AVG) {
                switch (type) {
                    case INT8 -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] = (byte) acc[i] / n;
                        }
                    }
                    case UINT8 -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] = (acc[i] & 0xFF) / n;
                        }
                    }
                    case INT32 -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] /= n;
                        }
                    }
                    default -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] = Integer.divideUnsigned(acc[i], n);
                        }
                    }
                }
            }
            long at = dstOffset + done * size;
            if (size == 1) {
                for (int i = 0; i < len; i++) {
                    bytes[i] = (byte) acc[i];
                }
                MemorySegment.copy(bytes, 0, dst, BYTE, at, len);
            } else {
                if (flip != 0) {
                    for (int i = 0; i < len; i++) {
                        acc[i] ^= flip;
                    }
                }
                MemorySegment.copy(acc, 0, dst, INT, at, len);
            }
        }
    }

    private static void loadInts(DataType type, MemorySegment segment, long offset, int[] to, byte[] bytes, int len,
                                 int flip) {
        switch (type) {
            case INT8 -> {
                MemorySegment.copy(segment, BYTE, offset, bytes, 0, len);
                for (int i = 0; i < len; i++) {
                    to[i] = bytes[i];
                }
            }
            case UINT8 -> {
                MemorySegment.copy(segment, BYTE, offset, bytes, 0, len);
                for (int i = 0; i < len; i++) {
                    to[i] = bytes[i] & 0xFF;
                }
            }
            default -> {
                MemorySegment.copy(segment, INT, offset, to, 0, len);
                if (flip != 0) {
                    for (int i = 0; i < len; i++) {
                        to[i] ^= flip;
                    }
                }
            }
        }
    }

    private static void reduceLongs(DataType type, ReduceOp op, MemorySegment[] sources, long[] offsets,
                                    MemorySegment dst, long dstOffset, long count) {
        int block = (int) Math.min(count, BLOCK);
        long[] acc = new long[block];
        long[] in = new long[block];
        long flip = type == DataType.UINT64 && (op == ReduceOp.MIN || op == ReduceOp.MAX) ? Long.MIN_VALUE : 0;
        int n = sources.length;
        for (long done = 0; done < count; done += block) {
            int len = (int) Math.min(block, count - done);
            loadLongs(sources[0], offsets[0] + done * 8, acc, len, flip);
            for (int s = 1; s < n; s++) {
                loadLongs(sources[s], offsets[s] + done * 8, in, len, flip);
                switch (op) {
                    case SUM, AVG -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] += in[i];
                        }
                    }
                    case PROD -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] *= in[i];
                        }
                    }
                    case MAX -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] = Math.max(acc[i], in[i]);
                        }
                    }
                    case MIN -> {
                        for (int i = 0; i < len; i++) {
                            acc[i] = Math.min(acc[i], in[i]);
                        }
                    }
                }
            }
            if (op == ReduceOp.AVG) {
                if (type == DataType.INT64) {
                    for (int i = 0; i < len; i++) {
                        acc[i] /= n;
                    }
                } else {
                    for (int i = 0; i < len; i++) {
                        acc[i] = Long.divideUnsigned(acc[i], n);
                    }
                }
            }
            if (flip != 0) {
                for (int i = 0; i < len; i++) {
                    acc[i] ^= flip;
                }
            }
            MemorySegment.copy(acc, 0, dst, LONG, dstOffset + done * 8, len);
        }
    }

    private static void loadLongs(MemorySegment segment, long offset, long[] to, int len, long flip) {
        MemorySegment.copy(segment, LONG, offset, to, 0, len);
        if (flip != 0) {
            for (int i = 0; i < len; i++) {
                to[i] ^= flip;
            }
        }
    }

    // Floating types of at most 4 bytes: sums, products and averages in float lanes; min and max in
    // int lanes of fp32 bits, where the NaN that wins keeps its payload.

    private static void reduceFloats(DataType type, ReduceOp op, MemorySegment[] sources, long[] offsets,
                                     MemorySegment dst, long dstOffset, long count) {
        int size = type.bytes();
        int block = (int) Math.min(count, BLOCK);
        float[] acc = new float[block];
        float[] in = new float[block];
        short[] shorts = new short[size == 2 ? block : 0];
        byte[] bytes = new byte[size == 1 ? block : 0];
        int n = sources.length;
        for (long done = 0; done < count; done += block) {
            int len = (int) Math.min(block, count - done);
            loadFloats(type, sources[0], offsets[0] + done * size, acc, shorts, bytes, len);
            for (int s = 1; s < n; s++) {
                loadFloats(type, sources[s], offsets[s] + done * size, in, shorts, bytes, len);
                if (op == ReduceOp.PROD) {
                    for (int i = 0; i < len; i++) {
                        acc[i] *= in[i];
                    }
                } else {
                    for (int i = 0; i < len; i++) {
                        acc[i] += in[i];
                    }
                }
            }
            if (op == ReduceOp.AVG) {
                float d = n;
                for (int i = 0; i < len; i++) {
                    acc[i] /= d;
                }
            }
            storeFloats(type, acc, shorts, bytes, dst, dstOffset + done * size, len);
        }
    }

    /** Stores {@code len} accumulated values into {@code dst} at {@code at}, each rounded once to {@code type}. */
    private static void storeFloats(DataType type, float[] acc, short[] shorts, byte[] bytes, MemorySegment dst,
                                    long at, int len) {
        // Float.floatToIntBits gives every NaN as the canonical 0x7FC00000
        switch (type) {
            case FLOAT32 -> {
                for (int i = 0; i < len; i++) {
                    if (acc[i] != acc[i]) {
                        acc[i] = Float.NaN;
                    }
                }
                MemorySegment.copy(acc, 0, dst, FLOAT, at, len);
            }
            case FLOAT16 -> {
                for (int i = 0; i < len; i++) {
                    shorts[i] = (short) bitsToFp16(Float.floatToIntBits(acc[i]));
                }
                MemorySegment.copy(shorts, 0, dst, SHORT, at, len);
            }
            case BFLOAT16 -> {
                for (int i = 0; i < len; i++) {
                    shorts[i] = (short) bitsToBf16(Float.floatToIntBits(acc[i]));
                }
                MemorySegment.copy(shorts, 0, dst, SHORT, at, len);
            }
            case FP8_E4M3 -> {
                for (int i = 0; i < len; i++) {
                    bytes[i] = (byte) bitsToE4m3(Float.floatToIntBits(acc[i]));
                }
                MemorySegment.copy(bytes, 0, dst, BYTE, at, len);
            }
            default -> {
                for (int i = 0; i < len; i++) {
                    bytes[i] = (byte) bitsToE5m2(Float.floatToIntBits(acc[i]));
                }
                MemorySegment.copy(bytes, 0, dst, BYTE, at, len);
            }
        }
    }

    private static void loadFloats(DataType type, MemorySegment segment, long offset, float[] to, short[] shorts,
                                   byte[] bytes, int len) {
        switch (type) {
            case FLOAT32 -> MemorySegment.copy(segment, FLOAT, offset, to, 0, len);
            case FLOAT16 -> {
                MemorySegment.copy(segment, SHORT, offset, shorts, 0, len);
                for (int i = 0; i < len; i++) {
                    to[i] = Float.float16ToFloat(shorts[i]);
                }
            }
            case BFLOAT16 -> {
                MemorySegment.copy(segment, SHORT, offset, shorts, 0, len);
                for (int i = 0; i < len; i++) {
                    to[i] = Float.intBitsToFloat(shorts[i] << 16);
                }
            }
            case FP8_E4M3 -> {
                MemorySegment.copy(segment, BYTE, offset, bytes, 0, len);
                for (int i = 0; i < len; i++) {
                    to[i] = E4M3_FLOATS[bytes[i] & 0xFF];
                }
            }
            default -> {
                MemorySegment.copy(segment, BYTE, offset, bytes, 0, len);
                for (int i = 0; i < len; i++) {
                    to[i] = E5M2_FLOATS[bytes[i] & 0xFF];
                }
            }
        }
    }

    private static void selectFloats(DataType type, ReduceOp op, MemorySegment[] sources, long[] offsets,
                                     MemorySegment dst, long dstOffset, long count) {
        int size = type.bytes();
        int block = (int) Math.min(count, BLOCK);
        int[] acc = new int[block];
        int[] in = new int[block];
        short[] shorts = new short[size == 2 ? block : 0];
        byte[] bytes = new byte[size == 1 ? block : 0];
        boolean max = op == ReduceOp.MAX;
        for (long done = 0; done < count; done += block) {
            int len = (int) Math.min(block, count - done);
            loadF32Bits(type, sources[0], offsets[0] + done * size, acc, shorts, bytes, len);
            for (int i = 0; i < len; i++) {
                if (isNan(acc[i])) {
                    acc[i] |= F32_QUIET;
                }
            }
            for (int s = 1; s < sources.length; s++) {
                loadF32Bits(type, sources[s], offsets[s] + done * size, in, shorts, bytes, len);
                // without branches: NaNs in the data must not cost a misprediction each
                for (int i = 0; i < len; i++) {
                    int a = acc[i];
                    int x = in[i];
                    boolean xNan = isNan(x);
                    boolean take = !isNan(a) && (xNan || (max ? Float.intBitsToFloat(x) > Float.intBitsToFloat(a)
                            : Float.intBitsToFloat(x) < Float.intBitsToFloat(a)));
                    acc[i] = take ? x | (xNan ? F32_QUIET : 0) : a;
                }
            }
            long at = dstOffset + done * size;
            switch (size) {
                case 4 -> MemorySegment.copy(acc, 0, dst, INT, at, len);
                case 2 -> {
                    for (int i = 0; i < len; i++) {
                        shorts[i] = (short) fromF32Bits(type, acc[i]);
                    }
                    MemorySegment.copy(shorts, 0, dst, SHORT, at, len);
                }
                default -> {
                    for (int i = 0; i < len; i++) {
                        bytes[i] = (byte) fromF32Bits(type, acc[i]);
                    }
                    MemorySegment.copy(bytes, 0, dst, BYTE, at, len);
                }
            }
        }
    }

    private static void loadF32Bits(DataType type, MemorySegment segment, long offset, int[] to, short[] shorts,
                                    byte[] bytes, int len) {
        switch (type.bytes()) {
            case 4 -> MemorySegment.copy(segment, INT, offset, to, 0, len);
            case 2 -> {
                MemorySegment.copy(segment, SHORT, offset, shorts, 0, len);
                for (int i = 0; i < len; i++) {
                    to[i] = toF32Bits(type, shorts[i] & 0xFFFF);
                }
            }
            default -> {
                MemorySegment.copy(segment, BYTE, offset, bytes, 0, len);
                int[] table = type == DataType.FP8_E4M3 ? E4M3_BITS : E5M2_BITS;
                for (int i = 0; i < len; i++) {
                    to[i] = table[bytes[i] & 0xFF];
                }
            }
        }
    }

    private static void reduceDoubles(ReduceOp op, MemorySegment[] sources, long[] offsets, MemorySegment dst,
                                      long dstOffset, long count) {
        int block = (int) Math.min(count, BLOCK);
        double[] acc = new double[block];
        double[] in = new double[block];
        int n = sources.length;
        for (long done = 0; done < count; done += block) {
            int len = (int) Math.min(block, count - done);
            MemorySegment.copy(sources[0], DOUBLE, offsets[0] + done * 8, acc, 0, len);
            for (int s = 1; s < n; s++) {
                MemorySegment.copy(sources[s], DOUBLE, offsets[s] + done * 8, in, 0, len);
                if (op == ReduceOp.PROD) {
                    for (int i = 0; i < len; i++) {
                        acc[i] *= in[i];
                    }
                } else {
                    for (int i = 0; i < len; i++) {
                        acc[i] += in[i];
                    }
                }
            }
            if (op == ReduceOp.AVG) {
                double d = n;
                for (int i = 0; i < len; i++) {
                    acc[i] /= d;
                }
            }
            for (int i = 0; i < len; i++) {
                if (acc[i] != acc[i]) {
                    acc[i] = Double.NaN;
                }
            }
            MemorySegment.copy(acc, 0, dst, DOUBLE, dstOffset + done * 8, len);
        }
    }

    private static void selectDoubles(ReduceOp op, MemorySegment[] sources, long[] offsets, MemorySegment dst,
                                      long dstOffset, long count) {
        int block = (int) Math.min(count, BLOCK);
        long[] acc = new long[block];
        long[] in = new long[block];
        boolean max = op == ReduceOp.MAX;
        for (long done = 0; done < count; done += block) {
            int len = (int) Math.min(block, count - done);
            MemorySegment.copy(sources[0], LONG, offsets[0] + done * 8, acc, 0, len);
            for (int i = 0; i < len; i++) {
                if (isNan(acc[i])) {
                    acc[i] |= F64_QUIET;
                }
            }
            for (int s = 1; s < sources.length; s++) {
                MemorySegment.copy(sources[s], LONG, offsets[s] + done * 8, in, 0, len);
                for (int i = 0; i < len; i++) {
                    long a = acc[i];
                    long x = in[i];
                    boolean xNan = isNan(x);
                    boolean take = !isNan(a) && (xNan || (max ? Double.longBitsToDouble(x) > Double.longBitsToDouble(a)
                            : Double.longBitsToDouble(x) < Double.longBitsToDouble(a)));
                    acc[i] = take ? x | (xNan ? F64_QUIET : 0) : a;
                }
            }
            MemorySegment.copy(acc, 0, dst, LONG, dstOffset + done * 8, len);
        }
    }
}
