package org.jmscclpp.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.samples.CollectiveRun;
import org.jspecify.annotations.Nullable;

/**
 * A {@link CollReport} as JSON ({@code --json FILE}) and back ({@code jmscclpp bench plot --json}),
 * so that a sweep run where nothing can draw (the bundle has no {@code java.desktop}) is plotted
 * elsewhere. One object: the run's settings ({@code op} is null for the kinds without a
 * reduction, {@code root} -1 for those without a root), {@code devices}, {@code versions},
 * {@code rows}, each with {@code impl, algo, size, count, in_place, time_us, algbw, busbw, wrong}
 * (algbw and busbw in GB/s, written for readers; reading recomputes them), and {@code overhead}
 * (the Mono form's call overhead, or null). The reader understands any JSON, keeps what it knows,
 * reads the reports of earlier versions (without {@code op}, {@code root} and {@code overhead}) and
 * throws {@link IllegalArgumentException} naming what is wrong.
 */
final class CollJson {

    private CollJson() {
    }

    static String write(CollReport r) {
        StringBuilder sb = new StringBuilder("{\n");
        field(sb, "command", quote(r.command()));
        field(sb, "host", quote(r.host()));
        field(sb, "backend", quote(r.backend()));
        field(sb, "collective", quote(CollectiveRun.label(r.kind())));
        field(sb, "type", quote(r.type().label()));
        ReduceOp op = r.op();
        field(sb, "op", op == null ? "null" : quote(op.label()));
        field(sb, "root", Integer.toString(r.root()));
        field(sb, "ranks", Integer.toString(r.ranks()));
        field(sb, "algorithm", quote(r.algorithm()));
        field(sb, "min_bytes", Long.toString(r.minBytes()));
        field(sb, "max_bytes", Long.toString(r.maxBytes()));
        field(sb, "factor", Integer.toString(r.factor()));
        field(sb, "iters", Integer.toString(r.iters()));
        field(sb, "warmup", Integer.toString(r.warmup()));
        field(sb, "check", Integer.toString(r.check()));
        field(sb, "graph", Integer.toString(r.graph()));
        field(sb, "devices", "[" + String.join(", ", r.devices().stream().map(CollJson::quote).toList()) + "]");
        List<String> versions = new ArrayList<>();
        r.versions().forEach((k, v) -> versions.add(quote(k) + ": " + quote(v)));
        field(sb, "versions", "{" + String.join(", ", versions) + "}");
        sb.append("  \"rows\": [");
        for (int i = 0; i < r.rows().size(); i++) {
            CollectiveRunner.Measurement m = r.rows().get(i);
            sb.append(i == 0 ? "\n" : ",\n").append(String.format(Locale.ROOT, "    {\"impl\": %s, \"algo\": %s,"
                    + " \"size\": %d, \"count\": %d, \"in_place\": %b, \"time_us\": %.4f, \"algbw\": %.4f,"
                    + " \"busbw\": %.4f, \"wrong\": %d}", quote(m.implementation()), quote(m.algorithm()), m.size(),
                    m.count(), m.inPlace(), m.timeUs(), CollReport.algbw(m), CollReport.busbw(m, r.ranks()),
                    m.wrong()));
        }
        sb.append(r.rows().isEmpty() ? "],\n" : "\n  ],\n");
        CallOverhead o = r.overhead();
        sb.append("  \"overhead\": ").append(o == null ? "null" : String.format(Locale.ROOT, "{\"algo\": %s,"
                + " \"size\": %d, \"count\": %d, \"calls\": %d, \"mono_block_us\": %.4f, \"mono_pipelined_us\": %.4f,"
                + " \"stream_us\": %.4f, \"stream_sync_us\": %.4f}", quote(o.algorithm()), o.size(), o.count(), o.calls(),
                o.monoBlockUs(), o.monoPipelinedUs(), o.streamUs(), o.streamSyncUs())).append("\n}\n");
        return sb.toString();
    }

    private static void field(StringBuilder sb, String name, String value) {
        sb.append("  ").append(quote(name)).append(": ").append(value).append(",\n");
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }

    /** The report in {@code json}; IllegalArgumentException naming what is missing or malformed. */
    static CollReport read(String json) {
        Object document = new Parser(json).document();
        if (!(document instanceof Map<?, ?> top)) {
            throw new IllegalArgumentException("the JSON is not an object");
        }
        CollectiveKind kind = CollOptions.kind(string(top, "collective"));
        DataType type;
        try {
            type = DataType.parse(string(top, "type"));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("unknown type '" + string(top, "type") + "'");
        }
        ReduceOp op = null;
        if (top.get("op") instanceof String name) {
            try {
                op = ReduceOp.parse(name);
            } catch (RuntimeException e) {
                throw new IllegalArgumentException("unknown op '" + name + "'");
            }
        } else if (kind.reduces()) {
            op = ReduceOp.SUM;   // reports before the reductions were only sums
        }
        int root = top.get("root") instanceof Double d ? (int) (double) d : kind.rooted() ? 0 : -1;
        CallOverhead overhead = null;
        if (top.get("overhead") instanceof Map<?, ?> o) {
            overhead = new CallOverhead(string(o, "algo"), (long) number(o, "size"), (long) number(o, "count"),
                    (int) number(o, "calls"), number(o, "mono_block_us"), number(o, "mono_pipelined_us"),
                    number(o, "stream_us"), number(o, "stream_sync_us"));
        }
        int ranks = (int) number(top, "ranks");
        List<String> devices = new ArrayList<>();
        for (Object d : list(top, "devices")) {
            devices.add(String.valueOf(d));
        }
        Map<String, String> versions = new LinkedHashMap<>();
        if (top.get("versions") instanceof Map<?, ?> v) {
            v.forEach((k, x) -> versions.put(String.valueOf(k), String.valueOf(x)));
        }
        List<CollectiveRunner.Measurement> rows = new ArrayList<>();
        for (Object o : list(top, "rows")) {
            if (!(o instanceof Map<?, ?> row)) {
                throw new IllegalArgumentException("a row is not an object");
            }
            rows.add(new CollectiveRunner.Measurement(string(row, "impl"), string(row, "algo"), kind,
                    (long) number(row, "size"), (long) number(row, "count"), type,
                    Boolean.TRUE.equals(row.get("in_place")), number(row, "time_us"), (long) number(row, "wrong")));
        }
        return new CollReport(string(top, "command"), string(top, "host"), string(top, "backend"), kind, type, op,
                root, ranks, string(top, "algorithm"), (long) number(top, "min_bytes"), (long) number(top, "max_bytes"),
                (int) number(top, "factor"), (int) number(top, "iters"), (int) number(top, "warmup"),
                (int) number(top, "check"), (int) number(top, "graph"), devices, versions, rows, overhead);
    }

    private static String string(Map<?, ?> m, String key) {
        if (m.get(key) instanceof String s) {
            return s;
        }
        throw new IllegalArgumentException("\"" + key + "\" is missing or not a string");
    }

    private static double number(Map<?, ?> m, String key) {
        if (m.get(key) instanceof Double d) {
            return d;
        }
        throw new IllegalArgumentException("\"" + key + "\" is missing or not a number");
    }

    private static List<?> list(Map<?, ?> m, String key) {
        if (m.get(key) instanceof List<?> l) {
            return l;
        }
        throw new IllegalArgumentException("\"" + key + "\" is missing or not an array");
    }

    /** A recursive-descent reader of RFC 8259 JSON: objects as maps, arrays as lists, numbers as doubles. */
    private static final class Parser {
        private final String s;
        private int i;

        Parser(String s) {
            this.s = s;
        }

        @Nullable Object document() {
            Object v = value();
            skip();
            if (i != s.length()) {
                throw error("text after the value");
            }
            return v;
        }

        private @Nullable Object value() {
            skip();
            if (i >= s.length()) {
                throw error("a value is missing");
            }
            char c = s.charAt(i);
            return switch (c) {
                case '{' -> object();
                case '[' -> array();
                case '"' -> string();
                case 't' -> literal("true", Boolean.TRUE);
                case 'f' -> literal("false", Boolean.FALSE);
                case 'n' -> literal("null", null);
                default -> number();
            };
        }

        private Map<String, @Nullable Object> object() {
            Map<String, @Nullable Object> m = new LinkedHashMap<>();
            i++;
            skip();
            if (peek() == '}') {
                i++;
                return m;
            }
            while (true) {
                skip();
                if (peek() != '"') {
                    throw error("a key is missing");
                }
                String key = string();
                skip();
                expect(':');
                m.put(key, value());
                skip();
                if (peek() == ',') {
                    i++;
                } else {
                    expect('}');
                    return m;
                }
            }
        }

        private List<@Nullable Object> array() {
            List<@Nullable Object> l = new ArrayList<>();
            i++;
            skip();
            if (peek() == ']') {
                i++;
                return l;
            }
            while (true) {
                l.add(value());
                skip();
                if (peek() == ',') {
                    i++;
                } else {
                    expect(']');
                    return l;
                }
            }
        }

        private String string() {
            StringBuilder sb = new StringBuilder();
            i++;
            while (i < s.length()) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return sb.toString();
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    break;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"', '\\', '/' -> sb.append(e);
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'n' -> sb.append('\n');
                    case 'r' -> sb.append('\r');
                    case 't' -> sb.append('\t');
                    case 'u' -> {
                        if (i + 4 > s.length()) {
                            throw error("a short \\u escape");
                        }
                        try {
                            sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw error("a bad \\u escape");
                        }
                        i += 4;
                    }
                    default -> throw error("a bad escape \\" + e);
                }
            }
            throw error("an unterminated string");
        }

        private Double number() {
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            try {
                return Double.parseDouble(s.substring(start, i));
            } catch (NumberFormatException e) {
                i = start;
                throw error("not a value");
            }
        }

        private @Nullable Object literal(String word, @Nullable Object v) {
            if (!s.startsWith(word, i)) {
                throw error("not a value");
            }
            i += word.length();
            return v;
        }

        private void expect(char c) {
            if (peek() != c) {
                throw error("'" + c + "' expected");
            }
            i++;
        }

        private char peek() {
            return i < s.length() ? s.charAt(i) : '\0';
        }

        private void skip() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("malformed JSON at character " + i + ": " + what);
        }
    }
}
