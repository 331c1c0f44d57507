package org.jmscclpp.samples;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.Reductions;
import org.jspecify.annotations.Nullable;

/**
 * The values every collective run is checked with, as pure functions of (seed, rank, index): the
 * Java twin of the {@code colldata} functions of {@code kernels/coll_data.cu}, bit for bit (a test
 * compiles the CUDA ones for the CPU with nvcc and compares). Element bits travel as a
 * {@code long}, zero-extended from the type's width.
 *
 * <p>Element {@code i} of rank {@code r}'s input comes from {@link #word}: element {@code i} of a
 * splitmix64 sequence whose state starts at a value mixed from (seed, r). What the bits become
 * depends on the run (kind, type, reduction, rank count n), so that every result is exact and no
 * result is the poison:
 * <ul>
 *   <li>Kinds that move data (allgather, broadcast, alltoall, sendrecv): any bits but the poison.</li>
 *   <li>Reductions of floating types: every partial result, in any order and any accumulator at
 *       least as wide as the type, is exactly representable in the type, so any correct
 *       implementation (this project's kernels fold in rank order, NCCL in its own order) gives
 *       the same bits. Sum, avg, min and max: {@code k · 2^s} with an integer {@code k} in
 *       [−K, K), K = 2^p / n for the type's p significant bits, and one exponent {@code s} in
 *       {−2, −1, 0} per index ({@link #unitExponent}, the same on every rank): every sum of up to n
 *       inputs is a multiple of 2^s of at most 2^p units (with more ranks than 2^p, K = 1 and only
 *       ranks below 2^p have non-zero inputs). Products: ±2^e with e in
 *       {−1, 0, 1} (just ±1 where n times 1 would leave the type's range), so every partial
 *       product is a power of two. Averages divide the exact sum once; NCCL premultiplies by 1/n,
 *       which agrees where n is a power of two.</li>
 *   <li>Reductions of integer types (wrapping, order-free): sum of even values (so the result is
 *       even), product of values ≡ 1 mod 4 (so ≡ 1 mod 4), min and max of any bits but the
 *       poison, avg of non-negative values below 2^(w−1) / 2^ceil(log2 n) (so the sum never
 *       wraps and the average is below 2^(w−1)).</li>
 *   <li>The poison is all ones: a NaN in every floating type (results are never NaN: the inputs
 *       are finite and every partial result exact), odd as a sum result, ≡ 3 mod 4 as a product,
 *       at least 2^(w−1) (−1 when signed) as an average; so an output element the run failed to
 *       write never passes the check.</li>
 * </ul>
 * Expected outputs are what {@link Reductions} computes from the inputs in rank order: the
 * definition every engine of the library follows to the bit.
 */
public final class CollectiveValues {

    static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private static final ValueLayout.OfByte BYTE = ValueLayout.JAVA_BYTE;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private CollectiveValues() {
    }

    /** splitmix64's finalizer. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** 64 random bits of element {@code index} of rank {@code rank}'s input in the run of {@code seed}; rank −1 is the per-index stream. */
    static long word(long seed, int rank, long index) {
        long base = mix(seed + GOLDEN * ((long) rank + 1));
        return mix(base + GOLDEN * (index + 1));
    }

    /** The exponent s in {−2, −1, 0} of the unit of floating inputs at {@code index}, the same on every rank. */
    static int unitExponent(long seed, long index) {
        return (int) Long.remainderUnsigned(word(seed, -1, index), 3) - 2;
    }

    /** The bits of one element of {@code type}: its width's mask. */
    static long mask(DataType type) {
        return type.bytes() == 8 ? -1L : (1L << (8 * type.bytes())) - 1;
    }

    /** All ones in the type's width: what outputs hold before a run. */
    public static long poison(DataType type) {
        return mask(type);
    }

    /** ceil(log2 n) for n ≥ 1. */
    static int ceilLog2(int n) {
        return 32 - Integer.numberOfLeadingZeros(n - 1);
    }

    /** Significant bits (the implicit one included) of a floating type. */
    static int significandBits(DataType type) {
        return switch (type) {
            case FP8_E4M3 -> 4;
            case FP8_E5M2 -> 3;
            case FLOAT16 -> 11;
            case BFLOAT16 -> 8;
            case FLOAT32 -> 24;
            case FLOAT64 -> 53;
            default -> throw new IllegalArgumentException(type + " is not a floating type");
        };
    }

    static int exponentBias(DataType type) {
        return switch (type) {
            case FP8_E4M3 -> 7;
            case FP8_E5M2, FLOAT16 -> 15;
            case BFLOAT16, FLOAT32 -> 127;
            case FLOAT64 -> 1023;
            default -> throw new IllegalArgumentException(type + " is not a floating type");
        };
    }

    /** The largest |e| for which 2^e and 2^−e are both values of the type (capped at 64: jobs are smaller). */
    static int powerRange(DataType type) {
        return switch (type) {
            case FP8_E4M3 -> 8;
            case FP8_E5M2, FLOAT16 -> 15;
            default -> 64;
        };
    }

    /** The bits of {@code ±m · 2^e} in {@code type}, for 1 ≤ m ≤ 2^p and a result that is a normal number: exact. */
    static long floatBits(DataType type, boolean negative, long m, int e) {
        int mbits = significandBits(type) - 1;
        int width = type.bytes() * 8;
        int h = 63 - Long.numberOfLeadingZeros(m);
        long frac = h <= mbits ? (m << (mbits - h)) & ((1L << mbits) - 1) : 0;
        long biased = h + e + exponentBias(type);
        long sign = negative ? 1L << (width - 1) : 0;
        return (sign | biased << mbits | frac) & mask(type);
    }

    /** Any bits of the type's width but the poison. */
    static long rawBits(DataType type, long w) {
        long b = w & mask(type);
        return b == mask(type) ? b ^ 1 : b;
    }

    /** Element {@code index} of rank {@code rank}'s input in a run of {@code kind}, {@code type}, {@code op} on {@code n} ranks. */
    public static long inputBits(CollectiveKind kind, DataType type, @Nullable ReduceOp op, int n, long seed, int rank,
                                 long index) {
        long w = word(seed, rank, index);
        if (!kind.reduces() || op == null) {
            return rawBits(type, w);
        }
        if (!type.isFloatingPoint()) {
            long m = mask(type);
            return switch (op) {
                case SUM -> w & m & ~1L;
                case PROD -> (w & m & ~3L) | 1L;
                case MAX, MIN -> rawBits(type, w);
                case AVG -> w & (m >>> (1 + ceilLog2(n)));
            };
        }
        if (op == ReduceOp.PROD) {
            boolean negative = w < 0;
            int e = n <= powerRange(type) ? (int) Long.remainderUnsigned(w & Long.MAX_VALUE, 3) - 1 : 0;
            return floatBits(type, negative, 1, e);
        }
        long units = (1L << significandBits(type)) / n;
        if (units == 0) {
            // more ranks than the type has units: only the first 2^p ranks contribute, one unit at most
            if (rank >= 1 << significandBits(type)) {
                return 0;
            }
            units = 1;
        }
        long k = Long.remainderUnsigned(w, 2 * units) - units;
        return k == 0 ? 0 : floatBits(type, k < 0, Math.abs(k), unitExponent(seed, index));
    }

    /** The reduction of element {@code index} over the n ranks' inputs, in rank order ({@link Reductions#reduceBits}). */
    static long reducedBits(CollectiveRun run, long seed, long index) {
        long[] in = new long[run.n()];
        for (int q = 0; q < in.length; q++) {
            in[q] = inputBits(run.kind(), run.type(), run.op(), run.n(), seed, q, index);
        }
        return Reductions.reduceBits(run.type(), Objects.requireNonNull(run.op()), in);
    }

    /**
     * Output element {@code e} of rank {@code rank} after a correct run (for a rank that
     * {@linkplain CollectiveRun#writesRecv gets an output}): the reduction of index e (allreduce,
     * reduce) or rank × count + e (reducescatter), the root's element e (broadcast), element
     * e mod count of rank e / count (allgather) or its element rank × count + e mod count
     * (alltoall), rank − 1's element e (sendrecv).
     */
    public static long expectedBits(CollectiveRun run, long seed, int rank, long e) {
        long c = run.count();
        return switch (run.kind()) {
            case ALL_REDUCE, REDUCE -> reducedBits(run, seed, e);
            case REDUCE_SCATTER -> reducedBits(run, seed, rank * c + e);
            case BROADCAST -> input(run, seed, run.root(), e);
            case ALL_GATHER -> input(run, seed, (int) (e / c), e % c);
            case ALL_TO_ALL -> input(run, seed, (int) (e / c), rank * c + e % c);
            case SEND, RECV -> input(run, seed, run.previous(rank), e);
        };
    }

    private static long input(CollectiveRun run, long seed, int rank, long index) {
        return inputBits(run.kind(), run.type(), run.op(), run.n(), seed, rank, index);
    }

    /** Writes {@code m} input elements of {@code rank} from index {@code first} into {@code dst} from offset 0. */
    static void writeInputs(CollectiveRun run, long seed, int rank, long first, long m, MemorySegment dst) {
        int w = run.type().bytes();
        for (long i = 0; i < m; i++) {
            put(dst, w, i, input(run, seed, rank, first + i));
        }
    }

    /**
     * Writes the expected output elements {@code [first, first + m)} of {@code rank} into
     * {@code dst} from offset 0: reductions through {@link Reductions#reduce} over per-rank rows of
     * inputs written into {@code rows} ({@code n} slices of {@code m} elements each), the rest
     * element by element.
     */
    static void writeExpected(CollectiveRun run, long seed, int rank, long first, long m, MemorySegment dst,
                              MemorySegment rows) {
        int w = run.type().bytes();
        if (!run.kind().reduces()) {
            for (long i = 0; i < m; i++) {
                put(dst, w, i, expectedBits(run, seed, rank, first + i));
            }
            return;
        }
        long from = run.kind() == CollectiveKind.REDUCE_SCATTER ? rank * run.count() + first : first;
        MemorySegment[] sources = new MemorySegment[run.n()];
        long[] offsets = new long[run.n()];
        for (int q = 0; q < run.n(); q++) {
            sources[q] = rows.asSlice(q * m * w, m * w);
            writeInputs(run, seed, q, from, m, sources[q]);
        }
        Reductions.reduce(run.type(), Objects.requireNonNull(run.op()), sources, offsets, dst, 0, m);
    }

    /** Element {@code index} of {@code s}, zero-extended. */
    static long get(MemorySegment s, int width, long index) {
        return switch (width) {
            case 1 -> s.get(BYTE, index) & 0xFFL;
            case 2 -> s.get(SHORT, index * 2) & 0xFFFFL;
            case 4 -> s.get(INT, index * 4) & 0xFFFF_FFFFL;
            default -> s.get(LONG, index * 8);
        };
    }

    static void put(MemorySegment s, int width, long index, long bits) {
        switch (width) {
            case 1 -> s.set(BYTE, index, (byte) bits);
            case 2 -> s.set(SHORT, index * 2, (short) bits);
            case 4 -> s.set(INT, index * 4, (int) bits);
            default -> s.set(LONG, index * 8, bits);
        }
    }
}
