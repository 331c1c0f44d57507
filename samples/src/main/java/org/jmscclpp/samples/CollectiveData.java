package org.jmscclpp.samples;

import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * The data one rank's runs of a {@link Collective} are checked with: before each run,
 * {@link #prepare} writes this rank's input, drawn fresh from a seed, and poisons every output
 * element the run must write; after it, {@link #check} compares every output element with what a
 * correct run leaves. Values and poison are {@link CollectiveValues}': element {@code i} of rank
 * {@code r}'s input is a pure function of (seed, r, i), so every rank knows every rank's data
 * without exchanging it; allreduce sums are exact in every type; the poison (all ones) is a value
 * no run can produce.
 *
 * <p>On the host backend the values are computed in Java and moved through the backend's copies
 * ({@link HostCollectiveData}). On the CUDA backend they are computed by the kernels of
 * {@code kernels/coll_data.cu} enqueued on the collective's {@link Collective#stream()}
 * ({@link CudaCollectiveData}), so {@link #prepare} returns without waiting and the run enqueued
 * after it sees the data. Not thread-safe: one rank's thread drives it.
 */
final class CollectiveData implements AutoCloseable {

    /** What moves the values: Java and the backend's copies, or kernels on a stream. */
    interface Engine extends AutoCloseable {
        /** Writes {@code elements} of the poison into {@code out} from offset 0. */
        void poison(DeviceBuffer out, DataType type, long elements);

        /** Writes this rank's input for the run at {@code byteOffset} of {@code dst}. */
        void input(DeviceBuffer dst, long byteOffset, CollectiveKind kind, DataType type, int n, int rank, long count,
                   long seed);

        /** Output elements of {@code out} that differ from a correct run's, after the run finished. */
        long check(DeviceBuffer out, CollectiveKind kind, DataType type, int n, int rank, long count, long seed);

        @Override
        void close();
    }

    private final Collective collective;
    private final int rank;
    private final int n;
    private final Engine engine;

    private CollectiveData(Collective collective, int rank, int n, Engine engine) {
        this.collective = collective;
        this.rank = rank;
        this.n = n;
        this.engine = engine;
    }

    /**
     * Data for {@code c}'s runs on this rank. On the CUDA backend loads the kernels (compiling them
     * on first use) and uses {@code c.stream()}; INVALID_USAGE when the collective has no stream there.
     */
    static CollectiveData create(Collective c, CollectiveSetup setup) {
        Engine engine = "cuda".equals(setup.backend().name())
                ? CudaCollectiveData.create(c, setup)
                : new HostCollectiveData(setup.backend());
        return new CollectiveData(c, setup.rank(), setup.size(), engine);
    }

    /**
     * Writes this rank's input for the run of {@code seed} (with {@code inPlace}, into the output
     * where the kind reads it: the whole buffer for allreduce, slice {@code rank} for allgather)
     * and poisons every output element the run must write. On CUDA it is enqueued on the
     * collective's stream and this returns at once.
     *
     * @throws JmscclppException INVALID_USAGE when the run does not fit the collective's buffers,
     *         {@code count} is negative, or in-place is asked of a kind without it
     */
    void prepare(long count, DataType type, boolean inPlace, long seed) {
        CollectiveKind kind = collective.kind();
        checkRun(count, type, inPlace, "prepare");
        long outputElements = CollectiveValues.outputElements(kind, n, count);
        if (outputElements == 0) {
            return;
        }
        engine.poison(collective.output(), type, outputElements);
        if (inPlace) {
            long offset = kind == CollectiveKind.ALLGATHER ? rank * count * type.bytes() : 0;
            engine.input(collective.output(), offset, kind, type, n, rank, count, seed);
        } else {
            engine.input(collective.input(), 0, kind, type, n, rank, count, seed);
        }
    }

    /**
     * After the run of {@code seed} finished on this rank (on CUDA: was enqueued; this waits for
     * the stream, up to the setup's timeout): the number of this rank's output elements that
     * differ from a correct run's, every element checked. In-place and out-of-place runs leave the
     * same output.
     *
     * @throws JmscclppException INVALID_USAGE as {@link #prepare}; on CUDA TIMEOUT or SYSTEM_ERROR
     *         when the stream did not finish or failed
     */
    long check(long count, DataType type, boolean inPlace, long seed) {
        checkRun(count, type, inPlace, "check");
        if (CollectiveValues.outputElements(collective.kind(), n, count) == 0) {
            return 0;
        }
        return engine.check(collective.output(), collective.kind(), type, n, rank, count, seed);
    }

    private void checkRun(long count, DataType type, boolean inPlace, String phase) {
        CollectiveKind kind = collective.kind();
        if (count < 0) {
            throw invalid("a count of " + count + " elements", phase);
        }
        if (inPlace && !kind.hasInPlace()) {
            throw invalid(kind.label() + " has no in-place variant", phase);
        }
        long inputBytes = CollectiveValues.inputElements(kind, n, count) * type.bytes();
        long outputBytes = CollectiveValues.outputElements(kind, n, count) * type.bytes();
        if (kind.size(count, n, type) > collective.maxSize() || outputBytes > collective.output().size()
                || (!inPlace && inputBytes > collective.input().size())) {
            throw invalid(count + " elements of " + type + " (" + outputBytes + " output bytes) exceed the "
                    + collective.algorithm() + " " + kind.label() + "'s buffers (" + collective.maxSize() + " bytes)",
                    phase);
        }
    }

    private JmscclppException invalid(String detail, String phase) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(rank)
                .phase("collective data " + phase).build();
    }

    /** Frees what the data made (the CUDA counter); the collective and its buffers stay. */
    @Override
    public void close() {
        engine.close();
    }
}
