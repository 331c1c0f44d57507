package org.jmscclpp.samples;

import java.util.List;
import java.util.function.IntPredicate;

/** The markdown tables the benchmarks and samples print: padded columns, numbers right-aligned, text columns left-aligned. */
public final class MarkdownTable {

    /** A markdown rule needs three dashes, so no column is narrower. */
    private static final int MIN_WIDTH = 3;

    private MarkdownTable() {
    }

    /**
     * The header, the rule and one line per row, each ending with a newline; every column as wide
     * as its widest cell, padded right where {@code leftAligned} holds for its index and left
     * (with a {@code ---:} rule) elsewhere.
     *
     * @param rows each as many cells as {@code header}
     */
    public static String render(List<String> header, List<List<String>> rows, IntPredicate leftAligned) {
        int[] width = new int[header.size()];
        for (int c = 0; c < width.length; c++) {
            width[c] = Math.max(MIN_WIDTH, header.get(c).length());
            for (List<String> row : rows) {
                width[c] = Math.max(width[c], row.get(c).length());
            }
        }
        StringBuilder sb = new StringBuilder();
        appendLine(sb, header, width, leftAligned);
        String[] rule = new String[width.length];
        for (int c = 0; c < width.length; c++) {
            rule[c] = leftAligned.test(c) ? "-".repeat(width[c]) : "-".repeat(width[c] - 1) + ":";
        }
        appendLine(sb, List.of(rule), width, leftAligned);
        for (List<String> row : rows) {
            appendLine(sb, row, width, leftAligned);
        }
        return sb.toString();
    }

    private static void appendLine(StringBuilder sb, List<String> cells, int[] width, IntPredicate leftAligned) {
        sb.append('|');
        for (int c = 0; c < cells.size(); c++) {
            String s = cells.get(c);
            String pad = " ".repeat(width[c] - s.length());
            sb.append(' ').append(leftAligned.test(c) ? s + pad : pad + s).append(" |");
        }
        sb.append('\n');
    }
}
