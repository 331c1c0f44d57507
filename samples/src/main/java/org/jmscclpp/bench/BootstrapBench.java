package org.jmscclpp.bench;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.UniqueId;
import org.jmscclpp.samples.Blocking;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Launcher;
import org.jmscclpp.samples.MarkdownTable;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.publisher.Mono;

/**
 * {@code jmscclpp bench bootstrap}: latency and bandwidth of {@link TcpBootstrap}'s operations, as one
 * table with a row per rank count and mode:
 * <ul>
 *   <li>{@code procs}: N separate processes started by the {@link Launcher}, each running
 *       {@link BenchRankSample}; a value is the median over the iterations of the slowest rank's time;</li>
 *   <li>{@code jvm}: N bootstraps in this JVM (rank 0 creates the unique id); a value is the median over
 *       the iterations of the wall time from subscribing every rank's operation until all complete.</li>
 * </ul>
 * Where {@link MpiBaseline} measures Open MPI, {@code procs} rows get MPI columns and the ratio
 * ours/MPI per operation. Progress and failures go to stderr; the table goes to stdout.
 */
public final class BootstrapBench {

    /** The usage line that {@code jmscclpp help} and a usage error print. */
    public static final String SYNOPSIS = "jmscclpp bench bootstrap [--iters 200] [--warmup 20000] [--procs 2,4,8,16]"
            + " [--jvm 64,256,1024] [--no-mpi]";

    /** Results larger than this (over all ranks of one iteration) are not attempted in one JVM. */
    static final long JVM_MEMORY_LIMIT = 2L << 30;

    private static final Duration PROCS_ROW_TIMEOUT = Duration.ofMinutes(5);
    private static final Duration JVM_INIT_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration OP_TIMEOUT = BenchRankSample.OP_TIMEOUT;
    private static final Pattern BENCH_LINE =
            Pattern.compile("BENCH n=(\\d+) op=(\\S+) (max_ms|median_us|median_gbps)=(\\S+)");
    private static final String INIT = "init";

    private BootstrapBench() {
    }

    /** One row of the table: values by op key ({@code init} in ms), notes replacing values, an error. */
    record Row(int n, String mode, Map<String, Double> values, Map<String, String> notes,
               @Nullable Map<String, Double> mpi, @Nullable String error) {
    }

    record Options(int iters, int warmup, List<Integer> procs, List<Integer> jvm, boolean mpi) {
    }

    /** {@code jmscclpp bench bootstrap ARGS}: prints its table on {@code out}; returns the exit code. */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        Options o =
                BenchArgs.parseOrPrintUsage(args, BootstrapBench::parse, "jmscclpp bench bootstrap", SYNOPSIS, err);
        if (o == null) {
            return ExitCodes.USAGE;
        }
        List<Row> rows = new ArrayList<>();
        for (int n : o.procs()) {
            err.printf("bench: procs n=%d ...%n", n);
            Row row = measureProcs(n, o.iters(), o.warmup(), err);
            Map<String, Double> mpi = null;
            if (o.mpi()) {
                err.printf("bench: mpi n=%d ...%n", n);
                mpi = MpiBaseline.measure(n, o.iters(), MPI_WARMUP).orElse(null);
            }
            rows.add(new Row(row.n(), row.mode(), row.values(), row.notes(), mpi, row.error()));
        }
        for (int n : o.jvm()) {
            err.printf("bench: jvm n=%d ...%n", n);
            rows.add(measureInJvm(n, o.iters(), Math.min(o.warmup(), JVM_WARMUP)));
        }
        out.println(machine());
        out.printf("iterations: %d after %d warm-up for small messages, a tenth for bulk ones (jvm rows: %d, "
                + "their ranks warm the same code together; MPI: " + MPI_WARMUP + "); "
                + "value = median over iterations of the slowest rank's time (jvm: of all ranks' wall time); "
                + "GB = 1e9 B%n%n", o.iters(), o.warmup(), Math.min(o.warmup(), JVM_WARMUP));
        out.print(table(rows));
        boolean failed = false;
        for (Row r : rows) {
            if (r.error() != null) {
                out.printf("%s n=%d failed: %s%n", r.mode(), r.n(), r.error());
                failed = true;
            }
        }
        return failed ? ExitCodes.FAILURE : ExitCodes.OK;
    }

    /** The options of {@code jmscclpp bench bootstrap}. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false, name = "bootstrap",
            description = "TcpBootstrap latencies: separate processes and ranks in one JVM, beside Open MPI")
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--iters", paramLabel = "N", description = "timed iterations per operation (default: 200)")
        int iters = 200;
        @Option(names = "--warmup", paramLabel = "N", description = "untimed iterations first (default: 20000)")
        int warmup = 20000;
        @Option(names = "--procs", paramLabel = "N,N", description = "rank counts in separate processes, each at"
                + " least 2; empty skips the mode (default: 2,4,8,16)")
        String procs = "2,4,8,16";
        @Option(names = "--jvm", paramLabel = "N,N", description = "rank counts in this JVM (default: 64,256,1024)")
        String jvm = "64,256,1024";
        @Option(names = "--no-mpi", description = "leave out the Open MPI baseline")
        boolean noMpi;

        @Override
        public void check() {
            options();
        }

        Options options() {
            Options o = new Options(SampleArgs.range("--iters", iters, 1, Integer.MAX_VALUE),
                    SampleArgs.range("--warmup", warmup, 0, Integer.MAX_VALUE), sizes("--procs", procs),
                    sizes("--jvm", jvm), !noMpi);
            if (o.procs().isEmpty() && o.jvm().isEmpty()) {
                // each empty list skips its mode: both would print an empty table and exit 0
                throw new IllegalArgumentException("--procs and --jvm are both empty: nothing to measure");
            }
            return o;
        }
    }

    static Options parse(List<String> args) {
        return SampleArgs.parse(new Args(), args).options();
    }

    /** A comma list of rank counts, each at least 2; an empty value skips the mode. */
    private static List<Integer> sizes(String opt, String v) {
        List<Integer> out = new ArrayList<>();
        for (String s : v.split(",")) {
            if (!s.isBlank()) {
                out.add(SampleArgs.count(opt, s.strip(), 2));
            }
        }
        return List.copyOf(out);
    }

    /** Runs {@code n} rank processes and reads rank 0's BENCH lines. */
    static Row measureProcs(int n, int iters, int warmup, PrintStream err) {
        Map<String, Double> values = new LinkedHashMap<>();
        List<String> args = List.of("--iters", Integer.toString(iters), "--warmup", Integer.toString(warmup));
        BenchJob.Outcome outcome = BenchJob.run(Launcher.builder(n).sample(BenchRankSample.NAME, args),
                PROCS_ROW_TIMEOUT, line -> {
                    Matcher m = BENCH_LINE.matcher(line.text());
                    if (line.rank() != 0 || line.stderr() || !m.matches()) {
                        return false;
                    }
                    synchronized (values) {
                        values.put(m.group(2), Double.parseDouble(m.group(4)));
                    }
                    return true;
                });
        synchronized (values) {
            String error = outcome.error();
            if (error == null && !values.containsKey(INIT)) {
                error = "rank 0 printed no BENCH lines";
            }
            if (error != null) {
                outcome.report(err, "procs n=" + n, error);
            }
            return new Row(n, "procs", Map.copyOf(values), Map.of(), null, error);
        }
    }

    /** Runs {@code n} bootstraps in this JVM. */
    /**
     * Warm-up iterations of the in-JVM rows: there every iteration runs the code once per rank, so
     * a few warm the JIT as much as a thousand do for one process (and a 1 MiB broadcast to 1024
     * ranks moves a GiB per iteration).
     */
    static final int JVM_WARMUP = 10;

    /** Warm-up iterations of the MPI baseline: native code, nothing to compile at run time. */
    static final int MPI_WARMUP = 100;

    static Row measureInJvm(int n, int iters, int warmup) {
        Map<String, Double> values = new LinkedHashMap<>();
        Map<String, String> notes = new LinkedHashMap<>();
        List<TcpBootstrap> ranks = new ArrayList<>(n);
        String error = null;
        try {
            for (int r = 0; r < n; r++) {
                ranks.add(TcpBootstrap.create(r, n));
            }
            UniqueId id = ranks.getFirst().createUniqueId();
            long t0 = System.nanoTime();
            Blocking.done(Mono.when(ranks.stream().map(b -> b.initialize(id)).toList()), JVM_INIT_TIMEOUT, 0,
                    "initialize " + n + " ranks in one JVM");
            values.put(INIT, (System.nanoTime() - t0) / 1e6);
            measureOps(ranks, iters, warmup, values, notes);
        } catch (RuntimeException | OutOfMemoryError e) {
            error = e.toString();
        } finally {
            for (TcpBootstrap b : ranks) {
                try {
                    b.close();
                } catch (RuntimeException e) {
                    if (error == null) {
                        error = "close: " + e;
                    }
                }
            }
        }
        return new Row(n, "jvm", values, notes, null, error);
    }

    /**
     * Times every op on ranks that all live in this JVM, putting a value or a note per op key; an
     * iteration is the wall time from subscribing every rank's part until all complete.
     */
    static void measureOps(List<? extends Bootstrap> ranks, int iters, int warmup, Map<String, Double> values,
                           Map<String, String> notes) {
        int n = ranks.size();
        long limit = Math.min(JVM_MEMORY_LIMIT, Runtime.getRuntime().maxMemory() / 2);
        for (BenchOp op : BenchOp.applicable(n)) {
            long need = op.resultBytesInOneJvm(n);
            if (need > limit) {
                notes.put(op.key, String.format(Locale.ROOT, "n/a (needs %.1f GiB)", need / (double) (1L << 30)));
                continue;
            }
            long[] times = new long[iters];
            for (int i = 0; i < warmup + iters; i++) {
                long t = System.nanoTime();
                Blocking.done(Mono.when(ranks.stream().map(b -> op.on(b, OP_TIMEOUT)).toList()), OP_TIMEOUT, 0,
                        op.key + " on " + n + " ranks in one JVM");
                if (i >= warmup) {
                    times[i - warmup] = System.nanoTime() - t;
                }
            }
            values.put(op.key, op.fromNanos(BenchStats.median(times)));
        }
    }

    static String machine() {
        return String.format(Locale.ROOT, "machine: %d cores, %s %s (%s), Java %s (%s)",
                Runtime.getRuntime().availableProcessors(), System.getProperty("os.name"),
                System.getProperty("os.version"), System.getProperty("os.arch"), Runtime.version(),
                System.getProperty("java.vendor"));
    }

    /** The markdown table: one row per {@link Row}; MPI columns only when some row has MPI values. */
    static String table(List<Row> rows) {
        boolean withMpi = rows.stream().anyMatch(r -> r.mpi() != null);
        List<String> header = new ArrayList<>(List.of("N", "mode", "init ms"));
        for (BenchOp op : BenchOp.values()) {
            header.add(op.label);
            if (withMpi) {
                header.add("MPI");
                header.add("ours/MPI");
            }
        }
        List<List<String>> cells = new ArrayList<>();
        for (Row r : rows) {
            List<String> line = new ArrayList<>(List.of(Integer.toString(r.n()), r.mode(), cell(r, INIT, 1)));
            for (BenchOp op : BenchOp.values()) {
                line.add(op.appliesTo(r.n()) ? cell(r, op.key, op.isBandwidth() ? 2 : 1) : "-");
                if (withMpi) {
                    Double mpi = r.mpi() == null || !op.appliesTo(r.n()) ? null : r.mpi().get(op.key);
                    Double ours = r.values().get(op.key);
                    line.add(mpi == null ? "" : format(mpi, op.isBandwidth() ? 2 : 1));
                    line.add(mpi == null || ours == null || mpi == 0 ? "" : format(ours / mpi, 2));
                }
            }
            cells.add(line);
        }
        // numbers right-aligned, the mode column left-aligned
        StringBuilder sb = new StringBuilder(MarkdownTable.render(header, cells, c -> c == 1));
        if (withMpi) {
            sb.append("\nours/MPI: above 1 means slower for times, faster for GB/s\n");
        }
        return sb.toString();
    }

    private static String cell(Row r, String key, int decimals) {
        String note = r.notes().get(key);
        if (note != null) {
            return note;
        }
        Double v = r.values().get(key);
        if (v != null) {
            return format(v, decimals);
        }
        return r.error() != null ? "failed" : "";
    }

    private static String format(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }
}
