package org.jmscclpp.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.cuda.CudaGraph;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.samples.CollectiveJob;
import org.jmscclpp.samples.CollectiveRun;

/**
 * Runs {@link CollTarget}s over a sweep of sizes the way nccl-tests does, on one rank of a job
 * whose every rank runs the same sweep: what {@code jmscclpp bench coll} measures with. The targets
 * (jmscclpp on registered buffers, on staged ones, NCCL) take turns per size and placement, so each
 * comparison is made under the same conditions (the JIT, the clocks, the other processes).
 *
 * <p>Per size S (see {@link CollectiveRun}), placement (out of place, then in place where the kind
 * has it) and target (where it offers the placement):
 * <ol>
 *   <li>{@code checkIters} checked runs ({@link CollectiveJob#checkedRun}: fresh inputs from a seed
 *       rank 0 draws, poisoned outputs, every output element checked); the wrong elements of every
 *       check are summed over the ranks;</li>
 *   <li>the timing: {@code warmup} issues and a synchronize, a barrier, then {@code iters} issues back
 *       to back and one synchronize; time = wall time / iters ({@link Timing} decides how the issues
 *       happen: one by one, or replays of a captured CUDA graph). The time is averaged over the
 *       ranks.</li>
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
     * @param warmup     untimed issues before each timing
     * @param iters      timed issues
     * @param checkIters checked runs per size and placement; 0 checks nothing ({@code #wrong} is N/A)
     */
    record Plan(List<Long> sizes, int warmup, int iters, int checkIters) {
        Plan {
            sizes = List.copyOf(sizes);
        }
    }

    /**
     * One row of one placement.
     *
     * @param implementation {@code jmscclpp}, {@code jmscclpp-staged} or {@code nccl}
     * @param size           S in bytes, after the count's rounding
     * @param timeUs         the time per operation in µs, averaged over the ranks
     * @param wrong          wrong elements summed over the ranks and the checks, -1 when unchecked
     */
    record Measurement(String implementation, String algorithm, CollectiveKind kind, long size, long count,
                       DataType type, boolean inPlace, double timeUs, long wrong) {
    }

    /** How the timed issues happen; returns the nanoseconds of {@code iters} runs (after warm-up and barrier). */
    @FunctionalInterface
    interface Timing {
        long time(CollTarget t, CollectiveRun run, int warmup, int iters, Runnable barrier);

        /** nccl-tests' default: warm-up issues, synchronize, barrier, {@code iters} issues back to back, one synchronize. */
        static Timing direct() {
            return (t, run, warmup, iters, barrier) -> {
                for (int i = 0; i < warmup; i++) {
                    t.issue(run);
                }
                t.synchronize();
                barrier.run();
                long t0 = System.nanoTime();
                for (int i = 0; i < iters; i++) {
                    t.issue(run);
                }
                t.synchronize();
                return System.nanoTime() - t0;
            };
        }

        /**
         * nccl-tests' {@code -G}: warm-up issues and a synchronize, then the {@code iters} issues
         * captured once into a {@link CudaGraph} on the target's stream, one untimed replay (the
         * graph's upload), the barrier, {@code launches} replays back to back and one synchronize;
         * returns the time of {@code iters} runs (the whole over {@code launches}).
         *
         * @throws JmscclppException INVALID_USAGE for a target without a stream (the host backend)
         */
        static Timing graph(int launches) {
            return (t, run, warmup, iters, barrier) -> {
                CudaStream stream = t.stream();
                if (stream == null) {
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, t.implementation() + " has no CUDA"
                            + " stream to capture a graph on").phase("graph").build();
                }
                for (int i = 0; i < warmup; i++) {
                    t.issue(run);
                }
                t.synchronize();
                try (CudaGraph graph = CudaGraph.capture(stream, () -> {
                    for (int i = 0; i < iters; i++) {
                        t.issue(run);
                    }
                })) {
                    graph.launch(stream);
                    t.synchronize();
                    barrier.run();
                    long t0 = System.nanoTime();
                    for (int g = 0; g < launches; g++) {
                        graph.launch(stream);
                    }
                    t.synchronize();
                    return (System.nanoTime() - t0) / launches;
                }
            };
        }
    }

    /**
     * Runs {@code plan} through {@code targets}, each size's run made by {@code runOfSize}, and
     * returns every row (the same on every rank), handing each to {@code onRow} as soon as it is
     * known. Sizes whose count rounds to 0 elements are skipped.
     *
     * @throws JmscclppException INVALID_USAGE when a size exceeds a target's buffers; the targets'
     *                           or the bootstrap's own errors
     */
    static List<Measurement> run(List<? extends CollTarget> targets, CollectiveJob job, Plan plan,
                                 LongFunction<CollectiveRun> runOfSize, Timing timing, Consumer<Measurement> onRow) {
        List<Measurement> rows = new ArrayList<>();
        for (long requested : plan.sizes()) {
            CollectiveRun out = runOfSize.apply(requested);
            if (out.count() == 0) {
                continue;
            }
            for (CollTarget target : targets) {
                if (out.size() > target.buffers().bytes()) {
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "size " + out.size() + " exceeds the "
                            + target.buffers().bytes() + " bytes of " + target.implementation() + "'s buffers")
                            .rank(job.rank()).phase("collective runner").build();
                }
            }
            for (boolean inPlace : CollectiveRun.hasInPlace(out.kind()) ? List.of(false, true) : List.of(false)) {
                for (CollTarget target : targets) {
                    CollectiveRun run = out.placed(inPlace);
                    if (target.offers(run)) {
                        Measurement m = measure(target, job, plan, run, timing);
                        rows.add(m);
                        onRow.accept(m);
                    }
                }
            }
        }
        return rows;
    }

    /** One row: the checks and the timing of {@code run} through {@code target}, gathered over the ranks. */
    private static Measurement measure(CollTarget target, CollectiveJob job, Plan plan, CollectiveRun run,
                                       Timing timing) {
        long wrong = 0;
        for (int k = 0; k < plan.checkIters(); k++) {
            wrong += job.checkedRun(run, target.buffers(), target.data(), () -> {
                target.issue(run);
                target.synchronize();
            });
        }
        long ns = plan.iters() == 0 ? 0 : timing.time(target, run, plan.warmup(), plan.iters(),
                () -> job.barrier("timing " + run.describe()));
        double timeUs = plan.iters() == 0 ? 0 : ns / 1e3 / plan.iters();
        long[][] all = job.gather(Double.doubleToRawLongBits(timeUs), wrong);
        double sum = 0;
        long wrongSum = 0;
        for (long[] r : all) {
            sum += Double.longBitsToDouble(r[0]);
            wrongSum += r[1];
        }
        return new Measurement(target.implementation(), target.algorithm(run), run.kind(), run.size(), run.count(),
                run.type(), run.inPlace(), sum / all.length, plan.checkIters() == 0 ? -1 : wrongSum);
    }
}
