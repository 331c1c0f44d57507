package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jmscclpp.cli.MainRun;
import org.jmscclpp.core.proxy.ProxyService.Poller;
import org.jmscclpp.samples.ExitCodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class ProxyBenchTest {

    private static final String NUMBER = "\\d+\\.\\d+";
    private static final String VERDICT = "(met|not met)";

    /**
     * Two real rank processes with tiny counts, and the C floor when a compiler exists: the method
     * lines, one row per measurement with a number in every poller column, C columns on the
     * ping-pong rows only, and the two target lines.
     */
    @Test
    @Timeout(240)
    void benchProxyWithTinyCountsPrintsTheWholeTable() {
        MainRun r = MainRun.of("bench", "proxy", "--iters", "30", "--warmup", "10", "--triggers", "3000", "--rounds", "2",
                "--threads", "2");
        assertEquals(ExitCodes.OK, r.code(), () -> r.out() + "\n" + r.err());
        boolean floor = ShmPingPongFloor.compiler().isPresent();
        List<String> lines = r.out().lines().toList();
        assertTrue(lines.getFirst().startsWith("machine: "), r.out());
        assertTrue(lines.get(1).startsWith("trigger: rank 1 pushes DATA triggers of 0 bytes")
                && lines.get(1).contains("median over 2 rounds of 3000 triggers"), r.out());
        assertTrue(lines.get(3).contains("1 int: 30 after 10") && lines.get(3).contains("4M ints: 30 after 8"),
                lines.get(3));
        int header = lines.indexOf(lines.stream().filter(l -> l.startsWith("|")).findFirst().orElseThrow());
        assertEquals(List.of("", "measure", "iters", "virtual", "platform", "virtual/platform", "C floor", "virtual/C",
                "platform/C", "virtual <= 1.2x platform", "<= 2.0x C floor (virtual / platform)"),
                Arrays.stream(lines.get(header).split("\\|")).map(String::strip).toList(), lines.get(header));
        assertTrue(lines.get(header + 1).matches("\\| -+ \\|( -+: \\|){7} -+ \\| -+ \\|"), lines.get(header + 1));

        String poller = " +\\| +" + NUMBER + " +\\| +" + NUMBER + " +\\| +" + NUMBER + " \\|";
        String noFloor = " +- \\| +- \\| +- \\| " + VERDICT + " +\\| - +\\|";
        assertTrue(lines.get(header + 2).matches("\\| trigger from another process, µs +\\| +6000" + poller + noFloor),
                lines.get(header + 2));
        String[] sizes = {"1 int", "1K ints", "1M ints", "4M ints"};
        for (int i = 0; i < sizes.length; i++) {
            String c = floor ? " +" + NUMBER + " \\| +" + NUMBER + " \\| +" + NUMBER + " \\| " + VERDICT + " +\\| "
                    + VERDICT + " / " + VERDICT + " +\\|"
                    : " +n/a \\| +n/a \\| +n/a \\| " + VERDICT + " +\\| n/a / n/a +\\|";
            String row = lines.get(header + 3 + i);
            assertTrue(row.matches("\\| ping-pong " + sizes[i] + ", µs +\\| +30" + poller + c), row);
        }
        assertTrue(lines.get(header + 7).matches("\\| triggers/s, 1 producer thread, M/s +\\| +6000" + poller + noFloor),
                lines.get(header + 7));
        assertTrue(lines.get(header + 8).matches("\\| triggers/s, 2 producer threads, M/s +\\| +6000" + poller
                + noFloor), lines.get(header + 8));
        // 3000 triggers x (1 untimed + 2 rounds), then 2 rounds with 1 thread and with 2: 9000 + 6000 + 6000
        assertTrue(lines.get(header + 9).matches("\\| busy proxy: its threads' CPU while every trigger above was pushed,"
                + " cores +\\| +21000" + poller + " +- \\| +- \\| +- \\| n/a +\\| - +\\|"), lines.get(header + 9));
        assertTrue(lines.get(header + 10).matches("\\| busy proxy: its process's CPU meanwhile, cores +\\| +21000" + poller
                + " +- \\| +- \\| +- \\| n/a +\\| - +\\|"), lines.get(header + 10));
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("busy proxy: the CPU time of rank 0's proxy threads")),
                r.out());
        assertEquals("", lines.get(header + 11), r.out());
        assertTrue(lines.get(header + 12).matches("target: virtual-thread poller within 1\\.2x of the platform-thread "
                + "poller: (met on 7 of 7 rows|not met on [1-7] of 7 rows \\(.+\\))"), lines.get(header + 12));
        if (floor) {
            assertTrue(lines.get(header + 13).matches("target: Java round trip <= 2\\.0x the C floor: virtual met on "
                    + "[0-4] of 4 sizes, platform met on [0-4] of 4 sizes"), lines.get(header + 13));
        } else {
            assertEquals("target: Java round trip <= 2.0x the C floor: not evaluated (no C floor)",
                    lines.get(header + 13));
        }
        assertTrue(lines.get(header + 14).matches("target: a busy proxy spins on at most one core \\(its threads' CPU\\):"
                + " virtual " + NUMBER + ", platform " + NUMBER + " cores: " + VERDICT),
                lines.get(header + 14));
        if (floor) {
            assertEquals(header + 15, lines.size(), r.out());
        } else {
            assertTrue(lines.get(header + 15).startsWith("C floor skipped: no C compiler"), r.out());
            assertEquals(header + 16, lines.size(), r.out());
        }
    }

    @Test
    void usageErrorsStartNothing() {
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "proxy", "--iters", "0").code());
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "proxy", "--threads", "65").code());
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "proxy", "--triggers", "3", "--threads", "4").code());
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "proxy", "--rounds").code());
        MainRun r = MainRun.of("bench", "proxy", "--bogus", "1");
        assertEquals(ExitCodes.USAGE, r.code());
        assertTrue(r.err().contains("Unknown options: '--bogus', '1'")
                && r.err().contains("Usage: jmscclpp bench proxy"),
                r.err());
        MainRun which = MainRun.of("bench", "nope");
        assertTrue(which.err().contains("bootstrap, write, proxy") && which.err().contains("Usage: jmscclpp bench"),
                which.err());
        assertTrue(MainRun.of("bench", "--help").out().contains("  proxy "));
        MainRun help = MainRun.of("bench", "proxy", "--help");
        assertEquals(ExitCodes.OK, help.code());
        assertTrue(help.out().contains("--threads=N") && help.out().contains("--bw-mib=M"), help.out());
    }

    @Test
    void largeSizesGetFewerRoundTripsAndTheFloorTheSameCounts() {
        ProxyBenchRankSample.Options o = ProxyBenchRankSample.parse(List.of());
        assertEquals(new ProxyBenchRankSample.Options(10_000, 2_000, 100_000, 5, 4), o);
        assertEquals(List.of(new ShmPingPongFloor.Size(1, 10_000, 2_000), new ShmPingPongFloor.Size(1024, 10_000, 2_000),
                new ShmPingPongFloor.Size(1 << 20, 128, 32), new ShmPingPongFloor.Size(4 << 20, 32, 8)),
                ProxyBench.sizes(o));
        assertEquals(ProxyBenchRankSample.MIN_ITERS, ProxyBenchRankSample.itersFor(1 << 28, 10_000));
        assertEquals(2, ProxyBenchRankSample.warmupFor(1 << 28, 2_000));
        assertEquals(0, ProxyBenchRankSample.warmupFor(1, 0));
        assertEquals(List.of("--iters", "7", "--warmup", "0", "--triggers", "9", "--rounds", "3", "--threads", "2"),
                ProxyBenchRankSample.args(ProxyBenchRankSample.parse(ProxyBenchRankSample.args(
                        new ProxyBenchRankSample.Options(7, 0, 9, 3, 2)))));
    }

    @Test
    void resultLinesRoundTripAndOtherLinesAreIgnored() {
        String line = ProxyBenchRankSample.line(Poller.PLATFORM_THREAD, ProxyBenchRankSample.PINGPONG_US, 1024, 20000,
                12.34567);
        assertEquals("PROXY poller=PLATFORM_THREAD metric=pingpong_us param=1024 iters=20000 value=12.3457", line);
        assertEquals(new ProxyBench.Result(Poller.PLATFORM_THREAD, "pingpong_us", 1024, 20000, 12.3457),
                ProxyBench.Result.parse(line));
        assertNull(ProxyBench.Result.parse("PROXY poller=GREEN_THREAD metric=x param=1 iters=1 value=1"));
        assertNull(ProxyBench.Result.parse("[rank 0] PROXY poller=VIRTUAL_THREAD"));
    }

    /** Cost ratios go the right way for times and for rates; missing values make n/a, not a verdict. */
    @Test
    void tableRatiosVerdictsAndTargetLines() {
        ProxyBenchRankSample.Options o = new ProxyBenchRankSample.Options(100, 10, 1000, 2, 2);
        Map<String, Map<Poller, ProxyBench.Result>> results = new LinkedHashMap<>();
        put(results, "trigger_us", 1, 1.1, 1.0);          // virtual 1.1x the cost: met
        put(results, "pingpong_us", 1, 30.0, 20.0);       // 1.5x: not met
        put(results, "pingpong_us", 1024, 30.0, 29.0);
        put(results, "pingpong_us", 1 << 20, 900.0, 850.0);
        put(results, "rate_mps", 1, 2.0, 3.0);            // platform 1.5x the rate: not met
        put(results, "rate_mps", 2, 3.0, 3.3);            // 1.1x: met
        put(results, "busy_cores", 0, 1.01, 0.97);        // not the pollers' target: its own
        Map<Integer, Double> floor = Map.of(1, 10.0, 1024, 20.0, 1 << 20, 500.0, 4 << 20, 2000.0);
        List<ProxyBench.Row> rows = ProxyBench.rows(o, results, floor);
        assertEquals(9, rows.size());
        assertEquals(1.1, rows.get(0).pollerRatio(), 1e-9);
        assertEquals(1.5, rows.get(4 + 1).pollerRatio(), 1e-9, "rates: platform over virtual");
        List<String> lines = ProxyBench.table(rows).lines().toList();
        assertEquals(11, lines.size());
        assertTrue(lines.get(2).matches("\\| trigger from another process, µs +\\| +2000 \\| +1\\.10 \\| +1\\.00 \\| +1\\.10"
                + " \\| +- \\| +- \\| +- \\| met +\\| - +\\|"), lines.get(2));
        assertTrue(lines.get(3).matches("\\| ping-pong 1 int, µs +\\| +100 \\| +30\\.00 \\| +20\\.00 \\| +1\\.50 \\| +10\\.00"
                + " \\| +3\\.00 \\| +2\\.00 \\| not met +\\| not met / met +\\|"), lines.get(3));
        assertTrue(lines.get(4).contains("| met ") && lines.get(4).contains("| met / met "), lines.get(4));
        assertTrue(lines.get(6).matches("\\| ping-pong 4M ints, µs +\\| +32 \\| +n/a \\| +n/a \\| +n/a \\| +2000\\.00 \\|"
                + " +n/a \\| +n/a \\| n/a +\\| n/a / n/a +\\|"), lines.get(6));
        assertTrue(lines.get(7).matches("\\| triggers/s, 1 producer thread, M/s +\\| +2000 \\| +2\\.000 \\| +3\\.000 \\|"
                + " +1\\.50 \\| +- \\| +- \\| +- \\| not met +\\| - +\\|"), lines.get(7));
        assertEquals("target: virtual-thread poller within 1.2x of the platform-thread poller: not met on 2 of 6 rows "
                + "(ping-pong 1 int, µs; triggers/s, 1 producer thread, M/s)", ProxyBench.pollerTargetLine(rows));
        assertEquals("target: Java round trip <= 2.0x the C floor: virtual met on 2 of 4 sizes, platform met on 3 of 4 "
                + "sizes", ProxyBench.floorTargetLine(rows, null));
        assertTrue(lines.get(9).matches("\\| busy proxy: .+, cores +\\| +7000 \\| +1\\.01 \\| +0\\.97 \\| +1\\.04 \\|"
                + " +- \\| +- \\| +- \\| n/a +\\| - +\\|"), lines.get(9));
        assertTrue(lines.get(10).matches("\\| busy proxy: its process's CPU meanwhile, cores +\\| +7000 \\| +n/a \\| +n/a \\|"
                + " +n/a \\| +- \\| +- \\| +- \\| n/a +\\| - +\\|"), lines.get(10));
        assertEquals("target: a busy proxy spins on at most one core (its threads' CPU): virtual 1.01, platform 0.97 "
                + "cores: not met", ProxyBench.busyTargetLine(rows));
        put(results, "busy_cores", 0, 0.99, 0.97);
        assertTrue(ProxyBench.busyTargetLine(ProxyBench.rows(o, results, floor)).endsWith("virtual 0.99, platform 0.97"
                + " cores: met"));
        results.remove("busy_cores/0");
        assertEquals("target: a busy proxy spins on at most one core (its threads' CPU): not measured",
                ProxyBench.busyTargetLine(ProxyBench.rows(o, results, floor)));
        List<ProxyBench.Row> noFloor = ProxyBench.rows(o, results, Map.of());
        assertEquals("target: Java round trip <= 2.0x the C floor: not evaluated (no C floor)",
                ProxyBench.floorTargetLine(noFloor, "no C compiler (cc, gcc, clang) on the PATH"));
        assertTrue(ProxyBench.table(noFloor).lines().toList().get(3).contains("| n/a / n/a "));
    }

    @Test
    void intsAreLabelledInPowersOf1024() {
        assertEquals("1 int", ProxyBench.ints(1));
        assertEquals("1K ints", ProxyBench.ints(1024));
        assertEquals("4M ints", ProxyBench.ints(4 << 20));
        assertEquals("1000 ints", ProxyBench.ints(1000));
        assertThrows(IllegalArgumentException.class, () -> ProxyBenchRankSample.parse(List.of("--warmup", "-1")));
    }

    private static void put(Map<String, Map<Poller, ProxyBench.Result>> results, String metric, int param,
                            double virtual, double platform) {
        Map<Poller, ProxyBench.Result> m = new EnumMap<>(Poller.class);
        m.put(Poller.VIRTUAL_THREAD, new ProxyBench.Result(Poller.VIRTUAL_THREAD, metric, param, 1, virtual));
        m.put(Poller.PLATFORM_THREAD, new ProxyBench.Result(Poller.PLATFORM_THREAD, metric, param, 1, platform));
        results.put(metric + "/" + param, m);
    }
}
