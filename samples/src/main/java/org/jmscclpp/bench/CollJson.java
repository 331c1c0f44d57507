package org.jmscclpp.bench;

import com.fasterxml.jackson.jr.ob.JSON;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.samples.CollectiveRun;

/**
 * A {@link CollReport} as JSON ({@code --json FILE}) and back ({@code jmscclpp bench plot --json},
 * {@code bench tune}), through jackson-jr, so that a sweep run where nothing can draw (the bundle has
 * no {@code java.desktop}) is plotted elsewhere. One object: the run's settings ({@code op} is null
 * for the kinds without a reduction, {@code root} -1 for those without a root), {@code devices},
 * {@code versions}, {@code rows}, each with {@code impl, algo, size, count, in_place, time_us, algbw,
 * busbw, wrong} (algbw and busbw in GB/s, written for readers; reading recomputes them), and
 * {@code overhead} (the Mono form's call overhead, or null). The reader keeps what it knows, reads
 * the reports of earlier versions (without {@code op}, {@code root} and {@code overhead}) and throws
 * {@link IllegalArgumentException} naming what is wrong.
 */
final class CollJson {

    private static final JSON WRITER = JSON.std.with(JSON.Feature.PRETTY_PRINT_OUTPUT);

    private CollJson() {
    }

    static String write(CollReport r) {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("command", r.command());
        top.put("host", r.host());
        top.put("backend", r.backend());
        top.put("collective", CollectiveRun.label(r.kind()));
        top.put("type", r.type().label());
        ReduceOp op = r.op();
        top.put("op", op == null ? null : op.label());
        top.put("root", r.root());
        top.put("ranks", r.ranks());
        top.put("algorithm", r.algorithm());
        top.put("min_bytes", r.minBytes());
        top.put("max_bytes", r.maxBytes());
        top.put("factor", r.factor());
        top.put("iters", r.iters());
        top.put("warmup", r.warmup());
        top.put("check", r.check());
        top.put("graph", r.graph());
        top.put("devices", r.devices());
        top.put("versions", r.versions());
        List<Map<String, Object>> rows = new ArrayList<>();
        for (CollectiveRunner.Measurement m : r.rows()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("impl", m.implementation());
            row.put("algo", m.algorithm());
            row.put("size", m.size());
            row.put("count", m.count());
            row.put("in_place", m.inPlace());
            row.put("time_us", round(m.timeUs()));
            row.put("algbw", round(CollReport.algbw(m)));
            row.put("busbw", round(CollReport.busbw(m, r.ranks())));
            row.put("wrong", m.wrong());
            rows.add(row);
        }
        top.put("rows", rows);
        CallOverhead o = r.overhead();
        Map<String, Object> overhead = null;
        if (o != null) {
            overhead = new LinkedHashMap<>();
            overhead.put("algo", o.algorithm());
            overhead.put("size", o.size());
            overhead.put("count", o.count());
            overhead.put("calls", o.calls());
            overhead.put("mono_block_us", round(o.monoBlockUs()));
            overhead.put("mono_pipelined_us", round(o.monoPipelinedUs()));
            overhead.put("stream_us", round(o.streamUs()));
            overhead.put("stream_sync_us", round(o.streamSyncUs()));
        }
        top.put("overhead", overhead);
        try {
            return WRITER.asString(top) + "\n";
        } catch (IOException e) {
            throw new IllegalStateException("cannot write a report as JSON: " + e.getMessage(), e);
        }
    }

    /** {@code v} to 4 decimals, as the reports have always been written (NaN and infinities as 0: JSON has none). */
    private static double round(double v) {
        return Double.isFinite(v) ? Math.round(v * 1e4) / 1e4 : 0;
    }

    /** The report in {@code json}; IllegalArgumentException naming what is missing or malformed. */
    static CollReport read(String json) {
        Object document;
        try {
            document = JSON.std.anyFrom(json);
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("malformed JSON: " + e.getMessage(), e);
        }
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
        int root = top.get("root") instanceof Number n ? n.intValue() : kind.rooted() ? 0 : -1;
        CallOverhead overhead = null;
        if (top.get("overhead") instanceof Map<?, ?> o) {
            overhead = new CallOverhead(string(o, "algo"), (long) number(o, "size"), (long) number(o, "count"),
                    (int) number(o, "calls"), number(o, "mono_block_us"), number(o, "mono_pipelined_us"),
                    number(o, "stream_us"), number(o, "stream_sync_us"));
        }
        int ranks = (int) atLeast(top, "ranks", 1);
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
                    (long) atLeast(row, "size", 1), (long) atLeast(row, "count", 0), type,
                    Boolean.TRUE.equals(row.get("in_place")), atLeast(row, "time_us", 0), (long) number(row, "wrong")));
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
        if (m.get(key) instanceof Number n) {
            return n.doubleValue();
        }
        throw new IllegalArgumentException("\"" + key + "\" is missing or not a number");
    }

    /** {@link #number} where no sweep writes less than {@code least} (a garbled report would divide by it or draw it). */
    private static double atLeast(Map<?, ?> m, String key, long least) {
        double v = number(m, key);
        if (v >= least) {
            return v;
        }
        throw new IllegalArgumentException("\"" + key + "\" must be at least " + least + ", got "
                + (v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v)));
    }

    private static List<?> list(Map<?, ?> m, String key) {
        if (m.get(key) instanceof List<?> l) {
            return l;
        }
        throw new IllegalArgumentException("\"" + key + "\" is missing or not an array");
    }
}
