package org.jmscclpp.samples;

import java.time.Duration;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaStream;
import org.jspecify.annotations.Nullable;

/**
 * The data one rank's {@link CollectiveRun}s are checked with: before each run, {@link #prepare}
 * poisons the region the run writes and writes this rank's input, drawn fresh from a seed; after
 * it, {@link #check} compares every output element with what a correct run leaves. Values and
 * poison are {@link CollectiveValues}': element {@code i} of rank {@code r}'s input is a pure
 * function of (seed, r, i), so every rank knows every rank's data without exchanging it, and every
 * expected output is exact.
 *
 * <p>On the host backend the values are computed in Java ({@link HostCollectiveData}), expected
 * reductions by {@link org.jmscclpp.core.collective.Reductions}. On the CUDA backend they are
 * computed on the GPU by the kernels of {@code kernels/coll_data.cu} enqueued on a stream
 * ({@link CudaCollectiveData}), expected reductions by {@code jmscclpp::Reducer}: {@link #prepare}
 * returns without waiting, and work enqueued after it on the same stream sees the data; work on
 * another stream must wait for {@link #awaitPrepared()}. Not thread-safe: one rank's thread drives it.
 */
public final class CollectiveData implements AutoCloseable {

    /** What moves the values: Java and the backend's memory, or kernels on a stream. */
    interface Engine extends AutoCloseable {
        /** Writes {@code elements} of the poison into {@code out} from offset 0. */
        void poison(DeviceBuffer out, DataType type, long elements);

        /** Writes this rank's {@link CollectiveRun#sendElements()} input elements into {@code dst} from offset 0. */
        void input(DeviceBuffer dst, CollectiveRun run, int rank, long seed);

        /** Waits until what {@link #poison} and {@link #input} started is in memory. */
        void await();

        /** Output elements of {@code out} (its first {@link CollectiveRun#recvElements()}) that differ from a correct run's. */
        long check(DeviceBuffer out, CollectiveRun run, int rank, long seed);

        @Override
        void close();
    }

    private final int rank;
    private final Engine engine;

    private CollectiveData(int rank, Engine engine) {
        this.rank = rank;
        this.engine = engine;
    }

    /**
     * Data for rank {@code rank}'s runs on {@code backend}: on the CUDA backend the kernels,
     * enqueued on {@code stream} (required there), loaded (compiled on first use) per type and
     * reduction as runs need them, with {@code timeout} for each wait on the stream; in Java
     * elsewhere.
     *
     * @throws JmscclppException INVALID_USAGE for the CUDA backend without a stream
     */
    public static CollectiveData create(Backend backend, @Nullable CudaStream stream, int rank, Duration timeout) {
        if (backend instanceof CudaBackend cuda) {
            if (stream == null) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the data of CUDA collective runs is made by"
                        + " kernels on a stream, and none was given").rank(rank).phase("collective data").build();
            }
            return new CollectiveData(rank, new CudaCollectiveData(cuda, stream, timeout));
        }
        return new CollectiveData(rank, new HostCollectiveData(backend));
    }

    /**
     * Poisons the region {@code run} writes in {@code buffers} ({@link CollectiveBuffers#poisonOf})
     * and writes this rank's input of the run of {@code seed} where the run reads it (in place,
     * over the poison). On CUDA it is enqueued and this returns at once.
     */
    public void prepare(CollectiveRun run, CollectiveBuffers buffers, long seed) {
        DeviceBuffer poisoned = buffers.poisonOf(run, rank);
        engine.poison(poisoned, run.type(), poisoned.size() / run.type().bytes());
        if (run.readsSend(rank)) {
            engine.input(buffers.sendOf(run, rank), run, rank, seed);
        }
    }

    /** Waits until what {@link #prepare} started is in memory (on CUDA: the stream got there; TIMEOUT or SYSTEM_ERROR otherwise). */
    public void awaitPrepared() {
        engine.await();
    }

    /**
     * After the run of {@code seed} finished on this rank (on CUDA: was enqueued on the data's
     * stream, or finished on another): the number of this rank's output elements that differ from
     * a correct run's, every element checked; 0 on a rank without an output (a reduce's non-roots).
     * On CUDA this waits for the stream.
     */
    public long check(CollectiveRun run, CollectiveBuffers buffers, long seed) {
        if (!run.writesRecv(rank)) {
            return 0;
        }
        return engine.check(buffers.recvOf(run, rank), run, rank, seed);
    }

    /** Frees what the data made (the CUDA counter, the Java staging); the buffers stay. */
    @Override
    public void close() {
        engine.close();
    }
}
