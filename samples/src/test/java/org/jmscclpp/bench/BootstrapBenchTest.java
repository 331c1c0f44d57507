package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.Test;

class BootstrapBenchTest {

    @Test
    void medianOfOddAndEvenCounts() {
        assertEquals(3.0, BenchStats.median(new long[] {5, 1, 3}));
        assertEquals(2.5, BenchStats.median(new long[] {4, 1, 3, 2}));
    }

    @Test
    void slowestRankIsTakenPerIterationBeforeTheMedian() {
        // iteration maxima: 10, 20, 30 -> median 20; a per-rank median (2 or 11) would be wrong
        long[][] perRank = {
            {99, 10, 2, 1},
            {99, 1, 20, 30},
        };
        assertEquals(20.0, BenchStats.medianOfSlowest(perRank, 1, 3));
    }

    @Test
    void longArraysSurviveTheAllGatherEncoding() {
        long[] a = {1, -2, Long.MAX_VALUE};
        long[] b = {4, 5, 6};
        byte[] all = new byte[48];
        System.arraycopy(BenchStats.toBytes(a), 0, all, 0, 24);
        System.arraycopy(BenchStats.toBytes(b), 0, all, 24, 24);
        long[][] split = BenchStats.split(all, 2);
        assertArrayEquals(a, split[0]);
        assertArrayEquals(b, split[1]);
        assertThrows(IllegalArgumentException.class, () -> BenchStats.split(new byte[20], 2));
    }

    @Test
    void rankReportLinesAreWhatTheParentParses() {
        int iters = 2;
        List<BenchOp> ops = BenchOp.applicable(2);
        // slot 0: init ns; then per op 2 iterations, 1 MiB round trip 1 ms -> 1.048576 GB/s
        long[] r0 = new long[1 + ops.size() * iters];
        long[] r1 = new long[r0.length];
        r0[0] = 3_000_000;
        r1[0] = 5_000_000;
        for (int i = 1; i < r0.length; i++) {
            r0[i] = 1_000_000;
            r1[i] = 500_000;
        }
        List<String> lines = BenchRankSample.report(2, ops, iters, new long[][] {r0, r1});
        Pattern p = Pattern.compile("BENCH n=(\\d+) op=(\\S+) (max_ms|median_us|median_gbps)=(\\S+)");
        assertEquals(1 + ops.size(), lines.size());
        for (String line : lines) {
            assertTrue(p.matcher(line).matches(), line);
        }
        assertEquals("BENCH n=2 op=init max_ms=5.000", lines.getFirst());
        assertEquals("BENCH n=2 op=allgather_8B median_us=1000.0000", lines.get(1));
        Matcher bw = p.matcher(lines.getLast());
        assertTrue(bw.matches());
        assertEquals("sendrecv_bw_1MiB", bw.group(2));
        assertEquals(1.048576, Double.parseDouble(bw.group(4)), 1e-4);
    }

    @Test
    void pointToPointOpsOnlyForTwoRanks() {
        assertEquals(6, BenchOp.applicable(2).size());
        assertEquals(4, BenchOp.applicable(4).size());
    }

    @Test
    void tableShowsSkipsMissingOpsAndFailures() {
        BootstrapBench.Row procs = new BootstrapBench.Row(2, "procs",
                Map.of("init", 40.0, "allgather_8B", 12.34, "sendrecv_bw_1MiB", 1.5), Map.of(), null, null);
        BootstrapBench.Row jvm = new BootstrapBench.Row(256, "jvm", Map.of("init", 900.0),
                Map.of("allgather_64KiB", "n/a (needs 4.0 GiB)"), null, null);
        BootstrapBench.Row failed = new BootstrapBench.Row(4, "procs", Map.of(), Map.of(), null, "boom");
        String table = BootstrapBench.table(List.of(procs, jvm, failed));
        List<String> lines = table.lines().toList();
        assertEquals(5, lines.size(), table);
        assertTrue(lines.get(0).matches("\\|\\s+N \\| mode\\s+\\| init ms \\| allGather 8 B µs \\|.*"), table);
        assertTrue(lines.get(2).matches("\\|\\s+2 \\| procs \\|\\s+40.0 \\|\\s+12.3 \\|.*\\|\\s+1.50 \\|"), table);
        assertTrue(lines.get(3).contains("n/a (needs 4.0 GiB)"), table);
        // send/recv columns do not apply to 256 ranks
        assertTrue(lines.get(3).matches(".*\\|\\s+- \\|\\s+- \\|$"), table);
        assertTrue(lines.get(4).contains("failed"), table);
        assertTrue(!table.contains("MPI"), table);
    }

    @Test
    void tableAddsMpiColumnsAndRatios() {
        BootstrapBench.Row procs = new BootstrapBench.Row(4, "procs", Map.of("init", 40.0, "barrier", 30.0),
                Map.of(), Map.of("barrier", 20.0, "allgather_8B", 10.0), null);
        BootstrapBench.Row jvm = new BootstrapBench.Row(64, "jvm", Map.of("init", 10.0, "barrier", 50.0), Map.of(),
                null, null);
        String table = BootstrapBench.table(List.of(procs, jvm));
        List<List<String>> cells = table.lines().filter(l -> l.startsWith("|")).map(BootstrapBenchTest::cells).toList();
        List<String> header = cells.get(0);
        int barrier = header.indexOf("barrier µs");
        assertEquals(List.of("barrier µs", "MPI", "ours/MPI"), header.subList(barrier, barrier + 3), table);
        assertEquals(List.of("30.0", "20.0", "1.50"), cells.get(2).subList(barrier, barrier + 3), table);
        // ours missing for allgather_8B: the MPI value is shown, no ratio
        int ag = header.indexOf("allGather 8 B µs");
        assertEquals(List.of("", "10.0", ""), cells.get(2).subList(ag, ag + 3), table);
        // jvm rows have no MPI counterpart
        assertEquals(List.of("50.0", "", ""), cells.get(3).subList(barrier, barrier + 3), table);
        assertTrue(table.contains("ours/MPI: above 1 means slower for times"), table);
    }

    private static List<String> cells(String line) {
        String[] parts = line.substring(1, line.length() - 1).split("\\|", -1);
        return Arrays.stream(parts).map(String::strip).toList();
    }

    @Test
    void optionsParse() {
        BootstrapBench.Options o = BootstrapBench.parse(List.of("--iters", "5", "--warmup", "0", "--procs", "2",
                "--jvm", "", "--no-mpi"));
        assertEquals(new BootstrapBench.Options(5, 0, List.of(2), List.of(), false), o);
        assertEquals(new BootstrapBench.Options(200, 20000, List.of(2, 4, 8, 16), List.of(64, 256, 1024), true),
                BootstrapBench.parse(List.of()));
        assertThrows(IllegalArgumentException.class, () -> BootstrapBench.parse(List.of("--iters")));
        assertThrows(IllegalArgumentException.class, () -> BootstrapBench.parse(List.of("--jvm", "8,x")));
        // either mode alone may be skipped, not both (an empty table and exit 0)
        assertEquals(List.of(), BootstrapBench.parse(List.of("--procs=", "--jvm", "8")).procs());
        assertThrows(IllegalArgumentException.class, () -> BootstrapBench.parse(List.of("--procs=", "--jvm=")));
    }

    @Test
    void inJvmMeasurementTimesEveryApplicableOp() {
        for (int n : new int[] {2, 3}) {
            Map<String, Double> values = new HashMap<>();
            Map<String, String> notes = new HashMap<>();
            BootstrapBench.measureOps(InMemoryBootstrap.group(n), 3, 1, values, notes);
            assertEquals(BenchOp.applicable(n).stream().map(op -> op.key).collect(Collectors.toSet()),
                    values.keySet(), "n=" + n);
            values.forEach((k, v) -> assertTrue(v > 0, k + "=" + v));
            assertTrue(notes.isEmpty(), notes.toString());
        }
    }

    @Test
    void inJvmMeasurementSkipsWhatCannotFit() {
        Map<String, Double> values = new HashMap<>();
        Map<String, String> notes = new HashMap<>();
        // 256 ranks x 256 x 64 KiB = 4 GiB of allGather results: skipped before any rank is asked
        BootstrapBench.measureOps(InMemoryBootstrap.group(256), 1, 0, values, notes);
        assertEquals("n/a (needs 4.0 GiB)", notes.get("allgather_64KiB"));
        assertTrue(values.containsKey("allgather_8B") && values.containsKey("barrier"), values.toString());
    }

    @Test
    void everyRankOfSeparateProcessesTimesItsOwnPart() throws Exception {
        int n = 2;
        int iters = 4;
        List<InMemoryBootstrap> group = InMemoryBootstrap.group(n);
        List<BenchOp> ops = BenchOp.applicable(n);
        List<CompletableFuture<long[]>> results = new ArrayList<>();
        for (InMemoryBootstrap bs : group) {
            // each rank blocks on its own thread, as each would in its own process
            results.add(CompletableFuture.supplyAsync(
                    () -> BenchRankSample.measure(bs, ops, iters, 2), r -> Thread.ofVirtual().start(r)));
        }
        for (CompletableFuture<long[]> f : results) {
            long[] times = f.get(60, TimeUnit.SECONDS);
            assertEquals(1 + ops.size() * iters, times.length);
            for (int i = 1; i < times.length; i++) {
                assertTrue(times[i] > 0, "slot " + i);
            }
        }
    }
}
