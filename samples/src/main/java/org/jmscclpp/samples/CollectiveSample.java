package org.jmscclpp.samples;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jmscclpp.bench.BenchArgs;
import org.jmscclpp.bench.MarkdownTable;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.cli.Main;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * The samples {@code allgather}, {@code allreduce}, {@code alltoall} and {@code sendrecv}:
 * {@code jmscclpp run -n N KIND [--backend host|cuda] [--algo A] [-d TYPE] [--bytes S] [--iters I]}
 * runs one size S (in {@link CollectiveKind}'s sense: for allgather the whole output) of the kind
 * through {@link CollectiveRunner}, the same runner as {@code jmscclpp bench coll}: {@value #CHECKS}
 * checked runs per placement, each with fresh random inputs, a poisoned output and every element of
 * it checked on every rank, then I timed runs after a few untimed ones. Rank 0 prints what ran, a
 * short table (one line per placement) and the verdict; every rank exits 0 only when every element
 * was right everywhere, else 1.
 */
public final class CollectiveSample implements Sample {

    /** Checked runs per placement. */
    static final int CHECKS = 2;
    private static final long DEFAULT_BYTES = 1 << 20;
    private static final int DEFAULT_ITERS = 20;
    private static final int MAX_WARMUP = 5;

    private final CollectiveKind kind;

    public CollectiveSample(CollectiveKind kind) {
        this.kind = kind;
    }

    /** The sample's name: the kind's, without nccl-tests' underscore ({@code allgather}). */
    public static String name(CollectiveKind kind) {
        return kind.name().toLowerCase(Locale.ROOT);
    }

    public static String synopsis(CollectiveKind kind) {
        return "[--backend host|cuda] [--algo A] [-d float] [--bytes 1M] [--iters 20]: " + switch (kind) {
            case ALLREDUCE -> "sum of every rank's buffer on every rank";
            case ALLGATHER -> "every rank's slice on every rank (S = the whole output)";
            case ALLTOALL -> "block p of rank r to block r of rank p";
            case SENDRECV -> "each rank's buffer to the next rank, in a ring";
        } + "; every element checked";
    }

    /** The options. */
    record Options(String backend, @Nullable String algorithm, DataType type, long bytes, int iters) {
    }

    static Options parse(String sample, List<String> args) {
        String backend = "host";
        String algorithm = null;
        DataType type = DataType.FLOAT32;
        long bytes = DEFAULT_BYTES;
        int iters = DEFAULT_ITERS;
        for (int i = 0; i < args.size(); i += 2) {
            String opt = args.get(i);
            if (i + 1 >= args.size()) {
                throw BenchArgs.usage(sample, opt + " needs a value");
            }
            String v = args.get(i + 1);
            try {
                switch (opt) {
                    case "--backend" -> backend = v;
                    case "--algo" -> algorithm = v;
                    case "-d", "--type" -> type = DataType.parse(v);
                    case "--bytes" -> bytes = ByteSizes.parse(opt, v);
                    case "--iters" -> iters = BenchArgs.count(opt, v, 1, 10_000_000);
                    default -> throw BenchArgs.usage(sample, "unknown option " + opt);
                }
            } catch (IllegalArgumentException e) {
                throw BenchArgs.usage(sample, e.getMessage());
            } catch (JmscclppException e) {
                throw BenchArgs.usage(sample, e.detail());
            }
        }
        if (bytes < 1) {
            throw BenchArgs.usage(sample, "--bytes must be at least 1");
        }
        return new Options(backend, algorithm, type, bytes, iters);
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        String sample = name(kind);
        Options o = parse(sample, args);
        int n = env.worldSize();
        long count = kind.count(o.bytes(), n, o.type());
        if (count == 0) {
            throw BenchArgs.usage(sample, "--bytes " + o.bytes() + " holds no " + o.type().label() + " element per "
                    + (kind == CollectiveKind.ALLREDUCE || kind == CollectiveKind.SENDRECV ? "rank" : "rank and peer,"
                    + " 16-byte aligned,") + " with " + n + " ranks");
        }
        CollectiveAlgorithms.Entry entry = entry(sample, o);
        int rank = env.rank();
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        try (TcpBootstrap bs = TcpBootstrap.create(rank, n, options)) {
            Blocking.done(bs.initialize(env.rootAddress()), options.initTimeout().plusSeconds(5), rank, "initialize");
            try (Backend backend = Backends.named(o.backend()); Communicator comm = Communicator.create(bs, backend)) {
                long size = kind.size(count, n, o.type());
                CollectiveSetup setup = new CollectiveSetup(comm, size, CollBenchRankSample.TIMEOUT);
                CollectiveRunner.Plan plan = new CollectiveRunner.Plan(List.of(size), o.type(),
                        Math.min(MAX_WARMUP, o.iters()), o.iters(), CHECKS);
                List<CollectiveRunner.Measurement> rows;
                try (Collective c = entry.factory().apply(setup); CollectiveData data = CollectiveData.create(c, setup)) {
                    rows = CollectiveRunner.run(CollReport.JMSCCLPP, c, data, setup, plan,
                            CollectiveRunner.Timing.direct(setup.timeout()), m -> { });
                }
                CollectiveRunner.barrier(setup, "end");
                long wrong = rows.stream().mapToLong(CollectiveRunner.Measurement::wrong).sum();
                if (rank == 0) {
                    System.out.printf(Locale.ROOT, "%s: %d ranks, %s backend, algorithm %s, %s, %s (%d elements%s),"
                            + " %d checks with fresh inputs, %d timed iterations after %d warm-up%n", sample, n,
                            backend.name(), entry.algorithm(), o.type().label(), ByteSizes.label(size), count,
                            kind == CollectiveKind.ALLREDUCE || kind == CollectiveKind.SENDRECV ? ""
                                    : kind == CollectiveKind.ALLGATHER ? " per rank" : " per peer",
                            CHECKS, plan.iters(), plan.warmup());
                    System.out.print(table(rows, n));
                    System.out.println(wrong == 0 ? sample + ": every element checked on every rank: OK"
                            : sample + ": FAILED: " + wrong + " wrong elements");
                    System.out.flush();
                }
                return wrong == 0 ? Main.OK : Main.FAILURE;
            }
        }
    }

    private CollectiveAlgorithms.Entry entry(String sample, Options o) {
        List<CollectiveAlgorithms.Entry> known = CollectiveAlgorithms.of(kind, o.backend());
        String asked = o.algorithm();
        for (CollectiveAlgorithms.Entry e : known) {
            if (asked == null || e.algorithm().equals(asked)) {
                return e;
            }
        }
        throw BenchArgs.usage(sample, (asked == null ? "no algorithm" : "no algorithm '" + asked + "'") + " on the "
                + o.backend() + " backend (known: " + known.stream().map(CollectiveAlgorithms.Entry::algorithm)
                .toList() + ")");
    }

    /** The short table: one line per placement. */
    static String table(List<CollectiveRunner.Measurement> rows, int n) {
        List<List<String>> cells = new ArrayList<>();
        for (CollectiveRunner.Measurement m : rows) {
            cells.add(List.of(m.inPlace() ? "in-place" : "out-of-place", Long.toString(m.size()),
                    Long.toString(m.count()), String.format(Locale.ROOT, "%.2f", m.timeUs()),
                    String.format(Locale.ROOT, "%.3f", CollReport.algbw(m)),
                    String.format(Locale.ROOT, "%.3f", CollReport.busbw(m, n)), Long.toString(m.wrong())));
        }
        return MarkdownTable.render(List.of("placement", "size (B)", "count", "time µs", "algbw GB/s", "busbw GB/s",
                "#wrong"), cells, c -> c == 0);
    }
}
