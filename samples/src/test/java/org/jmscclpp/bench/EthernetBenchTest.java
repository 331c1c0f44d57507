package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jmscclpp.cli.MainRun;
import org.jmscclpp.samples.ExitCodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class EthernetBenchTest {

    /** Two real rank processes over ETHERNET and raw TCP, tiny sizes: one checked row per size, the ping-pong. */
    @Test
    @Timeout(180)
    void benchEthernetWithTinySizesPrintsBothTables() {
        MainRun r = MainRun.of("bench", "ethernet", "--min", "1K", "--max", "16K", "--iters", "3", "--warmup", "1",
                "--turns", "20", "--jit-warmup", "50", "--jit-settle", "1");
        assertEquals(ExitCodes.OK, r.code(), () -> r.out() + "\n" + r.err());
        List<String> lines = r.out().lines().toList();
        assertTrue(lines.getFirst().startsWith("machine: "), r.out());
        // at least 50 warm-up transfers; then steps of 1000 until the JIT settled or 1 s passed
        String settle = "2 steps of 1000 in a row in which neither rank's JIT compiled over 5 ms, for at most 1 s\\): "
                + "\\d+\\.\\d s, (settled|still compiling) in the last step \\(rank 0 \\d+ ms, rank 1 \\d+ ms\\)";
        assertTrue(lines.get(1).matches(".*; first a JIT warm-up of \\d*50 untimed transfers of 16 KiB on each "
                + "\\(at least 50, then on until " + settle + "; per size: .*"), lines.get(1));
        int header = lines.indexOf(lines.stream().filter(l -> l.startsWith("|")).findFirst().orElseThrow());
        // a ratio of 100 or more widens its column (see WriteBenchTest)
        assertTrue(lines.get(header).matches("\\|\\s+size \\| iters \\| ETHERNET GB/s \\| raw TCP GB/s \\|"
                + "\\s+ratio \\| target \\(>= 0\\.9 from 64 KiB\\) \\|"), r.out());
        List<String> sizes = List.of("1 KiB", "4 KiB", "16 KiB");
        for (int i = 0; i < sizes.size(); i++) {
            String row = lines.get(header + 2 + i);
            assertTrue(row.matches("\\|\\s+" + sizes.get(i) + " \\|\\s+3 \\|\\s+\\d+\\.\\d\\d \\|\\s+\\d+\\.\\d\\d \\|"
                    + "\\s+\\d+\\.\\d\\d \\| -\\s+\\|"), row);
        }
        assertEquals("target: ratio >= 0.9 from 64 KiB up: no size measured from 64 KiB up", lines.get(header + 5),
                r.out());
        assertTrue(lines.get(header + 7).matches("ping-pong of one int: \\d*20 untimed turns of each form \\(at least "
                + "20, then on until " + settle + ", then 20 timed turns of each in 5 rounds alternating the forms, "
                + "the median round shown"), r.out());
        String pingHeader = lines.get(header + 9);
        assertTrue(pingHeader.matches("\\| ping-pong, 1 int\\s+\\| turns \\| ETHERNET µs \\| raw TCP µs \\|\\s+ratio \\| "
                + "target \\(<= 1\\.5\\)\\s+\\|"),
                r.out());
        assertTrue(lines.get(header + 11).matches("\\| write \\+ updateAndSync / wait \\|\\s+20 \\|\\s+\\d+\\.\\d\\d \\|"
                + "\\s+\\d+\\.\\d\\d \\|\\s+\\d+\\.\\d\\d \\| (met|not met)\\s+\\|"), r.out());
        assertTrue(lines.get(header + 12).matches("\\| writeAndSignal / wait\\s+\\|\\s+20 \\|\\s+\\d+\\.\\d\\d \\|"
                + "\\s+\\d+\\.\\d\\d \\|\\s+\\d+\\.\\d\\d \\| (met|not met)\\s+\\|"), r.out());
        assertEquals(header + 13, lines.size(), r.out());
    }

    /** Raw TCP in both columns: still checked (one untimed ETHERNET transfer per size), and said so. */
    @Test
    @Timeout(180)
    void tcpVsTcpTimesRawTcpInBothColumns() {
        MainRun r = MainRun.of("bench", "ethernet", "--min", "4K", "--max", "16K", "--iters", "4", "--warmup", "1",
                "--turns", "20", "--jit-warmup", "50", "--jit-settle", "0", "--tcp-vs-tcp");
        assertEquals(ExitCodes.OK, r.code(), () -> r.out() + "\n" + r.err());
        assertTrue(r.out().contains("--tcp-vs-tcp: the ETHERNET column is raw TCP as well"), r.out());
        assertEquals(2, r.out().lines().filter(l -> l.matches("\\|\\s+(4|16) KiB \\|\\s+4 \\|.*")).count(), r.out());
        assertTrue(!r.out().contains("check failed"), r.out());
        assertEquals(List.of("--min", "1", "--max", "2", "--iters", "3", "--warmup", "4", "--turns", "5",
                "--jit-warmup", "6", "--jit-settle", "7", "--tcp-vs-tcp"), EthernetBenchRankSample.args(
                new EthernetBenchRankSample.Options(1, 2, 3, 4, 5, 6, 7, true)));
        assertTrue(EthernetBenchRankSample.parse(List.of("--tcp-vs-tcp")).tcpVsTcp());
    }

    @Test
    void usageErrorsStartNothing() {
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "ethernet", "--min", "4").code());
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "ethernet", "--min", "64K", "--max", "4K").code());
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "ethernet", "--turns", "0").code());
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "ethernet", "--max", "4G").code());
        MainRun r = MainRun.of("bench", "ethernet", "--bogus", "1");
        assertEquals(ExitCodes.USAGE, r.code());
        assertTrue(r.err().contains("Unknown options: '--bogus', '1'")
                && r.err().contains("Usage: jmscclpp bench ethernet"),
                r.err());
        assertTrue(MainRun.of("bench", "ethernet", "--help").out().contains("--jit-warmup=N"));
        assertTrue(MainRun.of("bench", "ethernet", "--help").out().contains("--jit-settle=S"));
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "ethernet", "--jit-settle", "-1").code());
        MainRun which = MainRun.of("bench", "nope");
        assertTrue(which.err().contains("bootstrap, write, proxy, ethernet") && which.err().contains("  ethernet "),
                which.err());
    }

    @Test
    void defaultsAndSizes() {
        EthernetBenchRankSample.Options o = EthernetBenchRankSample.parse(List.of());
        assertEquals(new EthernetBenchRankSample.Options(1 << 10, 64 << 20, 1000, 200, 5000, 20_000, 60, false), o);
        assertEquals(List.of(1L << 10, 4L << 10, 16L << 10, 64L << 10, 256L << 10, 1L << 20, 4L << 20, 16L << 20,
                64L << 20), o.sizes());
        assertEquals(5000, o.warmupTurns());
        assertEquals(64 << 10, o.jitWarmupBytes());
        assertEquals(16 << 10, EthernetBenchRankSample.parse(List.of("--max", "16K", "--jit-warmup", "0")).jitWarmupBytes());
        assertEquals(0, EthernetBenchRankSample.parse(List.of("--jit-warmup", "0")).jitWarmup());
        assertEquals(EthernetBenchRankSample.MIN_ITERS, EthernetBenchRankSample.itersFor(1L << 30, 100));
        assertEquals(8, EthernetBenchRankSample.itersFor(64L << 20, 100));
    }

    @Test
    void rowsAndTargetLine() {
        EthernetBench.Row met = EthernetBench.Row.parse(
                "ETH size=65536 iters=100 warmup=10 eth_gbps=1.9 tcp_gbps=2.0 check=ok");
        EthernetBench.Row missed = EthernetBench.Row.parse(
                "ETH size=4194304 iters=100 warmup=10 eth_gbps=1.7 tcp_gbps=2.0 check=ok");
        EthernetBench.Row small = EthernetBench.Row.parse(
                "ETH size=16384 iters=100 warmup=10 eth_gbps=0.1 tcp_gbps=2.0 check=ok");
        assertNotNull(met);
        assertNotNull(missed);
        assertNull(EthernetBench.Row.parse("ETH-PINGPONG turns=10 eth_us=1.0 put_us=0.5 tcp_us=2.0"));
        assertEquals(new EthernetBench.PingPong(10, 1.0, 0.5, 2.0),
                EthernetBench.PingPong.parse("ETH-PINGPONG turns=10 eth_us=1.0 put_us=0.5 tcp_us=2.0"));
        assertEquals(new EthernetBench.JitWarmup("ETH-JIT", new JitSettle.Outcome(31000, 4.2, 2, 0, true)),
                EthernetBench.JitWarmup.parse("ETH-JIT iterations=31000 seconds=4.2 last_compile_ms=2,0 settled=true"));
        assertEquals(new EthernetBench.JitWarmup("ETH-PING-JIT", new JitSettle.Outcome(9000, 2.0, 7, 1, false)),
                EthernetBench.JitWarmup.parse(
                        "ETH-PING-JIT iterations=9000 seconds=2.0 last_compile_ms=7,1 settled=false"));
        assertNull(EthernetBench.JitWarmup.parse("ETH-JIT iterations=1 seconds=x last_compile_ms=2,0 settled=true"));
        assertEquals("target: ratio >= 0.9 from 64 KiB up: met on 1 of 1 sizes",
                EthernetBench.targetLine(List.of(small, met)));
        assertEquals("target: ratio >= 0.9 from 64 KiB up: not met on 1 of 2 sizes (4 MiB)",
                EthernetBench.targetLine(List.of(met, missed)));
        String ping = EthernetBench.pingTable(new EthernetBench.PingPong(10, 31.0, 29.0, 20.0));
        assertTrue(ping.contains("|       31.00 |      20.00 |  1.55 | not met "), ping);
        assertTrue(ping.contains("|       29.00 |      20.00 |  1.45 | met "), ping);
    }

    @Test
    void rootHostParsing() {
        assertEquals("10.0.0.1", RawTcpLink.hostOf("10.0.0.1:5000"));
        assertEquals("10.0.0.1", RawTcpLink.hostOf("eth0:10.0.0.1:5000"));
        assertEquals("::1", RawTcpLink.hostOf("[::1]:5000"));
        assertEquals("node7", RawTcpLink.hostOf("node7:5000"));
    }
}
