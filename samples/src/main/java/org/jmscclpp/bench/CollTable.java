package org.jmscclpp.bench;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.samples.ByteSizes;
import org.jmscclpp.samples.CollectiveRun;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;

/**
 * The table of {@code jmscclpp bench coll} in nccl-tests' layout and widths ({@code src/util.cu}):
 * {@code "%12li  %12li  %8s  %6s  %6s"} for size, count, type, redop and root, then per placement
 * {@code "  %7s  %6s  %6s  %6s"} for time (µs), algbw, busbw (GB/s) and #wrong, numbers losing
 * decimals to fit their width. With NCCL's rows, three more columns: NCCL's out-of-place time and
 * busbw and jmscclpp's out-of-place time over NCCL's ({@code t/nccl}: below 1 is faster). With
 * staged rows (unregistered buffers), three more: their out-of-place time and busbw, and their time
 * over the registered one's ({@code t/reg}: what staging costs). The Mono form's call overhead, when
 * measured, follows the rows as comment lines.
 */
final class CollTable {

    private static final String PLACEMENT = "  %7s  %6s  %6s  %6s";
    private static final String EXTRA_COLUMNS = "  %7s  %6s  %6s";
    private static final String LEFT = "%12s  %12s  %8s  %6s  %6s";

    private CollTable() {
    }

    /** The whole output: header, column heads, one line per size, the summary. */
    static String render(CollReport r) {
        StringBuilder sb = new StringBuilder(header(r));
        for (CollReport.Line line : r.lines()) {
            sb.append(row(r, line)).append('\n');
        }
        return sb.append(footer(r)).toString();
    }

    /** What comes before the rows: the command, versions, settings, devices and the column heads. */
    static String header(CollReport r) {
        StringBuilder sb = new StringBuilder();
        String test = CollectiveRun.label(r.kind()) + "_perf";
        sb.append("# ").append(r.command()).append('\n');
        StringBuilder versions = new StringBuilder();
        r.versions().forEach((k, v) -> versions.append(versions.isEmpty() ? "" : ", ").append(k).append(' ').append(v));
        sb.append("# ").append(versions).append("; host ").append(r.host()).append('\n');
        sb.append("# Collective test starting: ").append(test).append(" (jmscclpp ").append(r.backend())
                .append(" backend, algorithm ").append(r.algorithm()).append(r.hasNccl() ? ", beside NCCL" : "")
                .append(r.hasStaged() ? ", registered and staged buffers" : "").append(")\n");
        sb.append(String.format(Locale.ROOT, "# nRanks %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d"
                + " iters: %d agg iters: 1 validation: %d graph: %d%n", r.ranks(), r.minBytes(), r.maxBytes(),
                r.factor(), r.warmup(), r.iters(), r.check() > 0 ? 1 : 0, r.graph()));
        sb.append("#\n# Using devices\n");
        for (String d : r.devices()) {
            sb.append("#  ").append(d).append('\n');
        }
        sb.append("#\n");
        sb.append(heads(r.hasNccl(), r.hasStaged()));
        return sb.toString();
    }

    /** What comes after the rows: the call overhead, the wrong values and the average bus bandwidths. */
    static String footer(CollReport r) {
        return footer(r, null);
    }

    /**
     * The footer of a run that {@code failure} ended early (null: it ran to its end): then no
     * verdict on the values beyond the rows measured, and the last line says the test failed, and why.
     */
    static String footer(CollReport r, @Nullable String failure) {
        StringBuilder sb = new StringBuilder();
        String test = CollectiveRun.label(r.kind()) + "_perf";
        CallOverhead o = r.overhead();
        if (o != null) {
            sb.append(overhead(o));
        }
        long wrong = r.wrong();
        sb.append("# Out of bounds values : ").append(wrong).append(wrong > 0 ? " FAILED"
                : failure != null ? " in the " + r.rows().size() + " rows measured before the run failed" : " OK")
                .append('\n');
        sb.append("# Avg bus bandwidth    : ").append(r.averageBusbw(CollReport.JMSCCLPP).map(CollTable::g)
                .orElse("N/A")).append(" \n");
        if (r.hasNccl()) {
            sb.append("# Avg bus bandwidth    : ").append(r.averageBusbw(CollReport.NCCL).map(CollTable::g)
                    .orElse("N/A")).append(" (nccl)\n");
        }
        if (r.hasStaged()) {
            sb.append("# Avg bus bandwidth    : ").append(r.averageBusbw(CollReport.STAGED).map(CollTable::g)
                    .orElse("N/A")).append(" (staged)\n");
        }
        sb.append("#\n# Collective test ").append(failure == null ? "concluded: " + test : "FAILED: " + test + ": "
                + failure).append('\n');
        return sb.toString();
    }

    /** The three header lines of the columns. */
    static String heads(boolean nccl, boolean staged) {
        String placementWidth = " ".repeat(String.format(PLACEMENT, "", "", "", "").length());
        int extraWidth = String.format(EXTRA_COLUMNS, "", "", "").length();
        String groups = String.format(LEFT, "", "", "", "", "") + center("out-of-place", placementWidth.length())
                + center("in-place", placementWidth.length())
                + (nccl ? center("nccl out-of-place", extraWidth) : "")
                + (staged ? center("staged out-of-place", extraWidth) : "");
        String names = String.format(LEFT, "size", "count", "type", "redop", "root")
                + String.format(PLACEMENT, "time", "algbw", "busbw", "#wrong")
                + String.format(PLACEMENT, "time", "algbw", "busbw", "#wrong")
                + (nccl ? String.format(EXTRA_COLUMNS, "time", "busbw", "ratio") : "")
                + (staged ? String.format(EXTRA_COLUMNS, "time", "busbw", "ratio") : "");
        String units = String.format(LEFT, "(B)", "(elements)", "", "", "")
                + String.format(PLACEMENT, "(us)", "(GB/s)", "(GB/s)", "")
                + String.format(PLACEMENT, "(us)", "(GB/s)", "(GB/s)", "")
                + (nccl ? String.format(EXTRA_COLUMNS, "(us)", "(GB/s)", "t/nccl") : "")
                + (staged ? String.format(EXTRA_COLUMNS, "(us)", "(GB/s)", "t/reg") : "");
        return hash(groups) + "\n" + hash(names) + "\n" + hash(units) + "\n";
    }

    /**
     * One line: the left columns, out-of-place, in-place ({@code N/A} without one), then NCCL's
     * and the staged columns where the report has them ({@code N/A} where this size lacks them).
     */
    static String row(CollReport r, CollReport.Line line) {
        int ranks = r.ranks();
        ReduceOp op = r.op();
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%12d  %12d  %8s  %6s  %6s", line.size(),
                line.count(), r.type().label(), op != null ? op.label() : "none", Integer.toString(r.root())));
        sb.append(placement(line.out(), ranks));
        CollectiveRunner.Measurement in = line.in();
        sb.append(in != null ? placement(in, ranks) : String.format(PLACEMENT, "N/A", "N/A", "N/A", "N/A"));
        if (r.hasNccl()) {
            // ours over NCCL's
            sb.append(extra(line.ncclOut(), ranks, line.out().timeUs(), true));
        }
        if (r.hasStaged()) {
            // staged over registered
            sb.append(extra(line.stagedOut(), ranks, line.out().timeUs(), false));
        }
        return sb.toString();
    }

    /** Time, busbw and a ratio of a baseline's row: ours / its time, or its time / ours. */
    private static String extra(CollectiveRunner.@Nullable Measurement m, int ranks, double oursUs, boolean oursOver) {
        if (m == null) {
            return String.format(EXTRA_COLUMNS, "N/A", "N/A", "N/A");
        }
        double ratio = oursOver ? (m.timeUs() > 0 ? oursUs / m.timeUs() : Double.NaN)
                : (oursUs > 0 ? m.timeUs() / oursUs : Double.NaN);
        return String.format(EXTRA_COLUMNS, fit(m.timeUs(), 7), fit(CollReport.busbw(m, ranks), 6),
                Double.isNaN(ratio) ? "N/A" : fit(ratio, 6));
    }

    /** The comment lines of the Mono form's call overhead. */
    static String overhead(CallOverhead o) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "# Call overhead at %s (%d elements, %s, %d calls per form, the median"
                + " of %d rounds): Mono calls issued back to back %s us/call", ByteSizes.label(o.size()), o.count(),
                o.algorithm(), o.calls(), CallOverhead.ROUNDS, g(o.monoPipelinedUs())));
        if (o.hasStream()) {
            double over = o.overheadUs();
            sb.append(String.format(Locale.ROOT, ", stream form enqueued back to back %s us/call: Mono - stream ="
                    + " %s us (target <= %s us: %s)%n", g(o.streamUs()), g(over), g(CallOverhead.TARGET_US),
                    over <= CallOverhead.TARGET_US ? "met" : "missed"));
            sb.append(String.format(Locale.ROOT, "#   waiting for each call: Mono .block() %s us/call, stream form"
                    + " synchronized after each call %s us/call (Mono - stream = %s us)%n",
                    g(o.monoBlockUs()), g(o.streamSyncUs()), g(o.monoBlockUs() - o.streamSyncUs())));
        } else {
            sb.append(String.format(Locale.ROOT, "; .block() one after another %s us/call (no stream form here)%n",
                    g(o.monoBlockUs())));
        }
        return sb.toString();
    }

    private static String placement(CollectiveRunner.Measurement m, int ranks) {
        return String.format(PLACEMENT, fit(m.timeUs(), 7), fit(CollReport.algbw(m), 6),
                fit(CollReport.busbw(m, ranks), 6), m.wrong() < 0 ? "N/A" : Long.toString(m.wrong()));
    }

    /**
     * {@code v} in at most {@code width} characters, right-aligned: two decimals, fewer when that is
     * too wide, scientific notation when even none fits (nccl-tests' rule).
     */
    static String fit(double v, int width) {
        for (int decimals = 2; decimals >= 0; decimals--) {
            String s = String.format(Locale.ROOT, "%." + decimals + "f", v);
            if (s.length() <= width) {
                return " ".repeat(width - s.length()) + s;
            }
        }
        String s = String.format(Locale.ROOT, "%.0e", v);
        return s.length() >= width ? s : " ".repeat(width - s.length()) + s;
    }

    /** {@code %g} as C prints it: 6 significant digits, no trailing zeros. */
    static String g(double v) {
        if (v == 0) {
            return "0";
        }
        String s = String.format(Locale.ROOT, "%.6g", v);
        if (s.contains("e")) {
            return s;
        }
        return s.contains(".") ? s.replaceAll("0+$", "").replaceAll("\\.$", "") : s;
    }

    private static String center(String label, int width) {
        int left = Math.max(0, (width - label.length()) / 2);
        return " ".repeat(left) + label + " ".repeat(Math.max(0, width - left - label.length()));
    }

    /** The line with '#' in place of its first character, as nccl-tests' column heads. */
    private static String hash(String line) {
        return "#" + line.substring(1);
    }

    /** The versions a report names, in print order. */
    static Map<String, String> versions(@Nullable String ncclVersion) {
        Map<String, String> v = new LinkedHashMap<>();
        v.put("jmscclpp", Version.get());
        v.put("Java", Runtime.version().toString());
        if (ncclVersion != null) {
            v.put("NCCL", ncclVersion);
        }
        return v;
    }
}
