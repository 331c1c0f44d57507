package org.jmscclpp.core.collective;

import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.jmscclpp.core.ByteCount;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.ClassPathResources;
import org.jspecify.annotations.Nullable;

/**
 * Which algorithm a call gets, by kind, number of ranks, topology and size: the first row that
 * matches wins. Engines ship one table each, produced from benchmark sweeps and committed with the
 * host they came from in its comments; a service may pass its own
 * ({@link CollectiveOptions#withTuning}).
 *
 * <p>Text form, one row per line, columns separated by blanks, {@code #} starts a comment:
 * <pre>
 * # kind        ranks  topology  max-bytes  algorithm
 * all_reduce    2      nvlink    256K       ll16
 * all_reduce    3-8    *         1M         ll16
 * all_reduce    *      *         *          rsag
 * </pre>
 * {@code ranks} is {@code *}, {@code N} or {@code A-B} ({@code A-*} for A and more);
 * {@code topology} is {@code *} or the engine's word for how the ranks are linked ({@code shm} for
 * the host backend, {@code nvlink} or {@code pcie} for GPUs of one host); {@code max-bytes} is
 * {@code *} or the largest size the row covers, in {@link ByteCount}'s syntax ({@code 256K}, {@code 1M}:
 * powers of 1024). The size of a call is nccl-tests' S: the larger of its send and receive bytes
 * ({@link CollectiveCall#size(int)}).
 */
public final class TuningTable {

    /** One row: calls of {@code kind} on [minRanks, maxRanks] ranks, {@code topology} ("*": any), up to {@code maxBytes}. */
    public record Row(CollectiveKind kind, int minRanks, int maxRanks, String topology, long maxBytes,
                      String algorithm) {

        boolean matches(CollectiveKind k, int ranks, String topo, long bytes) {
            return kind == k && ranks >= minRanks && ranks <= maxRanks
                    && ("*".equals(topology) || topology.equals(topo)) && bytes <= maxBytes;
        }
    }

    private final String source;
    private final List<Row> rows;

    private TuningTable(String source, List<Row> rows) {
        this.source = source;
        this.rows = List.copyOf(rows);
    }

    /** An empty table: every call gets its engine's default algorithm. */
    public static TuningTable empty() {
        return new TuningTable("empty", List.of());
    }

    /**
     * Parses the text form; {@code source} names it in errors.
     *
     * @throws JmscclppException INVALID_USAGE naming the line of a malformed row
     */
    public static TuningTable parse(String text, String source) {
        List<Row> rows = new ArrayList<>();
        String[] lines = text.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            int hash = line.indexOf('#');
            String body = (hash < 0 ? line : line.substring(0, hash)).strip();
            if (body.isEmpty()) {
                continue;
            }
            String[] f = body.split("\\s+");
            if (f.length != 5) {
                throw invalid(source, i + 1, "a row has 5 columns (kind ranks topology max-bytes algorithm), this one "
                        + f.length);
            }
            try {
                CollectiveKind kind = CollectiveKind.parse(f[0]);
                int[] ranks = ranks(f[1]);
                rows.add(new Row(kind, ranks[0], ranks[1], f[2].toLowerCase(Locale.ROOT), bytes(f[3]),
                        f[4].toLowerCase(Locale.ROOT)));
            } catch (JmscclppException | NumberFormatException e) {
                throw invalid(source, i + 1, e instanceof JmscclppException j ? j.detail() : "not a number: "
                        + e.getMessage());
            }
        }
        return new TuningTable(source, rows);
    }

    /**
     * The table read from {@code in} (closed here), a resource that its own module opened with
     * {@code Owner.class.getResourceAsStream("/" + path)} (on the module path resources are encapsulated), or any
     * other stream.
     *
     * @param in     the table's text; null when the resource was not found
     * @param source where it came from, for errors
     * @throws JmscclppException SYSTEM_ERROR when it is missing or unreadable; INVALID_USAGE when malformed
     */
    public static TuningTable read(@Nullable InputStream in, String source) {
        return parse(ClassPathResources.text(in, source, "tuning table", "tuning table"), source);
    }

    /** The algorithm of the first row matching the call, if any. */
    public Optional<String> choose(CollectiveKind kind, int ranks, String topology, long bytes) {
        for (Row r : rows) {
            if (r.matches(kind, ranks, topology, bytes)) {
                return Optional.of(r.algorithm());
            }
        }
        return Optional.empty();
    }

    /**
     * The rows that name {@code topology} itself (not "*"): the table of a communicator whose
     * algorithms are only those of that topology, where the engine's rows for any topology name
     * algorithms it does not have ({@code hosts}: the hierarchical collectives).
     */
    public TuningTable only(String topology) {
        return new TuningTable(source + " (topology " + topology + ")",
                rows.stream().filter(r -> r.topology().equals(topology)).toList());
    }

    public List<Row> rows() {
        return rows;
    }

    /** Where the table came from (a resource path, or what the caller named it). */
    public String source() {
        return source;
    }

    private static int[] ranks(String s) {
        if ("*".equals(s)) {
            return new int[] {1, Integer.MAX_VALUE};
        }
        int dash = s.indexOf('-');
        if (dash < 0) {
            int n = Integer.parseInt(s);
            return new int[] {n, n};
        }
        int lo = Integer.parseInt(s.substring(0, dash));
        String hi = s.substring(dash + 1);
        return new int[] {lo, "*".equals(hi) ? Integer.MAX_VALUE : Integer.parseInt(hi)};
    }

    /** {@code *} or a size in {@link ByteCount}'s syntax ({@code 64K}, {@code 1G}). */
    static long bytes(String s) {
        if ("*".equals(s)) {
            return Long.MAX_VALUE;
        }
        long n = ByteCount.parse(s);
        if (n < 0) {
            throw new NumberFormatException(s);
        }
        return n;
    }

    private static JmscclppException invalid(String source, int line, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, source + " line " + line + ": " + detail)
                .phase("tuning table").build();
    }

    @Override
    public String toString() {
        return "TuningTable[" + source + ", " + rows.size() + " rows]";
    }
}
