package org.jmscclpp.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.samples.Blocking;
import org.jmscclpp.samples.Sample;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code bench-bootstrap-rank --iters I --warmup W}: one rank of the separate-process bootstrap
 * benchmark. Every iteration starts with a barrier so the ranks start together; each rank times its
 * own part of the operation. At the end rank 0 gathers every rank's times in one allGather, takes
 * the slowest rank per iteration and prints, per operation, one line the parent parses:
 * <pre>
 * BENCH n=4 op=init max_ms=41.7
 * BENCH n=4 op=allgather_8B median_us=12.3
 * BENCH n=2 op=sendrecv_bw_1MiB median_gbps=1.84
 * </pre>
 */
public final class BenchRankSample implements Sample {

    /** The name the command line registers this rank sample under. */
    public static final String NAME = "bench-bootstrap-rank";

    static final Duration OP_TIMEOUT = Duration.ofSeconds(60);

    /** The options of a rank: those of {@code jmscclpp bench bootstrap} that the ranks use. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false)
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--iters", paramLabel = "N", description = "timed iterations per operation")
        int iters = 200;
        @Option(names = "--warmup", paramLabel = "N", description = "untimed iterations first")
        int warmup = 20;

        @Override
        public void check() {
            SampleArgs.range("--iters", iters, 1, Integer.MAX_VALUE);
            SampleArgs.range("--warmup", warmup, 0, Integer.MAX_VALUE);
        }
    }

    @Override
    public Object options() {
        return new Args();
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        Args a = SampleArgs.parse(NAME, new Args(), args);
        int iters = a.iters;
        int warmup = a.warmup;
        int rank = env.rank();
        int n = env.worldSize();
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        long start = System.nanoTime();
        try (TcpBootstrap bs = TcpBootstrap.create(rank, n, options)) {
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            long initNanos = System.nanoTime() - start;
            List<BenchOp> ops = BenchOp.applicable(n);
            long[] mine = measure(bs, ops, iters, warmup);
            mine[0] = initNanos;
            byte[] all = Blocking.value(bs.allGather(BenchStats.toBytes(mine), OP_TIMEOUT), OP_TIMEOUT, rank,
                    "gather times");
            if (rank == 0) {
                for (String line : report(n, ops, iters, BenchStats.split(all, n))) {
                    System.out.println(line);
                }
                System.out.flush();
            }
            // nobody closes while rank 0 may still need its connections
            Blocking.done(bs.barrier(OP_TIMEOUT), OP_TIMEOUT, rank, "final barrier");
        }
        return 0;
    }

    /**
     * Times every op: {@code warmup + iters} iterations, each after a barrier. Returns slot 0 free for the
     * init time, then {@code iters} nanosecond times per op, in {@code ops} order.
     *
     * <p>The iterations of one op run as one reactive chain, the way an application composes
     * bootstrap steps: each barrier and op starts from the completion of the previous one, on the
     * bootstrap's I/O thread, so the time is the library's and not a blocked thread's wake-up.
     */
    static long[] measure(Bootstrap bs, List<BenchOp> ops, int iters, int warmup) {
        long[] times = new long[1 + ops.size() * iters];
        for (int o = 0; o < ops.size(); o++) {
            BenchOp op = ops.get(o);
            int base = 1 + o * iters;
            int opWarmup = op.warmupOf(warmup);
            Mono<Void> loop = Flux.range(0, opWarmup + iters)
                    .concatMap(i -> bs.barrier(OP_TIMEOUT).then(Mono.defer(() -> {
                        long t = System.nanoTime();
                        return op.on(bs, OP_TIMEOUT).then(Mono.fromRunnable(() -> {
                            long d = System.nanoTime() - t;
                            if (i >= opWarmup) {
                                times[base + i - opWarmup] = d;
                            }
                        }));
                    })))
                    .then();
            Duration all = OP_TIMEOUT.multipliedBy(2L * (opWarmup + iters));
            Blocking.done(loop, all, bs.rank(), op.key);
        }
        return times;
    }

    /** The BENCH lines for the times {@link #measure} produced on every rank. */
    static List<String> report(int n, List<BenchOp> ops, int iters, long[][] perRank) {
        List<String> lines = new ArrayList<>();
        long slowestInit = 0;
        for (long[] r : perRank) {
            slowestInit = Math.max(slowestInit, r[0]);
        }
        lines.add(String.format(Locale.ROOT, "BENCH n=%d op=init max_ms=%.3f", n, slowestInit / 1e6));
        for (int o = 0; o < ops.size(); o++) {
            BenchOp op = ops.get(o);
            double value = op.fromNanos(BenchStats.medianOfSlowest(perRank, 1 + o * iters, iters));
            lines.add(String.format(Locale.ROOT, "BENCH n=%d op=%s %s=%.4f", n, op.key, op.valueName(), value));
        }
        return lines;
    }
}
