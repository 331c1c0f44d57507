package org.jmscclpp.samples;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jmscclpp.bench.BenchArgs;
import org.jspecify.annotations.Nullable;

/**
 * The options of {@code jmscclpp bench coll}, in nccl-tests' letters where nccl-tests has one,
 * read the same way by the command and by its ranks ({@link CollBenchRankSample}): a bad option is
 * an {@link IllegalArgumentException} naming it.
 *
 * @param ranks     processes ({@code --ranks}, default 2)
 * @param kind      {@code --op}
 * @param type      {@code -d}
 * @param backend   {@code --backend host|cuda}
 * @param algorithm {@code --algo}, null for the registered default
 * @param minBytes  {@code -b}
 * @param maxBytes  {@code -e}
 * @param factor    {@code -f}: each size is the previous times this
 * @param iters     {@code -n}: timed iterations
 * @param warmup    {@code -w}: warm-up iterations per size and placement
 * @param check     {@code -c}: checked iterations per size and placement
 * @param graph     {@code --graph G}: 0 enqueues one by one; G replays a CUDA graph of the iters enqueues G times
 * @param nccl      {@code --baseline nccl}
 * @param plot      {@code --plot FILE.png}, or null
 * @param json      {@code --json FILE}, or null
 */
public record CollOptions(int ranks, CollectiveKind kind, DataType type, String backend, @Nullable String algorithm,
                   long minBytes, long maxBytes, int factor, int iters, int warmup, int check, int graph,
                   boolean nccl, @Nullable Path plot, @Nullable Path json) {

    public static final String SYNOPSIS = "jmscclpp bench coll [--ranks 2] [--op allreduce|allgather|alltoall|sendrecv]"
            + " [-d float|half|bfloat16|int32] [--backend host|cuda] [--algo NAME] [-b 8] [-e 32M] [-f 2] [-n 20]"
            + " [-w 5] [-c 1] [--graph G] [--baseline nccl] [--plot FILE.png] [--json FILE]";

    /** The sizes of the sweep: {@code minBytes}, times {@code factor}, up to {@code maxBytes}. */
    List<Long> sizes() {
        List<Long> sizes = new ArrayList<>();
        for (long s = minBytes; s <= maxBytes; s *= factor) {
            sizes.add(s);
            if (s > Long.MAX_VALUE / factor) {
                break;
            }
        }
        return sizes;
    }

    /** The plan every rank runs. */
    CollectiveRunner.Plan plan() {
        return new CollectiveRunner.Plan(sizes(), type, warmup, iters, check);
    }

    static CollOptions parse(List<String> args) {
        int ranks = 2;
        CollectiveKind kind = CollectiveKind.ALLREDUCE;
        DataType type = DataType.FLOAT32;
        String backend = "host";
        String algorithm = null;
        long minBytes = 8;
        long maxBytes = 32L << 20;
        int factor = 2;
        int iters = 20;
        int warmup = 5;
        int check = 1;
        int graph = 0;
        boolean nccl = false;
        Path plot = null;
        Path json = null;
        for (int i = 0; i < args.size(); i += 2) {
            String opt = args.get(i);
            String v = BenchArgs.value(args, i);
            switch (opt) {
                case "--ranks" -> ranks = BenchArgs.count(opt, v, 1, 64);
                case "--op", "-o" -> kind = kind(v);
                case "-d", "--datatype" -> {
                    try {
                        type = DataType.parse(v);
                    } catch (RuntimeException e) {
                        throw new IllegalArgumentException(opt + ": unknown data type '" + v
                                + "' (one of float, half, bfloat16, int32)");
                    }
                }
                case "--backend" -> {
                    if (!v.equals("host") && !v.equals("cuda")) {
                        throw new IllegalArgumentException("--backend is host or cuda, got '" + v + "'");
                    }
                    backend = v;
                }
                case "--algo" -> algorithm = v;
                case "-b", "--minbytes" -> minBytes = ByteSizes.parse(opt, v);
                case "-e", "--maxbytes" -> maxBytes = ByteSizes.parse(opt, v);
                case "-f", "--stepfactor" -> factor = BenchArgs.count(opt, v, 2, 1024);
                case "-n", "--iters" -> iters = BenchArgs.count(opt, v, 1, 100_000_000);
                case "-w", "--warmup_iters" -> warmup = BenchArgs.count(opt, v, 0, 100_000_000);
                case "-c", "--check" -> check = BenchArgs.count(opt, v, 0, 1_000_000);
                case "--graph", "-G" -> graph = BenchArgs.count(opt, v, 0, 1_000_000);
                case "--baseline" -> {
                    if (!v.equals("nccl")) {
                        throw new IllegalArgumentException("--baseline knows only nccl, got '" + v + "'");
                    }
                    nccl = true;
                }
                case "--plot" -> plot = Path.of(v);
                case "--json", "-J" -> json = Path.of(v);
                default -> throw new IllegalArgumentException("unknown option " + opt);
            }
        }
        if (minBytes < 1 || minBytes > maxBytes) {
            throw new IllegalArgumentException("-b must be at least 1 and at most -e, got -b " + minBytes + " -e "
                    + maxBytes);
        }
        if (nccl && !backend.equals("cuda")) {
            throw new IllegalArgumentException("--baseline nccl needs --backend cuda");
        }
        if (graph > 0 && !backend.equals("cuda")) {
            throw new IllegalArgumentException("--graph needs --backend cuda (CUDA graphs)");
        }
        return new CollOptions(ranks, kind, type, backend, algorithm, minBytes, maxBytes, factor, iters, warmup,
                check, graph, nccl, plot, json);
    }

    /** The kind named {@code v}: ours ({@code allreduce}) or nccl-tests' ({@code all_reduce}, {@code all_reduce_perf}). */
    static CollectiveKind kind(String v) {
        String name = v.toLowerCase(Locale.ROOT);
        if (name.endsWith("_perf")) {
            name = name.substring(0, name.length() - "_perf".length());
        }
        for (CollectiveKind k : CollectiveKind.values()) {
            if (name.equals(k.label()) || name.equals(k.name().toLowerCase(Locale.ROOT))) {
                return k;
            }
        }
        throw new IllegalArgumentException("--op is one of allreduce, allgather, alltoall, sendrecv (or nccl-tests'"
                + " all_reduce, all_gather, alltoall, sendrecv), got '" + v + "'");
    }

    /** The arguments that make a rank run these options with the algorithm {@code algorithm}. */
    List<String> rankArgs(String algorithm) {
        List<String> a = new ArrayList<>(List.of("--op", kind.name().toLowerCase(Locale.ROOT), "-d", type.label(),
                "--backend", backend, "--algo", algorithm, "-b", Long.toString(minBytes), "-e", Long.toString(maxBytes),
                "-f", Integer.toString(factor), "-n", Integer.toString(iters), "-w", Integer.toString(warmup),
                "-c", Integer.toString(check), "--graph", Integer.toString(graph), "--ranks", Integer.toString(ranks)));
        if (nccl) {
            a.addAll(List.of("--baseline", "nccl"));
        }
        return a;
    }
}
