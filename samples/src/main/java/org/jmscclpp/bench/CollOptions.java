package org.jmscclpp.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.samples.ByteSizes;
import org.jmscclpp.samples.CollectiveRun;
import org.jspecify.annotations.Nullable;

/**
 * The options of {@code jmscclpp bench coll}, in nccl-tests' letters where nccl-tests has one
 * (but {@code -o}, which picks the collective here; the reduction is {@code --redop}), read the same
 * way by the command and by its ranks ({@link CollBenchRankSample}): a bad option is an
 * {@link IllegalArgumentException} naming it.
 *
 * @param ranks     processes ({@code --ranks}, default 2)
 * @param kind      {@code --op} (or {@code -o}): the collective; {@link CollectiveKind#SEND} is sendrecv
 * @param type      {@code -d}: any of NCCL's types, by nccl-tests' names
 * @param op        {@code --redop}: the reduction of allreduce, reducescatter and reduce (default sum)
 * @param root      {@code --root} (or {@code -r}): the root of broadcast and reduce (default 0)
 * @param backend   {@code --backend host|cuda}
 * @param algorithm {@code --algo}, null for the engine's tuning table
 * @param minBytes  {@code -b}
 * @param maxBytes  {@code -e}
 * @param factor    {@code -f}: each size is the previous times this
 * @param iters     {@code -n}: timed iterations
 * @param warmup    {@code -w}: warm-up iterations per size and placement
 * @param check     {@code -c}: checked iterations per size and placement
 * @param graph     {@code --graph G}: 0 enqueues one by one; G replays a CUDA graph of the iters enqueues G times
 * @param nccl      {@code --baseline nccl}
 * @param staged    {@code --staged on|off}: also time every size on unregistered buffers, which the
 *                  engine stages through its scratch (default: on for the host backend, off for cuda)
 * @param overhead  {@code --overhead N}: calls of each form timed for the Mono form's overhead at
 *                  1 KiB (default 1000; 0 skips it)
 * @param plot      {@code --plot FILE.png}, or null
 * @param json      {@code --json FILE}, or null
 */
public record CollOptions(int ranks, CollectiveKind kind, DataType type, ReduceOp op, int root, String backend,
                          @Nullable String algorithm, long minBytes, long maxBytes, int factor, int iters, int warmup,
                          int check, int graph, boolean nccl, boolean staged, int overhead, @Nullable Path plot,
                          @Nullable Path json) {

    public static final String SYNOPSIS = "jmscclpp bench coll [--ranks 2] [--op allreduce|allgather|reducescatter|"
            + "broadcast|reduce|alltoall|sendrecv] [-d float|half|bfloat16|double|f8e4m3|f8e5m2|int8|uint8|int32|uint32|"
            + "int64|uint64] [--redop sum|prod|max|min|avg] [--root 0] [--backend host|cuda] [--algo NAME] [-b 8]"
            + " [-e 32M] [-f 2] [-n 20] [-w 5] [-c 1] [--graph G] [--baseline nccl] [--staged on|off]"
            + " [--overhead 1000] [--plot FILE.png] [--json FILE]";

    /** The size of the Mono-overhead measurement, S in bytes. */
    public static final long OVERHEAD_BYTES = 1024;

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
        return new CollectiveRunner.Plan(sizes(), warmup, iters, check);
    }

    /** The run of the sweep whose S is {@code sizeBytes} on the job's ranks, out of place. */
    CollectiveRun run(long sizeBytes) {
        return new CollectiveRun(kind, type, kind.reduces() ? op : null, kind.rooted() ? root : -1, ranks,
                CollectiveRun.countFor(kind, type, ranks, sizeBytes), false);
    }

    /** The reduction of the kind, or null where it has none. */
    @Nullable ReduceOp reduction() {
        return kind.reduces() ? op : null;
    }

    static CollOptions parse(List<String> args) {
        int ranks = 2;
        CollectiveKind kind = CollectiveKind.ALL_REDUCE;
        DataType type = DataType.FLOAT32;
        ReduceOp op = ReduceOp.SUM;
        int root = 0;
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
        Boolean staged = null;
        int overhead = 1000;
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
                    } catch (JmscclppException e) {
                        throw new IllegalArgumentException(opt + ": " + e.detail());
                    }
                }
                case "--redop" -> {
                    try {
                        op = ReduceOp.parse(v);
                    } catch (JmscclppException e) {
                        throw new IllegalArgumentException(opt + ": " + e.detail());
                    }
                }
                case "--root", "-r" -> root = BenchArgs.count(opt, v, 0, 63);
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
                case "--staged" -> staged = switch (v) {
                    case "on" -> true;
                    case "off" -> false;
                    default -> throw new IllegalArgumentException("--staged is on or off, got '" + v + "'");
                };
                case "--overhead" -> overhead = BenchArgs.count(opt, v, 0, 10_000_000);
                case "--plot" -> plot = Path.of(v);
                case "--json", "-J" -> json = Path.of(v);
                default -> throw new IllegalArgumentException("unknown option " + opt);
            }
        }
        if (minBytes < 1 || minBytes > maxBytes) {
            throw new IllegalArgumentException("-b must be at least 1 and at most -e, got -b " + minBytes + " -e "
                    + maxBytes);
        }
        if (kind.rooted() && root >= ranks) {
            throw new IllegalArgumentException("--root " + root + " is not a rank of " + ranks);
        }
        if (nccl && !backend.equals("cuda")) {
            throw new IllegalArgumentException("--baseline nccl needs --backend cuda");
        }
        if (graph > 0 && !backend.equals("cuda")) {
            throw new IllegalArgumentException("--graph needs --backend cuda (CUDA graphs)");
        }
        return new CollOptions(ranks, kind, type, op, root, backend, algorithm, minBytes, maxBytes, factor, iters,
                warmup, check, graph, nccl, staged != null ? staged : backend.equals("host"), overhead, plot, json);
    }

    /** The kind named {@code v}: ours ({@code allreduce}, {@code sendrecv}) or nccl-tests' ({@code all_reduce}, {@code all_reduce_perf}). */
    static CollectiveKind kind(String v) {
        try {
            return CollectiveRun.parseKind(v);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--op: " + e.getMessage());
        }
    }

    /** The arguments that make a rank run these options. */
    List<String> rankArgs() {
        List<String> a = new ArrayList<>(List.of("--op", CollectiveRun.sampleName(kind), "-d", type.label(),
                "--redop", op.label(), "--root", Integer.toString(root), "--backend", backend,
                "-b", Long.toString(minBytes), "-e", Long.toString(maxBytes), "-f", Integer.toString(factor),
                "-n", Integer.toString(iters), "-w", Integer.toString(warmup), "-c", Integer.toString(check),
                "--graph", Integer.toString(graph), "--ranks", Integer.toString(ranks), "--staged", staged ? "on" : "off",
                "--overhead", Integer.toString(overhead)));
        if (algorithm != null) {
            a.addAll(List.of("--algo", algorithm));
        }
        if (nccl) {
            a.addAll(List.of("--baseline", "nccl"));
        }
        return a;
    }
}
