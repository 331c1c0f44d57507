package org.jmscclpp.samples;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Element-wise sums for the host allreduce, one rounding per addition as a GPU's {@code a + b}
 * does: float32 in float, float16 through float ({@link Float#float16ToFloat}, rounded back to
 * nearest even by {@link Float#floatToFloat16}), bfloat16 as the upper 16 bits of a float rounded
 * to nearest even, int32 wrapping.
 */
final class HostReduce {

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private HostReduce() {
    }

    /** {@code acc[i] += src[i]} for {@code elements} elements of {@code type} at the given byte offsets. */
    static void accumulate(DataType type, MemorySegment acc, long accOffset, MemorySegment src, long srcOffset,
                           long elements) {
        switch (type) {
            case INT32 -> {
                for (long i = 0; i < elements; i++) {
                    long a = accOffset + 4 * i;
                    acc.set(INT, a, acc.get(INT, a) + src.get(INT, srcOffset + 4 * i));
                }
            }
            case FLOAT32 -> {
                for (long i = 0; i < elements; i++) {
                    long a = accOffset + 4 * i;
                    acc.set(FLOAT, a, acc.get(FLOAT, a) + src.get(FLOAT, srcOffset + 4 * i));
                }
            }
            case FLOAT16 -> {
                for (long i = 0; i < elements; i++) {
                    long a = accOffset + 2 * i;
                    float sum = Float.float16ToFloat(acc.get(SHORT, a)) + Float.float16ToFloat(src.get(SHORT,
                            srcOffset + 2 * i));
                    acc.set(SHORT, a, Float.floatToFloat16(sum));
                }
            }
            case BFLOAT16 -> {
                for (long i = 0; i < elements; i++) {
                    long a = accOffset + 2 * i;
                    float sum = bf16ToFloat(acc.get(SHORT, a)) + bf16ToFloat(src.get(SHORT, srcOffset + 2 * i));
                    acc.set(SHORT, a, floatToBf16(sum));
                }
            }
        }
    }

    static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** The bfloat16 nearest to {@code v}, ties to even; NaN stays a (quiet) NaN. */
    static short floatToBf16(float v) {
        int bits = Float.floatToRawIntBits(v);
        if ((bits & 0x7FFFFFFF) > 0x7F800000) {
            return (short) ((bits >>> 16) | 0x40);
        }
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }
}
