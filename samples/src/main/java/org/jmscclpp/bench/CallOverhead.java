package org.jmscclpp.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.samples.CollectiveJob;
import org.jmscclpp.samples.CollectiveRun;
import reactor.core.publisher.Mono;

/**
 * The cost of the {@code Mono} form of a call above the stream form (issue 14's target: at most 2 µs
 * at 1 KiB), measured on registered buffers with {@code calls} calls of each form, after as many
 * untimed {@code Mono} calls, a barrier before each form, averaged over the ranks, in the median of
 * {@link #ROUNDS} rounds that each run every form once:
 * <ul>
 *   <li>{@code monoBlockUs}: {@code comm.allReduce(...).block()} (the kind's call), one after
 *       another: what a caller that waits for each result pays per call;</li>
 *   <li>{@code monoPipelinedUs}: the same calls subscribed together ({@code Mono.when}) and waited
 *       for once;</li>
 *   <li>{@code streamUs} (CUDA only): the stream form enqueued back to back and synchronized once;</li>
 *   <li>{@code streamSyncUs} (CUDA only): the stream form enqueued and synchronized call by call.</li>
 * </ul>
 * The call overhead (the issue's target) is {@code monoPipelinedUs − streamUs}: both forms issued
 * back to back, so the difference is what the Mono form adds to each call (the Mono, its planning
 * and completion watch, the signal to the subscriber) and not the GPU's time, which both pay.
 * What a caller that waits for every result pays on top is {@code monoBlockUs − streamSyncUs} (both
 * wait for each call: the wake-up of the waiting thread); {@code monoBlockUs − streamUs} mixes the
 * two. Absent measurements are −1.
 *
 * @param algorithm the algorithm the call got
 * @param size      S in bytes
 * @param count     the call's count
 * @param calls     calls per form
 */
record CallOverhead(String algorithm, long size, long count, int calls, double monoBlockUs, double monoPipelinedUs,
                    double streamUs, double streamSyncUs) {

    /** Rounds of every form; the median round is reported ({@link #measure}). */
    static final int ROUNDS = 5;

    /** Nanosecond columns of a round. */
    private static final int COLUMNS = 4;

    /** The issue's bound on the call overhead ({@link #overheadUs()}), µs. */
    static final double TARGET_US = 2.0;

    boolean hasStream() {
        return streamUs >= 0;
    }

    /** The call overhead: Mono minus stream, both issued back to back, µs; NaN without a stream form. */
    double overheadUs() {
        return hasStream() ? monoPipelinedUs - streamUs : Double.NaN;
    }

    /**
     * Measures {@code run} (out of place) on every rank: every rank calls this at the same point with
     * the same arguments. {@code target} gives the buffers and, on CUDA, the stream form. After
     * {@code calls} untimed calls, {@link #ROUNDS} rounds each time every form once, one after the
     * other (so that the forms compared see the same moments of a noisy host); the result is the
     * round whose call overhead (Mono pipelined without a stream form) is the median.
     */
    static CallOverhead measure(CollectiveJob job, JmscclppTarget target, CollectiveRun run, int calls) {
        blocking(job, target, run, calls);
        long[] nanos = new long[COLUMNS * ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            System.arraycopy(round(job, target, run, calls, r), 0, nanos, COLUMNS * r, COLUMNS);
        }
        long[][] all = job.gather(nanos);
        double[][] rounds = new double[ROUNDS][COLUMNS];
        for (int r = 0; r < ROUNDS; r++) {
            for (int k = 0; k < COLUMNS; k++) {
                rounds[r][k] = meanUs(all, COLUMNS * r + k, calls);
            }
        }
        double[] m = medianRound(rounds);
        return new CallOverhead(target.algorithm(run), run.size(), run.count(), calls, m[0], m[1], m[2], m[3]);
    }

    /**
     * One round's nanoseconds on this rank: Mono blocking, Mono pipelined, stream, stream
     * synchronized (−1: none).
     */
    private static long[] round(CollectiveJob job, JmscclppTarget target, CollectiveRun run, int calls, int r) {
        CollectiveComm comm = job.comm();
        int rank = job.rank();
        Duration limit = job.timeout().multipliedBy(Math.max(1, calls)).plusSeconds(5);
        job.barrier("mono overhead: pipelined, round " + r);
        long t0 = System.nanoTime();
        List<Mono<Void>> monos = new ArrayList<>(calls);
        for (int i = 0; i < calls; i++) {
            monos.add(target.buffers().issue(comm, run, rank));
        }
        Mono.when(monos).block(limit);
        long pipelined = System.nanoTime() - t0;

        long stream = -1;
        if (target.streamForm()) {
            target.synchronize();
            job.barrier("mono overhead: stream, round " + r);
            t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                target.issue(run);
            }
            target.synchronize();
            stream = System.nanoTime() - t0;
        }

        job.barrier("mono overhead: blocking, round " + r);
        long block = blocking(job, target, run, calls);

        long streamSync = -1;
        if (target.streamForm()) {
            job.barrier("mono overhead: stream, synchronized, round " + r);
            t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                target.issue(run);
                target.synchronize();
            }
            streamSync = System.nanoTime() - t0;
        }
        return new long[] {block, pipelined, stream, streamSync};
    }

    /**
     * {@code calls} Mono calls, each waited for with a plain {@code block(timeout)} as a caller writes
     * it (no timer per call: the calls have deadlines of their own); returns their nanoseconds.
     */
    private static long blocking(CollectiveJob job, JmscclppTarget target, CollectiveRun run, int calls) {
        Duration one = job.timeout().plusSeconds(5);
        long t0 = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            target.buffers().issue(job.comm(), run, job.rank()).block(one);
        }
        return System.nanoTime() - t0;
    }

    /**
     * The round (its columns: Mono blocking, Mono pipelined, stream, stream synchronized, µs per call)
     * whose call overhead, Mono pipelined minus stream, is the median; by Mono pipelined alone where a
     * round has no stream form (−1). With an even count, the lower of the two middle rounds.
     */
    static double[] medianRound(double[][] rounds) {
        Integer[] order = new Integer[rounds.length];
        for (int r = 0; r < order.length; r++) {
            order[r] = r;
        }
        Arrays.sort(order, Comparator.comparingDouble(r -> rounds[r][2] >= 0
                ? rounds[r][1] - rounds[r][2] : rounds[r][1]));
        return rounds[order[(order.length - 1) / 2]];
    }

    /** Column {@code k} of every rank's nanoseconds, per call and averaged over the ranks, in µs; −1 where a rank has none. */
    private static double meanUs(long[][] all, int k, int calls) {
        double sum = 0;
        for (long[] r : all) {
            if (r[k] < 0) {
                return -1;
            }
            sum += r[k] / 1e3 / calls;
        }
        return sum / all.length;
    }

    /** The protocol line rank 0 prints ({@code COLL-OVERHEAD ...}). */
    String line() {
        return String.format(Locale.ROOT, "COLL-OVERHEAD algo=%s size=%d count=%d calls=%d mono_block_us=%.4f"
                + " mono_pipelined_us=%.4f stream_us=%.4f stream_sync_us=%.4f", algorithm, size, count, calls,
                monoBlockUs, monoPipelinedUs, streamUs, streamSyncUs);
    }
}
