package org.jmscclpp.samples;

/**
 * The values every collective run is checked with, as pure functions of (seed, rank, index): the
 * Java twin of the {@code colldata} functions of {@code kernels/coll_data.cu}, bit for bit (a test
 * compiles the CUDA ones for the CPU and compares). Element bits travel as an {@code int}; 2-byte
 * types use its low 16 bits.
 *
 * <ul>
 *   <li>Element {@code i} of rank {@code r}'s input comes from {@link #word}: element {@code i} of
 *       a splitmix64 sequence whose state starts at a value mixed from (seed, r).</li>
 *   <li>Allreduce inputs make every sum exact in every type and order: float types hold random
 *       multiples of 1/4 in [−2, 2) (sums of up to 64 stay exact even in bfloat16), int32 random
 *       even values (the sum wraps).</li>
 *   <li>The other kinds move any bits except the poison.</li>
 *   <li>The poison is all ones ({@code 0xFFFF}, {@code 0xFFFFFFFF}): a NaN in every float type and
 *       odd as an int32, so no input of a data-moving kind and no allreduce result holds it.</li>
 * </ul>
 */
final class CollectiveValues {

    static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private CollectiveValues() {
    }

    /** The code coll_data.cu's kernels take for {@code kind}. */
    static int kindCode(CollectiveKind kind) {
        return switch (kind) {
            case ALLREDUCE -> 0;
            case ALLGATHER -> 1;
            case ALLTOALL -> 2;
            case SENDRECV -> 3;
        };
    }

    /** splitmix64's finalizer. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The mixed start of rank {@code rank}'s sequence in the run of {@code seed}. */
    static long base(long seed, int rank) {
        return mix(seed + GOLDEN * ((long) rank + 1));
    }

    /** 64 random bits of element {@code index} of rank {@code rank}'s input. */
    static long word(long seed, int rank, long index) {
        return mix(base(seed, rank) + GOLDEN * (index + 1));
    }

    static int poison(DataType type) {
        return type.bytes() == 2 ? 0xFFFF : 0xFFFFFFFF;
    }

    /** Any bits of the element's width but the poison. */
    static int rawBits(DataType type, long w) {
        int b = (int) w & poison(type);
        return b == poison(type) ? b ^ 1 : b;
    }

    /** An allreduce input of a float type is {@code quarters(w) / 4}, in [−2, 2). */
    static int quarters(long w) {
        return (int) (w >>> 60) - 8;
    }

    /** The bits of {@code q / 4} in the float type {@code type}, rounded to nearest even (built from the integer, as the CUDA twin does). */
    static int quartersToBits(DataType type, long q) {
        int mbits = switch (type) {
            case FLOAT32 -> 23;
            case FLOAT16 -> 10;
            case BFLOAT16 -> 7;
            case INT32 -> throw new IllegalArgumentException("int32 is not a float type");
        };
        int ebits = type == DataType.FLOAT16 ? 5 : 8;
        int width = type == DataType.FLOAT32 ? 32 : 16;
        int sign = q < 0 ? 1 << (width - 1) : 0;
        long m = Math.abs(q);
        if (m == 0) {
            return 0;
        }
        int h = 63 - Long.numberOfLeadingZeros(m);
        int e = h - 2;
        long frac;
        if (h <= mbits) {
            frac = m << (mbits - h);
        } else {
            int shift = h - mbits;
            long rest = m & ((1L << shift) - 1);
            long half = 1L << (shift - 1);
            frac = m >>> shift;
            if (rest > half || (rest == half && (frac & 1) != 0)) {
                frac++;
            }
            if ((frac >>> (mbits + 1)) != 0) {
                frac >>>= 1;
                e++;
            }
        }
        int biased = e + (1 << (ebits - 1)) - 1;
        int maxExponent = (1 << ebits) - 1;
        if (biased >= maxExponent) {
            return sign | (maxExponent << mbits);
        }
        return sign | (biased << mbits) | ((int) frac & ((1 << mbits) - 1));
    }

    static int reduceInputBits(DataType type, long w) {
        return type == DataType.INT32 ? (int) w & ~1 : quartersToBits(type, quarters(w));
    }

    /** Elements of one rank's input for {@code count}. */
    static long inputElements(CollectiveKind kind, int n, long count) {
        return kind == CollectiveKind.ALLTOALL ? count * n : count;
    }

    /** Elements of one rank's output for {@code count}. */
    static long outputElements(CollectiveKind kind, int n, long count) {
        return kind == CollectiveKind.ALLGATHER || kind == CollectiveKind.ALLTOALL ? count * n : count;
    }

    /** Element {@code index} of rank {@code rank}'s input. */
    static int inputBits(CollectiveKind kind, DataType type, long seed, int rank, long index) {
        long w = word(seed, rank, index);
        return kind == CollectiveKind.ALLREDUCE ? reduceInputBits(type, w) : rawBits(type, w);
    }

    /** The allreduce result of element {@code index} over {@code n} ranks: wrapping for int32, exact for float types. */
    static int reducedBits(DataType type, long seed, int n, long index) {
        if (type == DataType.INT32) {
            int sum = 0;
            for (int p = 0; p < n; p++) {
                sum += reduceInputBits(type, word(seed, p, index));
            }
            return sum;
        }
        long q = 0;
        for (int p = 0; p < n; p++) {
            q += quarters(word(seed, p, index));
        }
        return quartersToBits(type, q);
    }

    /** Output element {@code e} of rank {@code rank} after a correct run. */
    static int expectedBits(CollectiveKind kind, DataType type, long seed, int n, int rank, long count, long e) {
        return switch (kind) {
            case ALLREDUCE -> reducedBits(type, seed, n, e);
            case ALLGATHER -> inputBits(kind, type, seed, (int) (e / count), e % count);
            case ALLTOALL -> inputBits(kind, type, seed, (int) (e / count), rank * count + e % count);
            case SENDRECV -> inputBits(kind, type, seed, (rank + n - 1) % n, e);
        };
    }

    /** Equal bits; for an allreduce of a float type, +0 and −0 match too (kernels sum in any order from any start). */
    static boolean matches(CollectiveKind kind, DataType type, int expected, int actual) {
        if (expected == actual) {
            return true;
        }
        if (kind != CollectiveKind.ALLREDUCE || type == DataType.INT32) {
            return false;
        }
        int magnitude = type == DataType.FLOAT32 ? 0x7FFFFFFF : 0x7FFF;
        return (expected & magnitude) == 0 && (actual & magnitude) == 0;
    }
}
