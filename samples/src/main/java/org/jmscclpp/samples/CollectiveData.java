package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * The data of one rank's runs of a {@link Collective}: {@link #prepare} writes inputs drawn from a
 * seed that every rank shares (so every rank knows every other rank's input) and poisons the
 * output, {@link #check} reads the whole output back and counts the elements that differ from what
 * the kind ({@link CollectiveKind}) says they must hold.
 *
 * <p>Inputs are small integers in [-4, 4] in every type: sums over up to 64 ranks are exact in
 * half and bfloat16 as well, so allreduce is checked exactly too. The poison byte {@code 0x7f}
 * reads as a value far outside that range (or a NaN) in every type.
 */
final class CollectiveData implements AutoCloseable {

    private static final byte POISON = 0x7f;

    private final Collective collective;
    private final Backend backend;
    private final int rank;
    private final int n;

    private CollectiveData(Collective collective, CollectiveSetup setup) {
        this.collective = collective;
        this.backend = setup.backend();
        this.rank = setup.rank();
        this.n = setup.size();
    }

    /** The data of {@code c}'s runs on this rank of {@code setup}. */
    static CollectiveData create(Collective c, CollectiveSetup setup) {
        return new CollectiveData(c, setup);
    }

    /**
     * Poisons the output's first S bytes, then writes this rank's input for {@code seed}: into the
     * input buffer, or with {@code inPlace} where the kind reads it in the output buffer.
     */
    void prepare(long count, DataType type, boolean inPlace, long seed) {
        CollectiveKind kind = collective.kind();
        long outBytes = kind.outputBytes(count, n, type);
        long inBytes = kind.inputBytes(count, n, type);
        checkSize(outBytes, inBytes);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment poison = arena.allocate(outBytes);
            poison.fill(POISON);
            backend.copyFromHost(collective.output(), 0, poison);
            MemorySegment input = arena.allocate(inBytes, 8);
            long elements = inBytes / type.bytes();
            for (long i = 0; i < elements; i++) {
                put(input, i, type, value(seed, rank, i));
            }
            if (!inPlace) {
                backend.copyFromHost(collective.input(), 0, input);
            } else {
                long at = kind == CollectiveKind.ALLGATHER ? rank * inBytes : 0;
                backend.copyFromHost(collective.output(), at, input);
            }
        }
    }

    /** The number of output elements (of S) that do not hold what the run of {@code seed} must leave. */
    long check(long count, DataType type, boolean inPlace, long seed) {
        CollectiveKind kind = collective.kind();
        long outBytes = kind.outputBytes(count, n, type);
        checkSize(outBytes, kind.inputBytes(count, n, type));
        long wrong = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment output = arena.allocate(outBytes, 8);
            backend.copyToHost(output, collective.output(), 0);
            long elements = outBytes / type.bytes();
            for (long i = 0; i < elements; i++) {
                if (get(output, i, type) != expected(kind, count, i, seed)) {
                    wrong++;
                }
            }
        }
        return wrong;
    }

    /** What output element {@code i} must hold. */
    private int expected(CollectiveKind kind, long count, long i, long seed) {
        return switch (kind) {
            case ALLREDUCE -> {
                int sum = 0;
                for (int r = 0; r < n; r++) {
                    sum += value(seed, r, i);
                }
                yield sum;
            }
            // slice q holds rank q's input
            case ALLGATHER -> value(seed, (int) (i / count), i % count);
            // block q came from rank q, out of its block for this rank
            case ALLTOALL -> value(seed, (int) (i / count), rank * count + i % count);
            case SENDRECV -> value(seed, Math.floorMod(rank - 1, n), i);
        };
    }

    private void checkSize(long outBytes, long inBytes) {
        if (outBytes > collective.output().size() || inBytes > collective.input().size()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a run of " + outBytes + " output bytes does"
                    + " not fit the collective's buffers of " + collective.output().size() + " bytes").rank(rank)
                    .phase("collective data").build();
        }
    }

    /** Input element {@code index} of rank {@code owner} in the run of {@code seed}: an integer in [-4, 4]. */
    static int value(long seed, int owner, long index) {
        long z = seed + 0x9E3779B97F4A7C15L * (owner + 1) + 0xBF58476D1CE4E5B9L * index;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return (int) Math.floorMod(z, 9L) - 4;
    }

    private static void put(MemorySegment s, long i, DataType type, int v) {
        switch (type) {
            case INT32 -> s.setAtIndex(ValueLayout.JAVA_INT, i, v);
            case FLOAT32 -> s.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
            case FLOAT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT, i, Float.floatToFloat16(v));
            case BFLOAT16 -> s.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) (Float.floatToRawIntBits(v) >>> 16));
        }
    }

    /**
     * Element {@code i} as an integer; a floating-point element that is not one (a NaN, a fraction,
     * the poison) reads as {@link Integer#MIN_VALUE}, which no expected value equals.
     */
    private static int get(MemorySegment s, long i, DataType type) {
        if (type == DataType.INT32) {
            return s.getAtIndex(ValueLayout.JAVA_INT, i);
        }
        float f = switch (type) {
            case INT32, FLOAT32 -> s.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            case FLOAT16 -> Float.float16ToFloat(s.getAtIndex(ValueLayout.JAVA_SHORT, i));
            case BFLOAT16 -> Float.intBitsToFloat(s.getAtIndex(ValueLayout.JAVA_SHORT, i) << 16);
        };
        return f == Math.rint(f) && Math.abs(f) < 1 << 24 ? (int) f : Integer.MIN_VALUE;
    }

    @Override
    public void close() {
        // the buffers are the collective's; there is nothing of this object's own to release
    }
}
