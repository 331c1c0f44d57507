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
 * {@code jmscclpp bench ethernet}: {@code ETHERNET} write bandwidth and one-int ping-pong latency
 * between two processes on the host backend, beside a raw TCP socket pair ({@link RawTcpLink})
 * doing the same transfers in the same run. The {@link Launcher} starts two ranks of
 * {@link EthernetBenchRankSample}. Prints a markdown table per size (both bandwidths in GB/s, 1e9
 * bytes per second, their ratio, and whether it meets {@value #TARGET} from 64 KiB up), a
 * target line, and a ping-pong table (µs per round trip, ratio, and whether it is within
 * {@value #PING_TARGET} times raw TCP's round trip). Progress and failures go to
 * stderr; the tables go to stdout. Exits 1 when a rank failed or rank 1's check found wrong bytes;
 * a missed target is reported, not a failure.
 */
public final class EthernetBench {

    /** The usage line that {@code jmscclpp help} and a usage error print. */
    public static final String SYNOPSIS =
            "jmscclpp bench ethernet [--min 1K] [--max 64M] [--iters 1000] [--warmup 200] [--turns 5000] "
            + "[--jit-warmup 20000] [--jit-settle 60] [--tcp-vs-tcp]";

    /** ETHERNET GB/s over raw TCP GB/s that the target asks for, from {@link #TARGET_FROM} bytes up. */
    static final double TARGET = 0.9;
    static final long TARGET_FROM = 64 << 10;
    /** The longest ETHERNET ping-pong round trip the target allows, in raw TCP round trips of the same run. */
    static final double PING_TARGET = 1.5;

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(5);
    private static final Pattern LINE = Pattern.compile(
            "ETH size=(\\d+) iters=(\\d+) warmup=(\\d+) eth_gbps=(\\S+) tcp_gbps=(\\S+) check=(.*)");
    private static final Pattern JIT = Pattern.compile(
            "(ETH-JIT|ETH-PING-JIT) iterations=(\\d+) seconds=(\\d+\\.\\d+) last_compile_ms=(-?\\d+),(-?\\d+) "
            + "settled=(true|false)");
    private static final Pattern PING = Pattern.compile(
            "ETH-PINGPONG turns=(\\d+) eth_us=(\\S+) put_us=(\\S+) tcp_us=(\\S+)");

    private EthernetBench() {
    }

    /** One size: iterations, both bandwidths in GB/s, and rank 1's verdict ({@code ok} or what was wrong). */
    record Row(long size, int iters, int warmup, double ethGbps, double tcpGbps, String check) {
        double ratio() {
            return tcpGbps > 0 ? ethGbps / tcpGbps : 0;
        }

        boolean targetApplies() {
            return size >= TARGET_FROM;
        }

        boolean targetMet() {
            return ratio() >= TARGET;
        }

        static @Nullable Row parse(String line) {
            Matcher m = LINE.matcher(line);
            if (!m.matches()) {
                return null;
            }
            return new Row(Long.parseLong(m.group(1)), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)),
                    Double.parseDouble(m.group(4)), Double.parseDouble(m.group(5)), m.group(6));
        }
    }

    /** How a JIT warm-up went, as rank 0 reported it (an ETH-JIT or ETH-PING-JIT line). */
    record JitWarmup(String key, JitSettle.Outcome outcome) {
        static @Nullable JitWarmup parse(String line) {
            Matcher m = JIT.matcher(line);
            return m.matches() ? new JitWarmup(m.group(1), new JitSettle.Outcome(Long.parseLong(m.group(2)),
                    Double.parseDouble(m.group(3)), Long.parseLong(m.group(4)), Long.parseLong(m.group(5)),
                    Boolean.parseBoolean(m.group(6)))) : null;
        }
    }

    /**
     * The ping-pong: turns timed and µs per round trip of each: ETHERNET with a write and a signal
     * (two calls), ETHERNET with {@code writeAndSignal} (one call, one socket write), raw TCP.
     */
    record PingPong(int turns, double ethMicros, double putMicros, double tcpMicros) {
        static @Nullable PingPong parse(String line) {
            Matcher m = PING.matcher(line);
            return m.matches() ? new PingPong(Integer.parseInt(m.group(1)), Double.parseDouble(m.group(2)),
                    Double.parseDouble(m.group(3)), Double.parseDouble(m.group(4))) : null;
        }
    }

    /** {@code jmscclpp bench ethernet ARGS}: prints its table on {@code out}; returns the exit code. */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        EthernetBenchRankSample.Options o = BenchArgs.parseOrPrintUsage(args, EthernetBenchRankSample::parse,
                "jmscclpp bench ethernet", SYNOPSIS, err);
        if (o == null) {
            return ExitCodes.USAGE;
        }
        err.printf("bench: ethernet, 2 processes, %s to %s, %d ping-pong turns ...%n", ByteSizes.label(o.min()),
                ByteSizes.label(o.max()), o.turns());
        List<Row> rows = new ArrayList<>();
        List<PingPong> pings = new ArrayList<>();
        List<JitWarmup> jit = new ArrayList<>();
        String error = measure(o, rows, pings, jit, err);
        out.println(BootstrapBench.machine());
        JitSettle.Outcome warm = jit.stream().filter(j -> j.key().equals("ETH-JIT")).map(JitWarmup::outcome)
                .findFirst().orElse(null);
        out.printf(Locale.ROOT, "ETHERNET (host backend) beside a raw TCP socket pair (java.nio, TCP_NODELAY), same "
                + "transfers, same run; %s; per size: write + flush of the whole size, %d timed iterations after %d "
                + "warm-up, fewer where a size would move more than %d MiB timed (at least %d), in blocks of "
                + "at most %d, a block of each transport in turn (which goes first alternating), each after one "
                + "untimed transfer; the median block shown; GB = 1e9 B%n%n",
                warm == null ? "JIT warm-up not reported" : warm.iterations() == 0 ? "no JIT warm-up"
                        : String.format(Locale.ROOT, "first a JIT warm-up of %d untimed transfers of %s on each (at "
                        + "least %d, then on until %s): %s", warm.iterations(), ByteSizes.label(o.jitWarmupBytes()),
                        o.jitWarmup(), settleRule(o), warm.describe()),
                o.iters(), o.warmup(), EthernetBenchRankSample.BUDGET >> 20, EthernetBenchRankSample.MIN_ITERS,
                EthernetBenchRankSample.BLOCK);
        if (o.tcpVsTcp()) {
            out.printf("--tcp-vs-tcp: the ETHERNET column is raw TCP as well (a second transfer over the same socket"
                    + " in ETHERNET's place): how far its ratio strays from 1 is this host's own noise%n%n");
        }
        out.print(table(rows));
        out.println(targetLine(rows));
        out.println();
        if (!pings.isEmpty()) {
            JitSettle.Outcome turns = jit.stream().filter(j -> j.key().equals("ETH-PING-JIT"))
                    .map(JitWarmup::outcome).findFirst().orElse(null);
            out.printf(Locale.ROOT, "ping-pong of one int: %s, then %d timed turns of each in %d rounds alternating "
                    + "the forms, the median round shown%n%n", turns == null ? "JIT warm-up not reported"
                    : String.format(Locale.ROOT, "%d untimed turns of each form (at least %d, then on until %s): %s",
                    turns.iterations(), o.turns(), settleRule(o), turns.describe()),
                    o.turns(), Math.min(EthernetBenchRankSample.ROUNDS, o.turns()));
            out.print(pingTable(pings.getFirst()));
        }
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
        if (error == null && pings.isEmpty()) {
            error = "rank 0 reported no ping-pong";
        }
        if (error != null) {
            out.println("bench ethernet failed: " + error);
            failed = true;
        }
        return failed ? ExitCodes.FAILURE : ExitCodes.OK;
    }

    private static @Nullable String measure(EthernetBenchRankSample.Options o, List<Row> rows, List<PingPong> pings,
                                            List<JitWarmup> jit, PrintStream err) {
        BenchJob.Outcome outcome = BenchJob.run(Launcher.builder(2).sample(EthernetBenchRankSample.NAME,
                EthernetBenchRankSample.args(o)), JOB_TIMEOUT, line -> {
                    if (line.rank() != 0 || line.stderr()) {
                        return false;
                    }
                    Row row = Row.parse(line.text());
                    PingPong ping = row == null ? PingPong.parse(line.text()) : null;
                    JitWarmup warm = row == null && ping == null ? JitWarmup.parse(line.text()) : null;
                    synchronized (rows) {
                        if (row != null) {
                            rows.add(row);
                        } else if (ping != null) {
                            pings.add(ping);
                        } else if (warm != null) {
                            jit.add(warm);
                        }
                    }
                    return row != null || ping != null || warm != null;
                });
        if (outcome.error() != null) {
            outcome.report(err, "ethernet", outcome.error());
        }
        return outcome.error();
    }

    /** When a warm-up past its minimum stops. */
    private static String settleRule(EthernetBenchRankSample.Options o) {
        return String.format(Locale.ROOT, "%d steps of %d in a row in which neither rank's JIT compiled over %d ms, "
                + "for at most %d s", JitSettle.QUIET_STEPS, JitSettle.STEP, JitSettle.QUIET_MILLIS, o.jitSettle());
    }

    static String table(List<Row> rows) {
        List<String> header = List.of("size", "iters", "ETHERNET GB/s", "raw TCP GB/s", "ratio",
                "target (>= " + TARGET + " from " + ByteSizes.label(TARGET_FROM) + ")");
        List<List<String>> cells = new ArrayList<>();
        for (Row r : rows) {
            cells.add(List.of(ByteSizes.label(r.size()), Integer.toString(r.iters()), format(r.ethGbps()),
                    format(r.tcpGbps()), format(r.ratio()),
                    !r.check().equals("ok") ? "check failed" : !r.targetApplies() ? "-" : r.targetMet() ? "met"
                            : "not met"));
        }
        return MarkdownTable.render(header, cells, c -> c == header.size() - 1);
    }

    static String targetLine(List<Row> rows) {
        String head = "target: ratio >= " + TARGET + " from " + ByteSizes.label(TARGET_FROM) + " up: ";
        List<Row> applicable = rows.stream().filter(Row::targetApplies).toList();
        if (applicable.isEmpty()) {
            return head + "no size measured from " + ByteSizes.label(TARGET_FROM) + " up";
        }
        List<String> missed = applicable.stream().filter(r -> !r.targetMet()).map(r -> ByteSizes.label(r.size()))
                .toList();
        return missed.isEmpty() ? head + "met on " + applicable.size() + " of " + applicable.size() + " sizes"
                : head + "not met on " + missed.size() + " of " + applicable.size() + " sizes ("
                + String.join(", ", missed) + ")";
    }

    static String pingTable(PingPong p) {
        List<String> header = List.of("ping-pong, 1 int", "turns", "ETHERNET µs", "raw TCP µs", "ratio",
                "target (<= " + PING_TARGET + ")");
        return MarkdownTable.render(header, List.of(
                pingRow("write + updateAndSync / wait", p.turns(), p.ethMicros(), p.tcpMicros()),
                pingRow("writeAndSignal / wait", p.turns(), p.putMicros(), p.tcpMicros())),
                c -> c == 0 || c == header.size() - 1);
    }

    private static List<String> pingRow(String what, int turns, double micros, double tcpMicros) {
        double ratio = tcpMicros > 0 ? micros / tcpMicros : 0;
        return List.of(what, Integer.toString(turns), format(micros), format(tcpMicros), format(ratio),
                tcpMicros > 0 && ratio <= PING_TARGET ? "met" : "not met");
    }

    private static String format(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
