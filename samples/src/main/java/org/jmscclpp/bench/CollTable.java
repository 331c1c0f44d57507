package org.jmscclpp.samples;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The table of {@code jmscclpp bench coll} in nccl-tests' layout and widths ({@code src/util.cu}):
 * {@code "%12li  %12li  %8s  %6s  %6s"} for size, count, type, redop and root, then per placement
 * {@code "  %7s  %6s  %6s  %6s"} for time (µs), algbw, busbw (GB/s) and #wrong, numbers losing
 * decimals to fit their width. With NCCL's rows, three more columns: NCCL's out-of-place time and
 * busbw and jmscclpp's out-of-place time over NCCL's ({@code t/nccl}: below 1 is faster).
 */
final class CollTable {

    private static final String PLACEMENT = "  %7s  %6s  %6s  %6s";
    private static final String NCCL_COLUMNS = "  %7s  %6s  %6s";
    private static final String LEFT = "%12s  %12s  %8s  %6s  %6s";

    private CollTable() {
    }

    /** The whole output: header, column heads, one line per size, the summary. */
    static String render(CollReport r) {
        StringBuilder sb = new StringBuilder();
        String test = r.kind().label() + "_perf";
        sb.append("# ").append(r.command()).append('\n');
        StringBuilder versions = new StringBuilder();
        r.versions().forEach((k, v) -> versions.append(versions.isEmpty() ? "" : ", ").append(k).append(' ').append(v));
        sb.append("# ").append(versions).append("; host ").append(r.host()).append('\n');
        sb.append("# Collective test starting: ").append(test).append(" (jmscclpp ").append(r.backend())
                .append(" backend, algorithm ").append(r.algorithm()).append(r.hasNccl() ? ", beside NCCL" : "")
                .append(")\n");
        sb.append(String.format(Locale.ROOT, "# nRanks %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d"
                + " iters: %d agg iters: 1 validation: %d graph: %d%n", r.ranks(), r.minBytes(), r.maxBytes(),
                r.factor(), r.warmup(), r.iters(), r.check() > 0 ? 1 : 0, r.graph()));
        sb.append("#\n# Using devices\n");
        for (String d : r.devices()) {
            sb.append("#  ").append(d).append('\n');
        }
        sb.append("#\n");
        sb.append(heads(r.hasNccl()));
        for (CollReport.Line line : r.lines()) {
            sb.append(row(line, r.ranks(), r.kind(), r.type())).append('\n');
        }
        long wrong = r.wrong();
        sb.append("# Out of bounds values : ").append(wrong).append(wrong == 0 ? " OK" : " FAILED").append('\n');
        sb.append("# Avg bus bandwidth    : ").append(r.averageBusbw(CollReport.JMSCCLPP).map(CollTable::g)
                .orElse("N/A")).append(" \n");
        if (r.hasNccl()) {
            sb.append("# Avg bus bandwidth    : ").append(r.averageBusbw(CollReport.NCCL).map(CollTable::g)
                    .orElse("N/A")).append(" (nccl)\n");
        }
        sb.append("#\n# Collective test concluded: ").append(test).append('\n');
        return sb.toString();
    }

    /** The three header lines of the columns. */
    static String heads(boolean nccl) {
        String placementWidth = " ".repeat(String.format(PLACEMENT, "", "", "", "").length());
        String groups = String.format(LEFT, "", "", "", "", "") + center("out-of-place", placementWidth.length())
                + center("in-place", placementWidth.length())
                + (nccl ? center("nccl out-of-place", String.format(NCCL_COLUMNS, "", "", "").length()) : "");
        String names = String.format(LEFT, "size", "count", "type", "redop", "root")
                + String.format(PLACEMENT, "time", "algbw", "busbw", "#wrong")
                + String.format(PLACEMENT, "time", "algbw", "busbw", "#wrong")
                + (nccl ? String.format(NCCL_COLUMNS, "time", "busbw", "ratio") : "");
        String units = String.format(LEFT, "(B)", "(elements)", "", "", "")
                + String.format(PLACEMENT, "(us)", "(GB/s)", "(GB/s)", "")
                + String.format(PLACEMENT, "(us)", "(GB/s)", "(GB/s)", "")
                + (nccl ? String.format(NCCL_COLUMNS, "(us)", "(GB/s)", "t/nccl") : "");
        return hash(groups) + "\n" + hash(names) + "\n" + hash(units) + "\n";
    }

    /** One line: the left columns, out-of-place, in-place ({@code N/A} without one), NCCL's columns when present. */
    static String row(CollReport.Line line, int ranks, CollectiveKind kind, DataType type) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%12d  %12d  %8s  %6s  %6s", line.size(),
                line.count(), type.label(), kind == CollectiveKind.ALLREDUCE ? "sum" : "none", "-1"));
        sb.append(placement(line.out(), ranks));
        CollectiveRunner.Measurement in = line.in();
        sb.append(in != null ? placement(in, ranks) : String.format(PLACEMENT, "N/A", "N/A", "N/A", "N/A"));
        CollectiveRunner.Measurement nccl = line.ncclOut();
        if (nccl != null) {
            sb.append(String.format(NCCL_COLUMNS, fit(nccl.timeUs(), 7), fit(CollReport.busbw(nccl, ranks), 6),
                    nccl.timeUs() > 0 ? fit(line.out().timeUs() / nccl.timeUs(), 6) : "N/A"));
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
        Package p = CollTable.class.getPackage();
        String own = p == null ? null : p.getImplementationVersion();
        v.put("jmscclpp", own == null ? "(development build)" : own);
        v.put("Java", Runtime.version().toString());
        if (ncclVersion != null) {
            v.put("NCCL", ncclVersion);
        }
        return v;
    }
}
