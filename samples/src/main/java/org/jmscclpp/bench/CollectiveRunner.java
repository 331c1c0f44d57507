package org.jmscclpp.samples;

import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.jmscclpp.bench.BenchStats;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.CudaGraph;
import org.jmscclpp.nativebridge.CudaStream;

/**
 * Runs a {@link Collective} over a sweep of sizes the way nccl-tests does, on one rank of a job
 * whose every rank runs the same sweep: what {@code jmscclpp bench coll} and the collective samples
 * measure with.
 *
 * <p>Per size S (the kind's meaning of it) and placement (out-of-place, then in-place where the
 * kind has it):
 * <ol>
 *   <li>{@code checkIters} checks, each after a barrier and with a fresh seed that rank 0 draws and
 *       broadcasts over the bootstrap: {@link CollectiveData#prepare}, synchronize, a barrier (so no
 *       peer's run writes into an output before its poison landed), one enqueue, synchronize,
 *       {@link CollectiveData#check}; the wrong elements of every check are summed over the ranks;</li>
 *   <li>the timing: {@code warmup} enqueues and a synchronize, a barrier, then {@code iters}
 *       enqueues back to back and one synchronize; time = wall time / iters ({@link Timing}
 *       decides how the enqueues happen: one by one, or replays of a captured CUDA graph). The
 *       time is averaged over the ranks.</li>
 * </ol>
 * Every rank gets every result (an allGather per row), so every rank can tell whether any failed.
 */
final class CollectiveRunner {

    private CollectiveRunner() {
    }

    /**
     * What to run.
     *
     * @param sizes      the sizes S in bytes, in order
     * @param type       the element type
     * @param warmup     untimed enqueues before each timing
     * @param iters      timed enqueues
     * @param checkIters checked runs per size and placement; 0 checks nothing ({@code #wrong} is N/A)
     */
    record Plan(List<Long> sizes, DataType type, int warmup, int iters, int checkIters) {
        Plan {
            sizes = List.copyOf(sizes);
        }
    }

    /**
     * One row of one placement.
     *
     * @param implementation {@code jmscclpp} or {@code nccl}
     * @param size           S in bytes, after the count's rounding
     * @param timeUs         the time per operation in µs, averaged over the ranks
     * @param wrong          wrong elements summed over the ranks and the checks, -1 when unchecked
     */
    record Measurement(String implementation, String algorithm, CollectiveKind kind, long size, long count,
                       DataType type, boolean inPlace, double timeUs, long wrong) {
    }

    /** How the timed enqueues are issued; returns the nanoseconds of {@code iters} operations (after warm-up and barrier). */
    @FunctionalInterface
    interface Timing {
        long time(Collective c, long count, DataType type, boolean inPlace, int warmup, int iters, Runnable barrier);

        /** nccl-tests' default: warm-up enqueues, synchronize, barrier, {@code iters} enqueues back to back, one synchronize. */
        static Timing direct(Duration timeout) {
            return (c, count, type, inPlace, warmup, iters, barrier) -> {
                for (int i = 0; i < warmup; i++) {
                    c.enqueue(count, type, inPlace);
                }
                c.synchronize(timeout);
                barrier.run();
                long t0 = System.nanoTime();
                for (int i = 0; i < iters; i++) {
                    c.enqueue(count, type, inPlace);
                }
                c.synchronize(timeout);
                return System.nanoTime() - t0;
            };
        }

        /**
         * nccl-tests' {@code -G}: warm-up enqueues and a synchronize, then the {@code iters} enqueues
         * captured once into a {@link CudaGraph} on the collective's stream, one untimed replay (the
         * graph's upload), the barrier, {@code launches} replays back to back and one synchronize;
         * returns the time of {@code iters} operations (the whole over {@code launches}).
         *
         * @throws JmscclppException INVALID_USAGE for a collective without a stream (the host backend)
         */
        static Timing graph(int launches, Duration timeout) {
            return (c, count, type, inPlace, warmup, iters, barrier) -> {
                CudaStream stream = c.stream();
                if (stream == null) {
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the " + c.algorithm() + " collective"
                            + " has no CUDA stream to capture a graph on").phase("graph").build();
                }
                for (int i = 0; i < warmup; i++) {
                    c.enqueue(count, type, inPlace);
                }
                c.synchronize(timeout);
                try (CudaGraph graph = CudaGraph.capture(stream, () -> {
                    for (int i = 0; i < iters; i++) {
                        c.enqueue(count, type, inPlace);
                    }
                })) {
                    graph.launch(stream);
                    c.synchronize(timeout);
                    barrier.run();
                    long t0 = System.nanoTime();
                    for (int g = 0; g < launches; g++) {
                        graph.launch(stream);
                    }
                    c.synchronize(timeout);
                    return (System.nanoTime() - t0) / launches;
                }
            };
        }
    }

    /**
     * Runs {@code plan} through {@code c} and returns every row (the same on every rank), handing each
     * to {@code onRow} as soon as it is known. Sizes whose count rounds to 0 elements are skipped.
     *
     * @throws JmscclppException INVALID_USAGE when a size exceeds {@code c.maxSize()}; a collective's or
     *                           the bootstrap's own errors
     */
    static List<Measurement> run(String implementation, Collective c, CollectiveData data, CollectiveSetup setup,
                                 Plan plan, Timing timing, Consumer<Measurement> onRow) {
        int n = setup.size();
        CollectiveKind kind = c.kind();
        List<Measurement> rows = new ArrayList<>();
        for (long requested : plan.sizes()) {
            long count = kind.count(requested, n, plan.type());
            if (count == 0) {
                continue;
            }
            long size = kind.size(count, n, plan.type());
            if (size > c.maxSize()) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "size " + size + " exceeds the "
                        + c.algorithm() + " collective's maximum of " + c.maxSize()).rank(setup.rank())
                        .phase("collective runner").build();
            }
            for (boolean inPlace : kind.hasInPlace() ? List.of(false, true) : List.of(false)) {
                long wrong = 0;
                for (int k = 0; k < plan.checkIters(); k++) {
                    // a peer may still read this rank's input or write its output in the run before
                    // (a get-based reduce-scatter, the timed runs): nobody rewrites them until all are done
                    barrier(setup, "check " + size);
                    long seed = agreeOnSeed(setup);
                    data.prepare(count, plan.type(), inPlace, seed);
                    // a peer's run may write into this rank's output as soon as it starts (a put-based
                    // allgather has no handshake first): every rank's poison must have landed before any run
                    c.synchronize(setup.timeout());
                    barrier(setup, "prepared " + size);
                    c.enqueue(count, plan.type(), inPlace);
                    c.synchronize(setup.timeout());
                    wrong += data.check(count, plan.type(), inPlace, seed);
                }
                long ns = plan.iters() == 0 ? 0 : timing.time(c, count, plan.type(), inPlace, plan.warmup(),
                        plan.iters(), () -> barrier(setup, "timing " + size));
                double timeUs = plan.iters() == 0 ? 0 : ns / 1e3 / plan.iters();
                long[] all = gather(setup, Double.doubleToRawLongBits(timeUs), wrong);
                double sum = 0;
                long wrongSum = 0;
                for (int r = 0; r < n; r++) {
                    sum += Double.longBitsToDouble(all[2 * r]);
                    wrongSum += all[2 * r + 1];
                }
                Measurement m = new Measurement(implementation, c.algorithm(), kind, size, count, plan.type(),
                        inPlace, sum / n, plan.checkIters() == 0 ? -1 : wrongSum);
                rows.add(m);
                onRow.accept(m);
            }
        }
        return rows;
    }

    /** Rank 0's fresh random seed, on every rank. */
    static long agreeOnSeed(CollectiveSetup setup) {
        byte[] mine = ByteBuffer.allocate(Long.BYTES).putLong(new SecureRandom().nextLong()).array();
        byte[] root = Blocking.value(setup.bootstrap().broadcast(0, mine, setup.timeout()),
                setup.timeout().plusSeconds(5), setup.rank(), "seed");
        return ByteBuffer.wrap(root).getLong();
    }

    /** Every rank's two values, rank by rank. */
    private static long[] gather(CollectiveSetup setup, long a, long b) {
        Bootstrap bs = setup.bootstrap();
        byte[] all = Blocking.value(bs.allGather(BenchStats.toBytes(new long[] {a, b}), setup.timeout()),
                setup.timeout().plusSeconds(5), setup.rank(), "gather results");
        long[] out = new long[2 * setup.size()];
        long[][] split = BenchStats.split(all, setup.size());
        for (int r = 0; r < split.length; r++) {
            out[2 * r] = split[r][0];
            out[2 * r + 1] = split[r][1];
        }
        return out;
    }

    static void barrier(CollectiveSetup setup, String phase) {
        Blocking.done(setup.bootstrap().barrier(setup.timeout()), setup.timeout().plusSeconds(5), setup.rank(),
                "barrier (" + phase + ")");
    }
}
