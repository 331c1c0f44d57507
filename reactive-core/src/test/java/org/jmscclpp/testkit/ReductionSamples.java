package org.jmscclpp.testkit;

import java.util.Random;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.Reductions;

/**
 * Element bits to reduce in tests: random values of every {@link DataType}, mixed with the values
 * where reductions go wrong (NaNs of both kinds and signs, infinities, signed zeros, subnormals,
 * the extremes of each type, fp8's largest finite values). Used by {@code ReductionsTest} here and
 * by native-bridge's check of the device header against {@link Reductions}.
 */
public final class ReductionSamples {

    private ReductionSamples() {
    }

    /** The special values of {@code type}, as raw bits zero-extended. */
    public static long[] specials(DataType type) {
        return switch (type) {
            case INT8, UINT8 -> new long[] {0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFE, 0xFF};
            case INT32, UINT32 -> new long[] {0, 1, 2, 0x7FFF_FFFFL, 0x8000_0000L, 0x8000_0001L, 0xFFFF_FFFEL,
                    0xFFFF_FFFFL};
            case INT64, UINT64 -> new long[] {0, 1, 2, Long.MAX_VALUE, Long.MIN_VALUE, Long.MIN_VALUE + 1, -2, -1};
            case FLOAT16 -> new long[] {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0xFD55, 0x7FFF,
                    0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x1000, 0x3555};
            case BFLOAT16 -> new long[] {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFFA5, 0x7FFF,
                    0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x3F80, 0xBF80, 0x3F81, 0x3B80};
            case FLOAT32 -> new long[] {0x0000_0000L, 0x8000_0000L, 0x7F80_0000L, 0xFF80_0000L, 0x7FC0_0000L,
                    0xFFC0_0000L, 0x7F80_0001L, 0xFFA1_2345L, 0x7FFF_FFFFL, 0x0000_0001L, 0x8000_0001L,
                    0x007F_FFFFL, 0x0080_0000L, 0x7F7F_FFFFL, 0xFF7F_FFFFL, 0x3F80_0000L, 0xBF80_0000L,
                    0x3380_0000L, 0x477F_F000L, 0x43E0_0000L, 0x4760_0000L, 0x43E8_0000L, 0x4770_0000L};
            case FLOAT64 -> new long[] {0, 0x8000_0000_0000_0000L, 0x7FF0_0000_0000_0000L, 0xFFF0_0000_0000_0000L,
                    0x7FF8_0000_0000_0000L, 0xFFF8_0000_0000_0000L, 0x7FF0_0000_0000_0001L,
                    0xFFF4_0000_1234_5678L, 0x7FFF_FFFF_FFFF_FFFFL, 1, 0x8000_0000_0000_0001L,
                    0x000F_FFFF_FFFF_FFFFL, 0x0010_0000_0000_0000L, 0x7FEF_FFFF_FFFF_FFFFL,
                    0xFFEF_FFFF_FFFF_FFFFL, 0x3FF0_0000_0000_0000L, 0xBFF0_0000_0000_0000L,
                    0x3CA0_0000_0000_0000L};
            // e4m3: zeros, NaNs, largest finite, subnormals, smallest normal, one, values near the top
            case FP8_E4M3 -> new long[] {0x00, 0x80, 0x7F, 0xFF, 0x7E, 0xFE, 0x7D, 0x01, 0x81, 0x07, 0x08, 0x38,
                    0xB8, 0x77, 0x30};
            // e5m2: zeros, infinities, the three NaNs, largest finite, subnormals, smallest normal, one
            case FP8_E5M2 -> new long[] {0x00, 0x80, 0x7C, 0xFC, 0x7D, 0x7E, 0x7F, 0xFF, 0x7B, 0xFB, 0x7A, 0x01,
                    0x81, 0x03, 0x04, 0x3C, 0xBC, 0x38};
        };
    }

    /**
     * One random element of {@code type}: a special value one time in four, otherwise uniform
     * bits for integers and the 8- and 16-bit floats, and for fp32 and fp64 a value of random
     * sign and mantissa within a few binades of 1, so that sums and products of several stay
     * finite and round in interesting ways.
     */
    public static long randomBits(DataType type, Random random) {
        if (random.nextInt(4) == 0) {
            long[] specials = specials(type);
            return specials[random.nextInt(specials.length)];
        }
        return switch (type) {
            case FLOAT32 -> (random.nextBoolean() ? 0x8000_0000L : 0)
                    | (long) (127 - 12 + random.nextInt(25)) << 23 | random.nextInt(1 << 23);
            case FLOAT64 -> (random.nextBoolean() ? 0x8000_0000_0000_0000L : 0)
                    | (long) (1023 - 12 + random.nextInt(25)) << 52 | (random.nextLong() >>> 12);
            default -> {
                int width = type.bytes() * 8;
                yield width == 64 ? random.nextLong() : random.nextLong() >>> (64 - width);
            }
        };
    }
}
