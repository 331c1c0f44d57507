package org.jmscclpp.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.samples.CollectiveRun;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The options of {@code jmscclpp bench coll}, in nccl-tests' letters and meanings ({@code -b -e -f
 * -n -w -c -d -o -r -G}, long forms as nccl-tests spells them), read the same way by the command and
 * by its ranks ({@link CollBenchRankSample}) through picocli ({@link Args}): a bad option is an
 * {@link IllegalArgumentException} naming it. The collective is the positional argument
 * ({@code bench coll allgather}) or {@code --coll}; {@code -o}/{@code --op} is the reduction, as in
 * nccl-tests (the collective's name there is still taken, as command lines before it was the
 * reduction wrote it).
 *
 * @param ranks     processes ({@code --ranks}, default 2): one GPU each, so nccl-tests' {@code -g} and
 *                  {@code -t} take only 1
 * @param hosts     {@code --hosts H} (default 1): the ranks act as H hosts of {@code ranks / H}
 *                  consecutive ranks each ({@code MSCCLPP_HOSTID}, and {@code NCCL_HOSTID} for the
 *                  baseline, differ per group), so that the library runs the collectives of jobs that
 *                  span hosts (no CUDA IPC or shared memory between the groups, the network between them)
 * @param kind      the collective; {@link CollectiveKind#SEND} is sendrecv
 * @param type      {@code -d}: any of NCCL's types, by nccl-tests' names
 * @param op        {@code -o}: the reduction of allreduce, reducescatter and reduce (default sum)
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
public record CollOptions(int ranks, int hosts, CollectiveKind kind, DataType type, ReduceOp op, int root, String backend,
                          @Nullable String algorithm, long minBytes, long maxBytes, int factor, int iters, int warmup,
                          int check, int graph, boolean nccl, boolean staged, int overhead, @Nullable Path plot,
                          @Nullable Path json) {

    public static final String SYNOPSIS = "jmscclpp bench coll [COLLECTIVE] [--ranks 2] [--hosts 1] [-d float] [-o sum] [-r 0]"
            + " [--backend host|cuda] [--algo NAME] [-b 8] [-e 32M] [-f 2] [-n 20] [-w 5] [-c 1] [-G G]"
            + " [--baseline nccl] [--staged on|off] [--overhead 1000] [--plot FILE.png] [--json FILE]";

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

    /** The options as picocli reads them. */
    @Command(name = "coll", mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false,
            description = {"A collective's sweep over sizes in nccl-tests' style and flags (time, algbw, busbw, #wrong"
                    + " per size, out-of-place and in-place) on the library's CollectiveComm, any type and reduction,"
                    + " on --ranks processes of this host with one GPU each (cuda) or the host backend. Rows print"
                    + " as each size finishes.",
                    "--baseline nccl adds NCCL's time and the ratio (cuda backend), --staged on the time on"
                    + " unregistered buffers; then the Mono form's call overhead at 1 KiB. Exit 1 when an element"
                    + " is wrong."})
    public static final class Args implements SampleArgs.Checked {
        @Parameters(arity = "0..1", paramLabel = "COLLECTIVE", description = "allreduce (default), allgather,"
                + " reducescatter, broadcast, reduce, alltoall or sendrecv (nccl-tests' all_reduce_perf too)")
        @Nullable String collective;
        @Option(names = "--coll", paramLabel = "COLLECTIVE", description = "the collective, as the argument above")
        @Nullable String coll;
        @Option(names = "--ranks", paramLabel = "N", description = "rank processes, one GPU each (default: 2)")
        int ranks = 2;
        @Option(names = "--hosts", paramLabel = "H", description = "act as H hosts of ranks/H consecutive ranks each"
                + " (a different MSCCLPP_HOSTID and NCCL_HOSTID per group): the collectives of jobs that span hosts,"
                + " the network between the groups (default: 1)")
        int hosts = 1;
        @Option(names = {"-d", "--datatype"}, paramLabel = "TYPE", converter = SampleArgs.Type.class,
                description = "float (default), half, bfloat16, double, f8e4m3, f8e5m2, int8, uint8, int32, uint32,"
                        + " int64, uint64")
        DataType type = DataType.FLOAT32;
        @Option(names = {"-o", "--op"}, paramLabel = "OP", description = "the reduction: sum (default), prod, min,"
                + " max, avg")
        @Nullable String op;
        @Option(names = "--redop", paramLabel = "OP", hidden = true, converter = SampleArgs.Reduction.class,
                description = "the reduction, as -o")
        @Nullable ReduceOp redop;
        @Option(names = {"-r", "--root"}, paramLabel = "R", description = "the root of broadcast and reduce"
                + " (default: 0)")
        int root;
        @Option(names = "--backend", paramLabel = "host|cuda", description = "the backend (default: host)")
        String backend = "host";
        @Option(names = "--algo", paramLabel = "NAME", description = "the algorithm (default: the tuning table's"
                + " choice per size)")
        @Nullable String algorithm;
        @Option(names = {"-b", "--minbytes"}, paramLabel = "S", converter = SampleArgs.Bytes.class,
                description = "the smallest size, K/M/G suffixes (default: 8)")
        long minBytes = 8;
        @Option(names = {"-e", "--maxbytes"}, paramLabel = "S", converter = SampleArgs.Bytes.class,
                description = "the largest size (default: 32M)")
        long maxBytes = 32L << 20;
        @Option(names = {"-f", "--stepfactor"}, paramLabel = "F", description = "each size is the previous times F"
                + " (default: 2)")
        int factor = 2;
        @Option(names = {"-n", "--iters"}, paramLabel = "N", description = "timed iterations (default: 20)")
        int iters = 20;
        @Option(names = {"-w", "--warmup_iters"}, paramLabel = "N", description = "warm-up iterations per size and"
                + " placement (default: 5)")
        int warmup = 5;
        @Option(names = {"-c", "--check"}, paramLabel = "N", description = "checked iterations per size and"
                + " placement (default: 1)")
        int check = 1;
        @Option(names = {"-G", "--cudagraph", "--graph"}, paramLabel = "G", description = "cuda: replay a CUDA graph"
                + " of the timed enqueues G times (default: 0, enqueued one by one)")
        int graph;
        @Option(names = {"-g", "--ngpus"}, paramLabel = "1", description = "GPUs per thread: only 1 (one GPU per rank"
                + " process; --ranks N for N GPUs)")
        int gpus = 1;
        @Option(names = {"-t", "--nthreads"}, paramLabel = "1", description = "threads per process: only 1 (one GPU"
                + " per rank process; --ranks N for N GPUs)")
        int threads = 1;
        @Option(names = "--baseline", paramLabel = "nccl", description = "time NCCL beside (cuda)")
        @Nullable String baseline;
        @Option(names = "--staged", paramLabel = "on|off", description = "also time unregistered buffers (default:"
                + " on for host, off for cuda)")
        @Nullable String staged;
        @Option(names = "--overhead", paramLabel = "N", description = "calls timed for the Mono form's overhead at"
                + " 1 KiB (default: 1000; 0 skips it)")
        int overhead = 1000;
        @Option(names = "--plot", paramLabel = "FILE.png", description = "draw busbw and time (needs java.desktop"
                + " and XChart)")
        @Nullable Path plot;
        @Option(names = {"--json", "-J"}, paramLabel = "FILE", description = "write the report as JSON")
        @Nullable Path json;

        @Override
        public void check() {
            options();
        }

        /** The options these values make; IllegalArgumentException naming a wrong one. */
        CollOptions options() {
            if (gpus != 1) {
                throw new IllegalArgumentException("-g " + gpus + ": each rank process drives one GPU, so -g (GPUs"
                        + " per thread) takes only 1; for " + gpus + " GPUs run --ranks " + gpus);
            }
            if (threads != 1) {
                throw new IllegalArgumentException("-t " + threads + ": each rank process drives one GPU from one"
                        + " thread, so -t (threads per process) takes only 1; for more GPUs use --ranks N");
            }
            CollectiveKind kind = null;
            ReduceOp reduction = redop;
            if (op != null) {
                try {
                    reduction = ReduceOp.parse(op);
                } catch (JmscclppException e) {
                    try {
                        kind = kind(op);   // -o/--op named the collective before it was nccl-tests' reduction
                    } catch (IllegalArgumentException notAKind) {
                        throw new IllegalArgumentException("-o/--op is the reduction: " + e.detail());
                    }
                }
            }
            for (String named : new String[] {collective, coll}) {
                if (named != null) {
                    CollectiveKind k = kind(named);
                    if (kind != null && kind != k) {
                        throw new IllegalArgumentException("two collectives: " + CollectiveRun.sampleName(kind)
                                + " and " + CollectiveRun.sampleName(k));
                    }
                    kind = k;
                }
            }
            if (kind == null) {
                kind = CollectiveKind.ALL_REDUCE;
            }
            SampleArgs.range("--ranks", ranks, 1, 64);
            SampleArgs.range("--root", root, 0, 63);
            SampleArgs.range("--hosts", hosts, 1, ranks);
            if (ranks % hosts != 0) {
                throw new IllegalArgumentException("--hosts " + hosts + " does not divide --ranks " + ranks
                        + ": every host holds the same number of ranks");
            }
            SampleArgs.range("-f", factor, 2, 1024);
            SampleArgs.range("-n", iters, 1, 100_000_000);
            SampleArgs.range("-w", warmup, 0, 100_000_000);
            SampleArgs.range("-c", check, 0, 1_000_000);
            SampleArgs.range("--graph", graph, 0, 1_000_000);
            SampleArgs.range("--overhead", overhead, 0, 10_000_000);
            if (!backend.equals("host") && !backend.equals("cuda")) {
                throw new IllegalArgumentException("--backend is host or cuda, got '" + backend + "'");
            }
            if (baseline != null && !baseline.equals("nccl")) {
                throw new IllegalArgumentException("--baseline knows only nccl, got '" + baseline + "'");
            }
            boolean nccl = baseline != null;
            Boolean stage = null;
            if (staged != null) {
                stage = switch (staged) {
                    case "on" -> true;
                    case "off" -> false;
                    default -> throw new IllegalArgumentException("--staged is on or off, got '" + staged + "'");
                };
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
            // written after the sweep: a folder would fail only then
            if (json != null && Files.isDirectory(json)) {
                throw new IllegalArgumentException("--json " + json + " is a folder; name a file");
            }
            if (plot != null && Files.isDirectory(plot)) {
                throw new IllegalArgumentException("--plot " + plot + " is a folder; name a file");
            }
            CollOptions o = new CollOptions(ranks, hosts, kind, type, reduction != null ? reduction : ReduceOp.SUM,
                    root, backend, algorithm, minBytes, maxBytes, factor, iters, warmup, check, graph, nccl,
                    stage != null ? stage : backend.equals("host"), overhead, plot, json);
            // sizes that hold no element are skipped: a sweep of only those would start the ranks for no row at all
            if (o.sizes().stream().noneMatch(s -> o.run(s).count() > 0)) {
                throw new IllegalArgumentException("no size from -b " + minBytes + " to -e " + maxBytes + " holds a "
                        + type.label() + " element for " + CollectiveRun.sampleName(kind) + " on " + ranks + " ranks"
                        + (kind == CollectiveKind.ALL_GATHER || kind == CollectiveKind.REDUCE_SCATTER
                        || kind == CollectiveKind.ALL_TO_ALL ? " (a size is split among the ranks in whole 16-byte"
                        + " chunks)" : "") + "; raise -e");
            }
            return o;
        }
    }

    static CollOptions parse(List<String> args) {
        return SampleArgs.parse(new Args(), args).options();
    }

    /** The kind named {@code v}: ours ({@code allreduce}, {@code sendrecv}) or nccl-tests' ({@code all_reduce}, {@code all_reduce_perf}). */
    static CollectiveKind kind(String v) {
        try {
            return CollectiveRun.parseKind(v);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the collective: " + e.getMessage());
        }
    }

    /**
     * The variables that place a rank on its pretend host under {@code --hosts}: none for one host.
     */
    Map<String, String> hostEnv(int rank) {
        if (hosts == 1) {
            return Map.of();
        }
        String id = "bench-host-" + rank / (ranks / hosts);
        return Map.of("MSCCLPP_HOSTID", id, "NCCL_HOSTID", id);
    }

    /** The arguments that make a rank run these options. */
    List<String> rankArgs() {
        List<String> a = new ArrayList<>(List.of("--coll", CollectiveRun.sampleName(kind), "-d", type.label(),
                "-o", op.label(), "--root", Integer.toString(root), "--backend", backend,
                "-b", Long.toString(minBytes), "-e", Long.toString(maxBytes), "-f", Integer.toString(factor),
                "-n", Integer.toString(iters), "-w", Integer.toString(warmup), "-c", Integer.toString(check),
                "--graph", Integer.toString(graph), "--ranks", Integer.toString(ranks),
                "--hosts", Integer.toString(hosts), "--staged", staged ? "on" : "off",
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
