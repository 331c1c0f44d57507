package org.jmscclpp.samples;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaStream;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.publisher.Flux;

/**
 * The samples {@code allreduce}, {@code allgather}, {@code reducescatter}, {@code broadcast},
 * {@code reduce}, {@code alltoall} and {@code sendrecv}, on the library's collective API:
 * {@code jmscclpp run -n N KIND [--backend host|cuda] [--algo A] [-d TYPE] [--redop OP] [--root R]
 * [--bytes S] [--iters I]} creates a {@link CollectiveComm} over the job's communicator, registers
 * a send and a receive buffer of S bytes (S in nccl-tests' sense, see {@link CollectiveRun}) with
 * it, and runs one size of the kind through the {@code Mono} form ({@code comm.allReduce(...)}):
 * per placement (out of place, then in place where the kind has it) {@value #CHECKS} checked runs,
 * each with fresh random inputs, a poisoned output and every element of it checked on every rank
 * ({@link CollectiveData}: in Java on the host backend, by kernels on the GPU on the CUDA backend),
 * then I timed calls issued one after another ({@code Flux.concatMap}) after a few untimed ones.
 * Rank 0 prints what ran, a short table (one line per placement) and the verdict; every rank exits 0
 * only when every element was right everywhere, else 1.
 */
public final class CollectiveSample implements Sample {

    /** Checked runs per placement. */
    static final int CHECKS = 2;
    static final Duration TIMEOUT = Duration.ofSeconds(120);
    private static final long DEFAULT_BYTES = 1 << 20;
    private static final int DEFAULT_ITERS = 20;
    private static final int MAX_WARMUP = 5;

    /** The kinds that have a sample, in the order the usage lists them. */
    public static final List<CollectiveKind> KINDS = List.of(CollectiveKind.ALL_GATHER, CollectiveKind.ALL_REDUCE,
            CollectiveKind.REDUCE_SCATTER, CollectiveKind.BROADCAST, CollectiveKind.REDUCE, CollectiveKind.ALL_TO_ALL,
            CollectiveKind.SEND);

    private final CollectiveKind kind;

    public CollectiveSample(CollectiveKind kind) {
        this.kind = kind;
    }

    /** The sample's name: {@code allgather}, {@code reducescatter}, {@code sendrecv}, ... */
    public static String name(CollectiveKind kind) {
        return CollectiveRun.sampleName(kind);
    }

    public static String synopsis(CollectiveKind kind) {
        return "[--backend host|cuda] [--algo A] [-d float]" + (kind.reduces() ? " [-o sum]" : "")
                + (kind.rooted() ? " [--root 0]" : "") + " [--bytes 1M] [--iters 20]: " + switch (kind) {
                    case ALL_REDUCE -> "the reduction of every rank's buffer on every rank";
                    case ALL_GATHER -> "every rank's slice on every rank (S = the whole output)";
                    case REDUCE_SCATTER -> "slice r of the reduction on rank r (S = the whole input)";
                    case BROADCAST -> "the root's buffer on every rank";
                    case REDUCE -> "the reduction of every rank's buffer on the root";
                    case ALL_TO_ALL -> "block p of rank r to block r of rank p";
                    case SEND, RECV -> "each rank's buffer to the next rank, in a ring";
                } + "; every element checked";
    }

    /** The options. */
    record Options(String backend, @Nullable String algorithm, DataType type, ReduceOp op, int root, long bytes,
                   int iters) {
    }

    /** The options as picocli reads them. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false)
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--backend", paramLabel = "host|cuda", description = "the backend (default: host)")
        String backend = "host";
        @Option(names = "--algo", paramLabel = "A", description = "the algorithm (default: the tuning table's)")
        @Nullable String algorithm;
        @Option(names = {"-d", "--datatype", "--type"}, paramLabel = "TYPE", converter = SampleArgs.Type.class,
                description = "the element type, by nccl-tests' names: float, half, bfloat16, double, f8e4m3, f8e5m2,"
                        + " int8, uint8, int32, uint32, int64, uint64 (default: float)")
        DataType type = DataType.FLOAT32;
        @Option(names = {"-o", "--op", "--redop"}, paramLabel = "OP", converter = SampleArgs.Reduction.class,
                description = "the reduction: sum, prod, min, max, avg (default: sum)")
        ReduceOp op = ReduceOp.SUM;
        @Option(names = {"-r", "--root"}, paramLabel = "R", description = "the root of broadcast and reduce (default: 0)")
        int root;
        @Option(names = "--bytes", paramLabel = "S", converter = SampleArgs.Bytes.class,
                description = "the size S in bytes, K/M/G suffixes (default: 1M)")
        long bytes = DEFAULT_BYTES;
        @Option(names = {"-n", "--iters"}, paramLabel = "I", description = "timed calls (default: 20)")
        int iters = DEFAULT_ITERS;

        @Override
        public void check() {
            SampleArgs.range("--root", root, 0, 1023);
            SampleArgs.range("--iters", iters, 1, 10_000_000);
            if (bytes < 1) {
                throw new IllegalArgumentException("--bytes must be at least 1");
            }
        }

        Options options() {
            return new Options(backend, algorithm, type, op, root, bytes, iters);
        }
    }

    static Options parse(String sample, List<String> args) {
        return SampleArgs.parse(sample, new Args(), args).options();
    }

    @Override
    public Object options() {
        return new Args();
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        String sample = name(kind);
        Options o = parse(sample, args);
        int n = env.worldSize();
        if (kind.rooted() && o.root() >= n) {
            throw SampleArgs.usage(sample, "--root " + o.root() + " is not a rank of " + n);
        }
        long count = CollectiveRun.countFor(kind, o.type(), n, o.bytes());
        if (count == 0) {
            throw SampleArgs.usage(sample, "--bytes " + o.bytes() + " holds no " + o.type().label() + " element"
                    + unit(kind) + (perRank(kind) ? ", in 16-byte chunks," : "") + " with " + n + " ranks");
        }
        CollectiveRun out = new CollectiveRun(kind, o.type(), kind.reduces() ? o.op() : null,
                kind.rooted() ? o.root() : -1, n, count, false);
        int rank = env.rank();
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        try (TcpBootstrap bs = TcpBootstrap.create(rank, n, options)) {
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            try (Backend backend = Backends.named(o.backend()); Communicator comm = Communicator.create(bs, backend);
                 CollectiveBuffers buffers = CollectiveBuffers.allocate(backend, out.size());
                 CudaStream stream = backend instanceof CudaBackend cuda ? cuda.createStream(sample + " data") : null;
                 CollectiveData data = CollectiveData.create(backend, stream, rank, TIMEOUT)) {
                Outcome outcome;
                try (CollectiveJob job = CollectiveJob.open(comm, kind, o.algorithm(), TIMEOUT)) {
                    Blocking.done(buffers.register(job.comm()), TIMEOUT.plusSeconds(5), rank, "register");
                    outcome = measure(job, buffers, data, out, o.iters());
                    // every rank is done with every call before any unmaps a peer's buffers ...
                    job.barrier("end");
                }
                // ... and every rank has unmapped the others' before any frees its own
                Blocking.done(bs.barrier(TIMEOUT), TIMEOUT.plusSeconds(5), rank, "barrier (closed)");
                if (rank == 0) {
                    System.out.printf(Locale.ROOT, "%s: %d ranks, %s backend, algorithm %s, %s%s%s, %s (%d elements%s),"
                            + " %d checks with fresh inputs, %d timed iterations after %d warm-up%n", sample, n,
                            backend.name(), outcome.algorithm(), o.type().label(),
                            kind.reduces() ? ", " + o.op().label() : "", kind.rooted() ? ", root " + o.root() : "",
                            ByteSizes.label(out.size()), count, unit(kind), CHECKS, o.iters(),
                            Math.min(MAX_WARMUP, o.iters()));
                    System.out.print(MarkdownTable.render(List.of("placement", "size (B)", "count", "time µs",
                            "algbw GB/s", "busbw GB/s", "#wrong"), outcome.lines(), c -> c == 0));
                    System.out.println(outcome.wrong() == 0 ? sample + ": every element checked on every rank: OK"
                            : sample + ": FAILED: " + outcome.wrong() + " wrong elements");
                    System.out.flush();
                }
                return outcome.wrong() == 0 ? ExitCodes.OK : ExitCodes.FAILURE;
            }
        }
    }

    /** What every rank learns: the algorithm, a table line per placement, the wrong elements of every rank. */
    record Outcome(String algorithm, List<List<String>> lines, long wrong) {
    }

    /** The checks and timings of every placement of {@code out}, on every rank. */
    private static Outcome measure(CollectiveJob job, CollectiveBuffers buffers, CollectiveData data, CollectiveRun out,
                                   int iters) {
        int rank = job.rank();
        List<List<String>> lines = new ArrayList<>();
        long wrong = 0;
        for (boolean inPlace : CollectiveRun.hasInPlace(out.kind()) ? List.of(false, true) : List.of(false)) {
            CollectiveRun run = out.placed(inPlace);
            long mine = 0;
            for (int k = 0; k < CHECKS; k++) {
                mine += job.checkedRun(run, buffers, data, () -> Blocking.done(buffers.issue(job.comm(), run, rank),
                        TIMEOUT.plusSeconds(5), rank, run.describe()));
            }
            long ns = time(job, buffers, run, Math.min(MAX_WARMUP, iters), iters);
            long[][] all = job.gather(ns, mine);
            double us = 0;
            long runWrong = 0;
            for (long[] r : all) {
                us += r[0] / 1e3 / iters / all.length;
                runWrong += r[1];
            }
            wrong += runWrong;
            lines.add(row(run, us, runWrong));
        }
        return new Outcome(job.algorithm(out, buffers), lines, wrong);
    }

    /**
     * Nanoseconds of {@code iters} calls of {@code run} issued one after another (each subscribed when
     * the one before completed), after {@code warmup} untimed ones and a barrier.
     */
    static long time(CollectiveJob job, CollectiveBuffers buffers, CollectiveRun run, int warmup, int iters) {
        CollectiveComm comm = job.comm();
        int rank = job.rank();
        Duration limit = job.timeout().multipliedBy(Math.max(1, warmup)).plusSeconds(5);
        Blocking.done(Flux.range(0, warmup).concatMap(i -> buffers.issue(comm, run, rank)).then(), limit, rank,
                "warm-up");
        job.barrier("timing " + run.describe());
        long t0 = System.nanoTime();
        Blocking.done(Flux.range(0, iters).concatMap(i -> buffers.issue(comm, run, rank)).then(),
                job.timeout().multipliedBy(iters).plusSeconds(5), rank, "timed calls");
        return System.nanoTime() - t0;
    }

    private static List<String> row(CollectiveRun run, double us, long wrong) {
        double algbw = us > 0 ? run.size() / (us * 1e3) : 0;
        return List.of(run.inPlace() ? "in-place" : "out-of-place", Long.toString(run.size()),
                Long.toString(run.count()), String.format(Locale.ROOT, "%.2f", us),
                String.format(Locale.ROOT, "%.3f", algbw),
                String.format(Locale.ROOT, "%.3f", algbw * run.kind().busFactor(run.n())), Long.toString(wrong));
    }

    private static boolean perRank(CollectiveKind kind) {
        return kind == CollectiveKind.ALL_GATHER || kind == CollectiveKind.REDUCE_SCATTER
                || kind == CollectiveKind.ALL_TO_ALL;
    }

    /** What the count counts beyond elements: per rank, per peer, or nothing. */
    private static String unit(CollectiveKind kind) {
        return switch (kind) {
            case ALL_GATHER, REDUCE_SCATTER -> " per rank";
            case ALL_TO_ALL -> " per peer";
            default -> "";
        };
    }
}
