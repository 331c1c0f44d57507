package org.jmscclpp.bench;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.proxy.ProxyService.Poller;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.HotBindingsProbe;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Launcher;
import org.jmscclpp.samples.MarkdownTable;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code jmscclpp bench proxy --backend cuda}: the GPU paths between two GPUs of this host, beside
 * MSCCL++ C++ 0.10's figures on the 2×H200 host ({@code GPU-HOSTS.md}; constants, not measured in
 * this run). The {@link Launcher} starts two ranks of {@link CudaProxyBenchRankSample}, one per
 * GPU; rank 0 prints its results, which become one markdown table (measure, jmscclpp, MSCCL++,
 * their ratio, whether jmscclpp meets the MSCCL++ figure: at most it for times, at least it for
 * bandwidth) and a second table of the Java cost per call of the hot driver bindings.
 *
 * <p>Without two GPUs, the CUDA driver or NVRTC it fails before starting any rank, printing
 * {@code the cuda backend is unavailable here: <reason>}, with exit code 2. Exits 1 when a rank
 * failed or a result is missing; a missed target is reported, not a failure.
 */
public final class CudaProxyBench {

    /** The usage line that {@code jmscclpp help} and a usage error print. */
    public static final String SYNOPSIS = "jmscclpp bench proxy --backend cuda [--iters 10000] [--warmup 20000]"
            + " [--bw-iters 200] [--bw-mib 128] [--calls 100000]";

    static final String MSCCLPP_COLUMN = "MSCCL++ C++ 0.10 (2xH200, GPU-HOSTS.md)";

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(10);
    private static final Pattern LINE = Pattern.compile(
            "CUDA metric=(\\S+) variant=(\\S+) iters=(\\d+) value=(\\S+)");
    private static final Pattern HOT_LINE = Pattern.compile("CUDA-HOT call=(\\S+) calls=(\\d+) ns=(\\S+)");
    private static final Pattern LOOP_LINE = Pattern.compile("CUDA-LOOP poller=(\\S+) triggers=(\\d+) ns=(\\S+)");

    private CudaProxyBench() {
    }

    /** The options of the command and of its ranks. */
    record Options(int iters, int warmup, int bwIters, int bwMib, int calls) {
    }

    /**
     * One row of the table.
     *
     * @param metric    the rank's metric name
     * @param variant   the rank's variant ({@code -} for none)
     * @param label     what the row says it measures, with the unit
     * @param reference MSCCL++ C++ 0.10's figure on the 2×H200 host
     * @param rate      whether higher is better (bandwidth), else lower is (times)
     */
    record Spec(String metric, String variant, String label, double reference, boolean rate) {

        String key() {
            return metric + "/" + variant;
        }
    }

    /** A row with its measured value, or null when the ranks gave none. */
    record Row(Spec spec, @Nullable Double value) {

        /** jmscclpp over MSCCL++. */
        @Nullable Double ratio() {
            return value == null ? null : value / spec.reference();
        }

        @Nullable Boolean met() {
            return value == null ? null : spec.rate() ? value >= spec.reference() : value <= spec.reference();
        }
    }

    /** The rows, in table order, for {@code bwMib} MiB bandwidth buffers. */
    static List<Spec> specs(int bwMib) {
        List<Spec> specs = new ArrayList<>();
        specs.add(new Spec(CudaProxyBenchRankSample.FIFO_US, CudaProxyBenchRankSample.KERNEL,
                "FIFO push→poll per trigger, kernel timer, µs", 1.81, false));
        specs.add(new Spec(CudaProxyBenchRankSample.FIFO_US, CudaProxyBenchRankSample.WALL,
                "FIFO push→poll per trigger, host wall clock, µs", 1.81, false));
        specs.add(new Spec(CudaProxyBenchRankSample.D2D_US, CudaProxyBenchRankSample.NONE,
                "d2d semaphore one-way, µs", 1.36, false));
        for (Poller p : Poller.values()) {
            specs.add(new Spec(CudaProxyBenchRankSample.PORT_RTT_US, p.name(),
                    "PortChannel CUDA-IPC round trip 1 int, " + poller(p) + " poller, µs", 17.6, false));
        }
        for (Poller p : Poller.values()) {
            specs.add(new Spec(CudaProxyBenchRankSample.PORT_BW_GBPS, p.name(), "PortChannel bidirectional "
                    + bwMib + " MiB, per direction, " + poller(p) + " poller, GB/s", 368, true));
        }
        specs.add(new Spec(CudaProxyBenchRankSample.LL8_US, CudaProxyBenchRankSample.NONE,
                "MemoryChannel LL8 4 KiB one-way, µs", 1.40, false));
        specs.add(new Spec(CudaProxyBenchRankSample.LL16_US, CudaProxyBenchRankSample.NONE,
                "MemoryChannel LL16 4 KiB one-way, µs", 1.64, false));
        return specs;
    }

    private static String poller(Poller p) {
        return p == Poller.VIRTUAL_THREAD ? "virtual-thread" : "platform-thread (1 ms idle spin)";
    }

    /** The options of {@code jmscclpp bench proxy --backend cuda} and of its ranks. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false)
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--iters", paramLabel = "N", description = "timed round trips (default: 10000)")
        int iters = 10_000;
        /*
         * 20000: the proxy loop's path (handle, the connection's driver calls) is compiled by C2 only
         * after some thousands of triggers. With 1000 untimed round trips (2000 triggers) the poller
         * measured first, the virtual-thread one, was timed partly in less optimised code and the
         * platform-thread one after it in fully compiled code: on 2 x H200 its loop took 3.9-4.2 µs a
         * trigger against 3.1-3.2, with 20000 2.7-3.2 against 2.8-2.9 (docs/primitives.md).
         */
        @Option(names = "--warmup", paramLabel = "N",
                description = "untimed round trips (or triggers, for the FIFO) before each timed run (default: 20000)")
        int warmup = 20_000;
        /*
         * 200 (72 ms a poller at 370 GB/s): over 20 puts (7 ms) the virtual-thread poller's figure moved
         * from 350 to 368 GB/s between runs of the same bundle on 2 x H200, over 200 by 2 GB/s.
         */
        @Option(names = "--bw-iters", paramLabel = "N", description = "timed bandwidth transfers (default: 200)")
        int bwIters = 200;
        @Option(names = "--bw-mib", paramLabel = "M", description = "MiB per bandwidth transfer (default: 128)")
        int bwMib = 128;
        @Option(names = "--calls", paramLabel = "N", description = "calls per timed driver binding (default: 100000)")
        int calls = 100_000;

        @Override
        public void check() {
            SampleArgs.range("--iters", iters, 1, 10_000_000);
            SampleArgs.range("--warmup", warmup, 0, 10_000_000);
            SampleArgs.range("--bw-iters", bwIters, 1, 10_000);
            SampleArgs.range("--bw-mib", bwMib, 1, 16_384);
            SampleArgs.range("--calls", calls, 1, 100_000_000);
        }
    }

    static Options parse(List<String> args) {
        Args a = SampleArgs.parse(new Args(), args);
        return new Options(a.iters, a.warmup, a.bwIters, a.bwMib, a.calls);
    }

    /** The arguments that make a rank run with {@code o}. */
    static List<String> args(Options o) {
        return List.of("--iters", Integer.toString(o.iters()), "--warmup", Integer.toString(o.warmup()),
                "--bw-iters", Integer.toString(o.bwIters()), "--bw-mib", Integer.toString(o.bwMib()),
                "--calls", Integer.toString(o.calls()));
    }

    /** Runs the bench if this host has what the cuda backend needs for two ranks. */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        return run(args, out, err, () -> CudaBackend.unavailableReason(2));
    }

    /** {@link #run(List, PrintStream, PrintStream)} with {@code unavailable} saying why the backend cannot run. */
    static int run(List<String> args, PrintStream out, PrintStream err, Supplier<Optional<String>> unavailable) {
        Options o = BenchArgs.parseOrPrintUsage(args, CudaProxyBench::parse, "jmscclpp bench proxy", SYNOPSIS, err);
        if (o == null) {
            return ExitCodes.USAGE;
        }
        Optional<String> reason = unavailable.get();
        if (reason.isPresent()) {
            err.println("jmscclpp bench proxy: the cuda backend is unavailable here: " + reason.get());
            return ExitCodes.USAGE;
        }
        err.println("bench: proxy on the cuda backend, 2 processes on 2 GPUs ...");
        List<String> lines = new ArrayList<>();
        BenchJob.Outcome outcome = BenchJob.run(Launcher.builder(2)
                .sample(CudaProxyBenchRankSample.NAME, args(o))
                // each rank takes its local GPU: an inherited explicit device would put both on one
                .env(Map.of(CudaBackend.DEVICE_ENV, "")), JOB_TIMEOUT, line -> {
                    if (line.stderr() || line.rank() != 0 || !line.text().startsWith("CUDA")) {
                        return false;
                    }
                    synchronized (lines) {
                        lines.add(line.text());
                    }
                    return true;
                });
        String error = outcome.error();
        if (error != null) {
            outcome.report(err, "proxy (cuda)", error);
        }
        List<String> results;
        synchronized (lines) {
            results = List.copyOf(lines);
        }
        Report report = report(o, results);
        out.println(BootstrapBench.machine());
        out.print(method(o));
        out.println();
        out.print(report.text());
        if (error == null && !report.missing().isEmpty()) {
            error = "no result for " + String.join("; ", report.missing());
        }
        if (error != null) {
            out.println("bench proxy (cuda) failed: " + error);
            return ExitCodes.FAILURE;
        }
        return ExitCodes.OK;
    }

    /** The tables and target line, and the rows or bindings without a result. */
    record Report(String text, List<String> missing) {
    }

    /**
     * The report of rank 0's result lines (other lines are ignored): the table, the line of targets
     * met, and the table of the hot bindings. A result given twice counts once, the last.
     */
    static Report report(Options o, List<String> lines) {
        Map<String, Double> values = new LinkedHashMap<>();
        Map<String, Double> hot = new LinkedHashMap<>();
        Map<String, List<String>> loops = new LinkedHashMap<>();
        for (String line : lines) {
            Matcher m = LINE.matcher(line);
            Matcher h = HOT_LINE.matcher(line);
            Matcher l = LOOP_LINE.matcher(line);
            try {
                if (m.matches()) {
                    values.put(m.group(1) + "/" + m.group(2), Double.parseDouble(m.group(4)));
                } else if (h.matches()) {
                    hot.put(h.group(1), Double.parseDouble(h.group(3)));
                } else if (l.matches()) {
                    loops.put(l.group(1), List.of(l.group(1), l.group(2), format(Double.parseDouble(l.group(3)), 1)));
                }
            } catch (NumberFormatException e) {
                // not a result line after all
            }
        }
        List<Row> rows = specs(o.bwMib()).stream().map(s -> new Row(s, values.get(s.key()))).toList();
        List<String> missing = new ArrayList<>();
        rows.stream().filter(r -> r.value() == null).forEach(r -> missing.add(r.spec().label()));
        StringBuilder sb = new StringBuilder();
        sb.append(table(rows)).append('\n');
        long measured = rows.stream().filter(r -> r.met() != null).count();
        List<String> notMet = rows.stream().filter(r -> Boolean.FALSE.equals(r.met())).map(r -> r.spec().label())
                .toList();
        sb.append("target: jmscclpp <= MSCCL++ for times, >= for bandwidth: met on ").append(measured - notMet.size())
                .append(" of ").append(measured).append(" rows").append(notMet.isEmpty() ? ""
                        : " (not met: " + String.join("; ", notMet) + ")").append('\n');
        sb.append("MSCCL++ figures: MSCCL++ C++ 0.10 on the 2xH200 host as GPU-HOSTS.md records them (same method as"
                + " its tests), constants, not measured in this run\n\n");
        List<List<String>> hotCells = new ArrayList<>();
        for (String call : List.of(HotBindingsProbe.EVENT_QUERY, HotBindingsProbe.STREAM_IS_DONE,
                HotBindingsProbe.CTX_SET_CURRENT, HotBindingsProbe.STREAM_WRITE_VALUE64)) {
            Double ns = hot.get(call);
            hotCells.add(List.of(hotLabel(call), ns == null ? "n/a" : format(ns, 1)));
        }
        sb.append(MarkdownTable.render(List.of("hot binding, per call from Java (rank 0, " + o.calls() + " calls)",
                "ns"), hotCells, c -> c == 0));
        if (!loops.isEmpty()) {
            sb.append('\n').append(MarkdownTable.render(List.of("rank 0's proxy loop in the timed round trips, poller",
                    "triggers", "ns per trigger (its transports' calls included)"), List.copyOf(loops.values()),
                    c -> c == 0));
        }
        if (hot.isEmpty()) {
            missing.add("hot bindings");
        }
        return new Report(sb.toString(), missing);
    }

    private static String hotLabel(String call) {
        return switch (call) {
            case HotBindingsProbe.EVENT_QUERY -> "cuEventQuery, completed event";
            case HotBindingsProbe.STREAM_IS_DONE -> "CudaStream.isDone (cuCtxSetCurrent + cuEventQuery)";
            case HotBindingsProbe.CTX_SET_CURRENT -> "cuCtxSetCurrent (CudaContext.makeCurrent)";
            case HotBindingsProbe.STREAM_WRITE_VALUE64 -> "cuStreamWriteValue64_v2, one enqueue";
            default -> call;
        };
    }

    /** The main table. */
    static String table(List<Row> rows) {
        List<String> header = List.of("measure", "jmscclpp", MSCCLPP_COLUMN, "ratio", "target met");
        List<List<String>> cells = new ArrayList<>();
        for (Row r : rows) {
            int decimals = r.spec().rate() ? 1 : 2;
            Boolean met = r.met();
            cells.add(List.of(r.spec().label(), r.value() == null ? "n/a" : format(r.value(), decimals),
                    format(r.spec().reference(), decimals), r.ratio() == null ? "n/a" : format(r.ratio(), 2),
                    met == null ? "n/a" : met ? "yes" : "no"));
        }
        return MarkdownTable.render(header, cells, c -> c == 0 || c == 4);
    }

    /** What each row measures and how, printed above the table. */
    static String method(Options o) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "cuda: 2 processes, one GPU each, CUDA_IPC; kernels timed by %%globaltimer;"
                + " %d timed iterations after a launch of %d untimed ones%n", o.iters(), o.warmup()));
        sb.append("FIFO: rank 0's kernel fifoPushTimed pushes into a fifo of 512 while a Java thread polls, checks and"
                + " pops; kernel timer / iters, and the thread's wall clock from the launch to the last pop / iters\n");
        sb.append("d2d semaphore: d2dPingPong signal/wait round trips, elapsed / (2 iters); LL8, LL16: llPingPong8/16"
                + " of 1024 ints with 1024 threads, elapsed / iters, every element checked\n");
        sb.append(String.format(Locale.ROOT, "PortChannel: one ProxyService per rank per poller; round trip:"
                + " portPingPongPerf (putWithSignal of 1 int + flush + wait), elapsed / iters; bandwidth: portBandwidth"
                + " both directions at once, %d puts of %d MiB each way after %d untimed, bytes x puts / elapsed of"
                + " rank 0's direction%n", o.bwIters(), o.bwMib(), CudaProxyBenchRankSample.BW_WARMUP));
        sb.append("ratio: jmscclpp / MSCCL++; target met: jmscclpp <= MSCCL++ for times, >= for bandwidth\n");
        return sb.toString();
    }

    private static String format(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }
}
