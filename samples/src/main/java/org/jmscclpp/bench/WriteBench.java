package org.jmscclpp.bench;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.samples.ByteSizes;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Launcher;
import org.jmscclpp.samples.MarkdownTable;
import org.jspecify.annotations.Nullable;

/**
 * {@code jmscclpp bench write}: bandwidth of {@code HOST_IPC} writes between two processes, beside
 * this machine's ceiling. The {@link Launcher} starts two ranks of {@link WriteBenchRankSample};
 * rank 0 writes into rank 1's buffer size after size, rank 1 checks the last iteration's bytes of
 * each size, and rank 0 also times a plain in-process copy of the same sizes between two buffers
 * of its own backend. The table gives, per size, both in GB/s (1e9 bytes per second), their
 * ratio, and whether the ratio meets the target ({@value #TARGET} from 1 MiB up). Progress and
 * failures go to stderr; the table goes to stdout. Exits 1 when a rank failed or a check found
 * wrong bytes; a missed target is reported, not a failure.
 */
public final class WriteBench {

    /** The usage line that {@code jmscclpp help} and a usage error print. */
    public static final String SYNOPSIS = "jmscclpp bench write [--min 4K] [--max 256M] [--iters 2000] [--warmup 1000]";

    /** HOST_IPC GB/s over in-process copy GB/s that the target asks for, from {@link #TARGET_FROM} bytes up. */
    static final double TARGET = 0.8;
    static final long TARGET_FROM = 1 << 20;

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(5);
    private static final Pattern LINE = Pattern.compile(
            "WRITE size=(\\d+) iters=(\\d+) warmup=(\\d+) ipc_gbps=(\\S+) copy_gbps=(\\S+) check=(.*)");

    private WriteBench() {
    }

    /** One size: iterations, both bandwidths in GB/s, and rank 1's verdict ({@code ok} or what was wrong). */
    record Row(long size, int iters, int warmup, double ipcGbps, double copyGbps, String check) {
        double ratio() {
            return copyGbps > 0 ? ipcGbps / copyGbps : 0;
        }

        boolean targetApplies() {
            return size >= TARGET_FROM;
        }

        boolean targetMet() {
            return ratio() >= TARGET;
        }

        /** The row of a WRITE line, or null for any other line. */
        static @Nullable Row parse(String line) {
            Matcher m = LINE.matcher(line);
            if (!m.matches()) {
                return null;
            }
            return new Row(Long.parseLong(m.group(1)), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)),
                    Double.parseDouble(m.group(4)), Double.parseDouble(m.group(5)), m.group(6));
        }
    }

    /** {@code jmscclpp bench write ARGS}: prints its table on {@code out}; returns the exit code. */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        WriteBenchRankSample.Options o =
                BenchArgs.parseOrPrintUsage(args, WriteBenchRankSample::parse, "jmscclpp bench write", SYNOPSIS, err);
        if (o == null) {
            return ExitCodes.USAGE;
        }
        err.printf("bench: write, 2 processes, %s to %s ...%n", ByteSizes.label(o.min()), ByteSizes.label(o.max()));
        List<Row> rows = new ArrayList<>();
        String error = measure(o, rows, err);
        out.println(BootstrapBench.machine());
        out.printf(Locale.ROOT, "per size: %d timed iterations after %d warm-up, fewer where a size would move more "
                + "than %d GiB timed (at least %d) or %.2f GiB warming up; both columns timed in rank 0's process in "
                + "this run; GB = 1e9 B%n%n", o.iters(), o.warmup(), WriteBenchRankSample.BUDGET >> 30,
                WriteBenchRankSample.MIN_ITERS, WriteBenchRankSample.BUDGET / 4.0 / (1L << 30));
        out.print(table(rows));
        out.println(targetLine(rows));
        boolean failed = false;
        for (Row r : rows) {
            if (!r.check().equals("ok")) {
                out.printf("check failed at %s: %s%n", ByteSizes.label(r.size()), r.check());
                failed = true;
            }
        }
        if (error == null && rows.size() != o.sizes().size()) {
            error = "rank 0 reported " + rows.size() + " of " + o.sizes().size() + " sizes";
        }
        if (error != null) {
            out.println("bench write failed: " + error);
            failed = true;
        }
        return failed ? ExitCodes.FAILURE : ExitCodes.OK;
    }

    /** Runs the two ranks, adding rank 0's rows; returns what went wrong, or null. */
    private static @Nullable String measure(WriteBenchRankSample.Options o, List<Row> rows, PrintStream err) {
        BenchJob.Outcome outcome = BenchJob.run(Launcher.builder(2).sample(WriteBenchRankSample.NAME,
                WriteBenchRankSample.args(o)), JOB_TIMEOUT, line -> {
                    Row row = line.rank() == 0 && !line.stderr() ? Row.parse(line.text()) : null;
                    if (row == null) {
                        return false;
                    }
                    synchronized (rows) {
                        rows.add(row);
                    }
                    return true;
                });
        if (outcome.error() != null) {
            outcome.report(err, "write", outcome.error());
        }
        return outcome.error();
    }

    /** The markdown table, one row per size. */
    static String table(List<Row> rows) {
        List<String> header = List.of("size", "iters", "HOST_IPC GB/s", "in-process copy GB/s", "ratio",
                "target (>= " + TARGET + " from " + ByteSizes.label(TARGET_FROM) + ")");
        List<List<String>> cells = new ArrayList<>();
        for (Row r : rows) {
            cells.add(List.of(ByteSizes.label(r.size()), Integer.toString(r.iters()), format(r.ipcGbps()),
                format(r.copyGbps()), format(r.ratio()),
                !r.check().equals("ok") ? "check failed" : !r.targetApplies() ? "-" : r.targetMet() ? "met" : "not met"));
        }
        // numbers right-aligned, the verdict left-aligned
        return MarkdownTable.render(header, cells, c -> c == header.size() - 1);
    }

    /** {@code target: ratio >= 0.8 from 1 MiB up: met on 6 of 6 sizes} (or which sizes missed it). */
    static String targetLine(List<Row> rows) {
        String head = "target: ratio >= " + TARGET + " from " + ByteSizes.label(TARGET_FROM) + " up: ";
        List<Row> applicable = rows.stream().filter(Row::targetApplies).toList();
        if (applicable.isEmpty()) {
            return head + "no size measured from " + ByteSizes.label(TARGET_FROM) + " up";
        }
        List<String> missed = applicable.stream().filter(r -> !r.targetMet()).map(r -> ByteSizes.label(r.size()))
                .toList();
        return missed.isEmpty() ? head + "met on " + applicable.size() + " of " + applicable.size() + " sizes"
                : head + "not met on " + missed.size() + " of " + applicable.size() + " sizes (" + String.join(", ", missed)
                + ")";
    }

    private static String format(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
