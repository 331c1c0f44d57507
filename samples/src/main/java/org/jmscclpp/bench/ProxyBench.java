package org.jmscclpp.bench;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.proxy.ProxyService.Poller;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Launcher;
import org.jmscclpp.samples.MarkdownTable;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code jmscclpp bench proxy}: the {@link org.jmscclpp.core.proxy.ProxyService} and
 * {@link org.jmscclpp.core.channel.PortChannel} between two processes, with the virtual-thread poller
 * beside the platform-thread poller, and the ping-pong beside a C floor. The {@link Launcher} starts
 * two ranks of {@link ProxyBenchRankSample}, which measure with each poller in turn the cost of a
 * trigger pushed from the other process, the trigger rate with 1 to N producer threads, and the
 * PortChannel round trip for 1, 1K, 1M and 4M ints; then {@link ShmPingPongFloor} runs the same
 * round trips in C (fork, a shared mapping, memcpy and a release/acquire flag).
 *
 * <p>One table: a row per measurement, columns for both pollers, their cost ratio, the C floor,
 * the Java/C ratios, and the two targets, met or not per row: the virtual-thread poller within
 * {@value #POLLER_TARGET}x of the platform-thread poller, and the Java round trip at most
 * {@value #FLOOR_TARGET}x the C floor. Progress and failures go to stderr; the table goes to stdout.
 * Exits 1 when a rank failed or a result is missing; a missed target is reported, not a failure,
 * and so is a C floor that could not be measured (no compiler), with the reason.
 */
public final class ProxyBench {

    /** The usage line that {@code jmscclpp help} and a usage error print. */
    public static final String SYNOPSIS = "jmscclpp bench proxy [--backend host] [--iters 10000] [--warmup 2000] [--triggers 100000]"
            + " [--rounds 5] [--threads 4]";

    /** Virtual-thread poller cost over platform-thread poller cost, at most. */
    static final double POLLER_TARGET = 1.2;
    /** Java round trip over the C floor's, at most. */
    static final double FLOOR_TARGET = 2.0;
    /** A busy proxy's threads' CPU, in cores, at most (issue 15: a busy proxy spins on at most one core). */
    static final double BUSY_TARGET_CORES = 1.0;

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(5);
    private static final Pattern LINE = Pattern.compile(
            "PROXY poller=(\\S+) metric=(\\S+) param=(\\d+) iters=(\\d+) value=(\\S+)");

    private ProxyBench() {
    }

    /** One result line of a rank. */
    record Result(Poller poller, String metric, int param, long iters, double value) {

        /** The result of a PROXY line, or null for any other line. */
        static @Nullable Result parse(String line) {
            Matcher m = LINE.matcher(line);
            if (!m.matches()) {
                return null;
            }
            try {
                return new Result(Poller.valueOf(m.group(1)), m.group(2), Integer.parseInt(m.group(3)),
                        Long.parseLong(m.group(4)), Double.parseDouble(m.group(5)));
            } catch (IllegalArgumentException e) {
                return null;
            }
        }

        String key() {
            return metric + "/" + param;
        }
    }

    /**
     * One row: a measurement with both pollers.
     *
     * @param label     what was measured, with its unit
     * @param iters     triggers or round trips timed per poller
     * @param rate      whether higher is better (a rate), else lower is (a time)
     * @param virtual   the virtual-thread poller's value, or null when missing
     * @param platform  the platform-thread poller's value, or null when missing
     * @param floor     the C floor's round trip (ping-pong rows), or null
     * @param floorRow  whether the row is a round trip that the C floor applies to
     * @param busyRow   whether the row is the busy proxy's CPU (its own target, not the pollers' ratio)
     */
    record Row(String label, long iters, boolean rate, @Nullable Double virtual, @Nullable Double platform,
               @Nullable Double floor, boolean floorRow, boolean busyRow) {

        /** Virtual's cost over platform's: time over time, or platform's rate over virtual's; above 1 is slower. */
        @Nullable Double pollerRatio() {
            if (virtual == null || platform == null || virtual <= 0 || platform <= 0) {
                return null;
            }
            return rate ? platform / virtual : virtual / platform;
        }

        @Nullable Double overFloor(@Nullable Double java) {
            return java == null || floor == null || floor <= 0 ? null : java / floor;
        }

        @Nullable Boolean pollerTargetMet() {
            Double r = pollerRatio();
            return r == null || busyRow ? null : r <= POLLER_TARGET;
        }

        @Nullable Boolean floorTargetMet(@Nullable Double java) {
            Double r = overFloor(java);
            return r == null ? null : r <= FLOOR_TARGET;
        }
    }

    /** The backends the bench runs on. */
    enum BackendChoice {
        /** Today's bench: the host backend, HOST_IPC ({@link ProxyBenchRankSample}). */
        HOST,
        /** Two GPUs over CUDA_IPC ({@link CudaProxyBench}). */
        CUDA
    }

    /** The backend {@code --backend} chose, and the other options. */
    record Selection(BackendChoice backend, List<String> rest) {
    }

    /**
     * The options of {@code jmscclpp bench proxy}: {@code --backend} and those of either backend
     * ({@link ProxyBenchRankSample.Args} on host, {@link CudaProxyBench.Args} on cuda; defaults there).
     */
    @Command(name = "proxy", mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false,
            description = {"ProxyService and PortChannel between two processes: virtual- beside platform-thread poller"
                    + " (trigger cost, triggers/s, ping-pong 1 to 4M ints), ping-pong beside a C shared-memory floor.",
                    "With --backend cuda, the same on two GPUs over CUDA_IPC: FIFO, d2d semaphore, PortChannel round"
                    + " trip and bandwidth, LL8/LL16 packets beside MSCCL++ C++ 0.10's figures, and the hot driver"
                    + " bindings' cost per call."})
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--backend", paramLabel = "host|cuda", description = "host (HOST_IPC, default) or cuda")
        String backend = "host";
        @Option(names = "--iters", paramLabel = "N", description = "timed round trips (default: 10000)")
        @Nullable Integer iters;
        @Option(names = "--warmup", paramLabel = "N", description = "untimed round trips first (default: 2000 on"
                + " host, 20000 on cuda)")
        @Nullable Integer warmup;
        @Option(names = "--triggers", paramLabel = "N", description = "host: triggers per throughput round"
                + " (default: 100000)")
        @Nullable Integer triggers;
        @Option(names = "--rounds", paramLabel = "N", description = "host: throughput rounds (default: 5)")
        @Nullable Integer rounds;
        @Option(names = "--threads", paramLabel = "N", description = "host: the most producer threads (default: 4)")
        @Nullable Integer threads;
        @Option(names = "--bw-iters", paramLabel = "N", description = "cuda: timed bandwidth transfers (default: 200)")
        @Nullable Integer bwIters;
        @Option(names = "--bw-mib", paramLabel = "M", description = "cuda: MiB per bandwidth transfer (default: 128)")
        @Nullable Integer bwMib;
        @Option(names = "--calls", paramLabel = "N", description = "cuda: calls per timed driver binding"
                + " (default: 100000)")
        @Nullable Integer calls;

        @Override
        public void check() {
            Selection s = selection();
            if (s.backend() == BackendChoice.CUDA) {
                CudaProxyBench.parse(s.rest());
            } else {
                ProxyBenchRankSample.parse(s.rest());
            }
        }

        /** The backend and the other options as that backend's arguments; an option of the other backend is refused. */
        Selection selection() {
            BackendChoice backend = switch (this.backend) {
                case "host" -> BackendChoice.HOST;
                case "cuda" -> BackendChoice.CUDA;
                default -> throw new IllegalArgumentException("--backend is host or cuda, got '" + this.backend + "'");
            };
            boolean cuda = backend == BackendChoice.CUDA;
            List<String> rest = new ArrayList<>();
            add(rest, "--iters", iters, true);
            add(rest, "--warmup", warmup, true);
            add(rest, "--triggers", triggers, !cuda);
            add(rest, "--rounds", rounds, !cuda);
            add(rest, "--threads", threads, !cuda);
            add(rest, "--bw-iters", bwIters, cuda);
            add(rest, "--bw-mib", bwMib, cuda);
            add(rest, "--calls", calls, cuda);
            return new Selection(backend, List.copyOf(rest));
        }

        private void add(List<String> rest, String option, @Nullable Integer value, boolean applies) {
            if (value == null) {
                return;
            }
            if (!applies) {
                throw new IllegalArgumentException(option + " is not an option of --backend " + backend);
            }
            rest.add(option);
            rest.add(value.toString());
        }
    }

    /**
     * Parses {@code args}: the backend {@code --backend host|cuda} chose (host when absent) and the
     * other options as arguments of that backend.
     *
     * @throws IllegalArgumentException for a bad option or value, or an option of the other backend
     */
    static Selection select(List<String> args) {
        return SampleArgs.parse(new Args(), args).selection();
    }

    /** {@code jmscclpp bench proxy ARGS}: prints its table on {@code out}; returns the exit code. */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        Selection selection = BenchArgs.parseOrPrintUsage(args, ProxyBench::select, "jmscclpp bench proxy",
                SYNOPSIS + "\n       " + CudaProxyBench.SYNOPSIS, err);
        if (selection == null) {
            return ExitCodes.USAGE;
        }
        if (selection.backend() == BackendChoice.CUDA) {
            return CudaProxyBench.run(selection.rest(), out, err);
        }
        ProxyBenchRankSample.Options o = BenchArgs.parseOrPrintUsage(selection.rest(), ProxyBenchRankSample::parse,
                "jmscclpp bench proxy", SYNOPSIS, err);
        if (o == null) {
            return ExitCodes.USAGE;
        }
        err.println("bench: proxy, 2 processes, virtual-thread then platform-thread poller ...");
        Map<String, Map<Poller, Result>> results = new LinkedHashMap<>();
        String error = measure(o, results, err);
        List<ShmPingPongFloor.Size> sizes = sizes(o);
        err.println("bench: C floor ...");
        ShmPingPongFloor.Outcome floor = ShmPingPongFloor.measure(sizes);
        List<Row> rows = rows(o, results, floor.medianUs());

        out.println(BootstrapBench.machine());
        out.print(method(o));
        out.println();
        out.print(table(rows));
        out.println();
        out.println(pollerTargetLine(rows));
        out.println(floorTargetLine(rows, floor.problem()));
        out.println(busyTargetLine(rows));
        if (floor.problem() != null) {
            out.println("C floor skipped: " + floor.problem());
        }
        if (error == null) {
            List<String> missing = new ArrayList<>();
            for (Row r : rows) {
                if (r.virtual() == null || r.platform() == null) {
                    missing.add(r.label());
                }
            }
            if (!missing.isEmpty()) {
                error = "no result for " + String.join("; ", missing);
            }
        }
        if (error != null) {
            out.println("bench proxy failed: " + error);
            return ExitCodes.FAILURE;
        }
        return ExitCodes.OK;
    }

    /** The ping-pong sizes with the iterations both the ranks and the C floor run. */
    static List<ShmPingPongFloor.Size> sizes(ProxyBenchRankSample.Options o) {
        return ProxyBenchRankSample.SIZES.stream().map(ints -> new ShmPingPongFloor.Size(ints,
                ProxyBenchRankSample.itersFor(ints, o.iters()), ProxyBenchRankSample.warmupFor(ints, o.warmup())))
                .toList();
    }

    /** Runs the two ranks, adding their results; returns what went wrong, or null. */
    private static @Nullable String measure(ProxyBenchRankSample.Options o, Map<String, Map<Poller, Result>> results,
                                            PrintStream err) {
        List<String> repeated = new ArrayList<>();
        BenchJob.Outcome outcome = BenchJob.run(Launcher.builder(2).sample(ProxyBenchRankSample.NAME,
                ProxyBenchRankSample.args(o)), JOB_TIMEOUT, line -> {
                    Result r = line.stderr() ? null : Result.parse(line.text());
                    if (r == null) {
                        return false;
                    }
                    synchronized (results) {
                        if (results.computeIfAbsent(r.key(), k -> new EnumMap<>(Poller.class)).put(r.poller(), r) != null) {
                            repeated.add(line.text());
                        }
                    }
                    return true;
                });
        String error = outcome.error();
        synchronized (results) {
            if (error == null && !repeated.isEmpty()) {
                error = "results repeated: " + repeated;
            }
        }
        if (error != null) {
            outcome.report(err, "proxy", error);
        }
        return error;
    }

    /** The rows in table order: trigger cost, the ping-pongs, the rates. */
    static List<Row> rows(ProxyBenchRankSample.Options o, Map<String, Map<Poller, Result>> results,
                          Map<Integer, Double> floor) {
        List<Row> rows = new ArrayList<>();
        rows.add(row("trigger from another process, µs", (long) o.triggers() * o.rounds(), false, results,
                ProxyBenchRankSample.TRIGGER_US + "/1", null, false));
        for (ShmPingPongFloor.Size s : sizes(o)) {
            rows.add(row("ping-pong " + ints(s.ints()) + ", µs", s.iters(), false, results,
                    ProxyBenchRankSample.PINGPONG_US + "/" + s.ints(), floor.get(s.ints()), true));
        }
        for (int t = 1; t <= o.threads(); t++) {
            rows.add(row("triggers/s, " + t + " producer thread" + (t == 1 ? "" : "s") + ", M/s",
                    (long) (o.triggers() / t) * t * o.rounds(), true, results, ProxyBenchRankSample.RATE_MPS + "/" + t,
                    null, false));
        }
        rows.addAll(busyRows(o, results));
        return rows;
    }

    private static Row row(String label, long iters, boolean rate, Map<String, Map<Poller, Result>> results,
                           String key, @Nullable Double floor, boolean floorRow) {
        return row(label, iters, rate, results, key, floor, floorRow, false);
    }

    /** The busy proxy's CPU: its threads' (the target's row), then its process's, while rank 1 pushed every trigger. */
    static List<Row> busyRows(ProxyBenchRankSample.Options o, Map<String, Map<Poller, Result>> results) {
        long triggers = ProxyBenchRankSample.busyTriggers(o);
        return List.of(row("busy proxy: its threads' CPU while every trigger above was pushed, cores", triggers, false,
                results, ProxyBenchRankSample.BUSY_CORES + "/0", null, false, true),
                row("busy proxy: its process's CPU meanwhile, cores", triggers, false, results,
                        ProxyBenchRankSample.BUSY_PROCESS_CORES + "/0", null, false, true));
    }

    private static Row row(String label, long iters, boolean rate, Map<String, Map<Poller, Result>> results,
                           String key, @Nullable Double floor, boolean floorRow, boolean busyRow) {
        Map<Poller, Result> byPoller = results.getOrDefault(key, Map.of());
        Result v = byPoller.get(Poller.VIRTUAL_THREAD);
        Result p = byPoller.get(Poller.PLATFORM_THREAD);
        return new Row(label, iters, rate, v == null ? null : v.value(), p == null ? null : p.value(), floor, floorRow,
                busyRow);
    }

    /** "1 int", "1K ints", "4M ints". */
    static String ints(int n) {
        if (n == 1) {
            return "1 int";
        }
        if (n % (1 << 20) == 0) {
            return (n >> 20) + "M ints";
        }
        if (n % (1 << 10) == 0) {
            return (n >> 10) + "K ints";
        }
        return n + " ints";
    }

    /** What each row measures and how, printed above the table. */
    static String method(ProxyBenchRankSample.Options o) {
        List<ShmPingPongFloor.Size> sizes = sizes(o);
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "trigger: rank 1 pushes DATA triggers of 0 bytes into rank 0's fifo, mapped"
                + " over HOST_IPC; rank 0's ProxyService handles each as a zero-length HOST_IPC write (id lookups and"
                + " range checks); per trigger = median over %d rounds of %d triggers of the round's time / %d, a sync"
                + " once a lap (MSCCL++ FifoTest), after one untimed round%n", o.rounds(), o.triggers(), o.triggers()));
        sb.append(String.format(Locale.ROOT, "triggers/s: the same triggers from 1 to %d platform threads of rank 1,"
                + " %d in all per round, each thread syncing on its last; median of %d rounds%n", o.threads(),
                o.triggers(), o.rounds()));
        StringBuilder counts = new StringBuilder();
        for (ShmPingPongFloor.Size s : sizes) {
            counts.append(counts.isEmpty() ? "" : ", ").append(ints(s.ints())).append(": ").append(s.iters())
                    .append(" after ").append(s.warmup());
        }
        sb.append("ping-pong: rank 0 putWithSignal + flush + wait, rank 1 wait + putWithSignal + flush, one proxy per"
                + " process, the first and last int stamped and checked each round; median round trip (").append(counts)
                .append(")\n");
        sb.append("C floor: the same round trips in C, same counts: fork, one shared mapping, memcpy of the ints and a"
                + " 64-bit flag stored with release and spun on with acquire; measured after the Java ranks exited\n");
        sb.append("busy proxy: the CPU time of rank 0's proxy threads (ThreadMXBean: the platform poller's thread,"
                + " or the virtual-thread scheduler's carriers, delay scheduler and unblocker) and of its process (ProcessHandle, every thread of its"
                + " JVM) from before it sent its fifo until rank 1 ended the trigger and rate measurements, over that"
                + " time: the proxy handling triggers nearly all the time\n");
        sb.append("both pollers in this run, virtual first, each with its own proxies and warm-up; virtual/platform is a"
                + " cost ratio (time over time, or platform rate over virtual rate): above 1, virtual is slower\n");
        return sb.toString();
    }

    /** The markdown table. */
    static String table(List<Row> rows) {
        List<String> header = List.of("measure", "iters", "virtual", "platform", "virtual/platform", "C floor",
                "virtual/C", "platform/C", "virtual <= " + POLLER_TARGET + "x platform", "<= " + format(FLOOR_TARGET, 1)
                + "x C floor (virtual / platform)");
        List<List<String>> cells = new ArrayList<>();
        for (Row r : rows) {
            int decimals = r.rate() ? 3 : r.virtual() != null && r.virtual() >= 1000 ? 1 : 2;
            cells.add(List.of(r.label(), Long.toString(r.iters()), value(r.virtual(), decimals),
                value(r.platform(), decimals), value(r.pollerRatio(), 2),
                r.floorRow() ? value(r.floor(), decimals) : "-",
                r.floorRow() ? value(r.overFloor(r.virtual()), 2) : "-",
                r.floorRow() ? value(r.overFloor(r.platform()), 2) : "-",
                verdict(r.pollerTargetMet()),
                r.floorRow() ? verdict(r.floorTargetMet(r.virtual())) + " / " + verdict(r.floorTargetMet(r.platform()))
                    : "-"));
        }
        return MarkdownTable.render(header, cells, c -> leftAligned(c, header.size()));
    }

    /** {@code target: virtual-thread poller within 1.2x of the platform-thread poller: met on 7 of 9 rows (...)}. */
    static String pollerTargetLine(List<Row> rows) {
        String head = "target: virtual-thread poller within " + POLLER_TARGET + "x of the platform-thread poller: ";
        List<Row> measured = rows.stream().filter(r -> r.pollerTargetMet() != null).toList();
        if (measured.isEmpty()) {
            return head + "nothing measured";
        }
        List<String> missed = measured.stream().filter(r -> !r.pollerTargetMet()).map(Row::label).toList();
        return missed.isEmpty() ? head + "met on " + measured.size() + " of " + measured.size() + " rows"
                : head + "not met on " + missed.size() + " of " + measured.size() + " rows (" + String.join("; ", missed)
                + ")";
    }

    /** {@code target: Java round trip <= 2x the C floor: virtual met on 2 of 4 sizes, platform met on 2 of 4 sizes}. */
    static String floorTargetLine(List<Row> rows, @Nullable String floorProblem) {
        String head = "target: Java round trip <= " + format(FLOOR_TARGET, 1) + "x the C floor: ";
        List<Row> measured = rows.stream().filter(r -> r.floorRow() && r.floor() != null).toList();
        if (measured.isEmpty()) {
            return head + "not evaluated (" + (floorProblem != null ? "no C floor" : "no ping-pong measured") + ")";
        }
        long virtual = measured.stream().filter(r -> Boolean.TRUE.equals(r.floorTargetMet(r.virtual()))).count();
        long platform = measured.stream().filter(r -> Boolean.TRUE.equals(r.floorTargetMet(r.platform()))).count();
        return head + "virtual met on " + virtual + " of " + measured.size() + " sizes, platform met on " + platform
                + " of " + measured.size() + " sizes";
    }

    /** {@code target: a busy proxy spins on at most one core (its threads' CPU): virtual 0.98, platform 1.00 cores: met}. */
    static String busyTargetLine(List<Row> rows) {
        String head = "target: a busy proxy spins on at most one core (its threads' CPU): ";
        Row busy = rows.stream().filter(Row::busyRow).findFirst().orElse(null);
        if (busy == null || busy.virtual() == null || busy.platform() == null) {
            return head + "not measured";
        }
        boolean met = busy.virtual() <= BUSY_TARGET_CORES && busy.platform() <= BUSY_TARGET_CORES;
        return head + "virtual " + format(busy.virtual(), 2) + ", platform " + format(busy.platform(), 2) + " cores: "
                + (met ? "met" : "not met");
    }

    private static boolean leftAligned(int column, int columns) {
        return column == 0 || column >= columns - 2;
    }

    private static String verdict(@Nullable Boolean met) {
        return met == null ? "n/a" : met ? "met" : "not met";
    }

    private static String value(@Nullable Double v, int decimals) {
        return v == null ? "n/a" : format(v, decimals);
    }

    private static String format(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }
}
