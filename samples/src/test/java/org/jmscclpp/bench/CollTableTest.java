package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.jr.ob.JSON;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class CollTableTest {

    private static CollectiveRunner.Measurement m(String impl, CollectiveKind kind, long size, long count,
                                                  boolean inPlace, double us, long wrong) {
        return new CollectiveRunner.Measurement(impl, "algo", kind, size, count, DataType.FLOAT32, inPlace, us, wrong);
    }

    private static CollReport report(CollectiveKind kind, @Nullable ReduceOp op, int root, int ranks,
                                     List<CollectiveRunner.Measurement> rows, @Nullable CallOverhead overhead) {
        return new CollReport("jmscclpp bench coll -b 1K -e 1M", "h1", "cuda", kind, DataType.FLOAT32, op, root, ranks,
                "algo", 1024, 1 << 20, 2, 20, 5, 1, 0, List.of("Rank  0 Group  0 Pid    100 on         h1 device  0 GPU"),
                Map.of("jmscclpp", "0.1"), rows, overhead);
    }

    private static CollReport report(CollectiveKind kind, int ranks, List<CollectiveRunner.Measurement> rows) {
        return report(kind, kind.reduces() ? ReduceOp.SUM : null, kind.rooted() ? 0 : -1, ranks, rows, null);
    }

    @Test
    void busFactorsAreNcclTests() {
        // 1 MB in 10 µs is 100 GB/s; allreduce on 4 ranks: busbw 150
        CollectiveRunner.Measurement x = m("jmscclpp", CollectiveKind.ALL_REDUCE, 1_000_000, 250_000, false, 10, 0);
        assertEquals(100.0, CollReport.algbw(x), 1e-9);
        assertEquals(150.0, CollReport.busbw(x, 4), 1e-9);
        // reducescatter (n-1)/n, broadcast and reduce 1
        assertEquals(75.0, CollReport.busbw(m("jmscclpp", CollectiveKind.REDUCE_SCATTER, 1_000_000, 62_500, false, 10,
                0), 4), 1e-9);
        assertEquals(100.0, CollReport.busbw(m("jmscclpp", CollectiveKind.BROADCAST, 1_000_000, 250_000, false, 10, 0),
                4), 1e-9);
        assertEquals(100.0, CollReport.busbw(m("jmscclpp", CollectiveKind.SEND, 1_000_000, 250_000, false, 10, 0), 8),
                1e-9);
    }

    @Test
    void numbersLoseDecimalsToFitTheirWidth() {
        assertEquals("   3.14", CollTable.fit(3.14159, 7));
        assertEquals("123.46", CollTable.fit(123.456, 6));
        assertEquals("1234.6", CollTable.fit(1234.56, 6));
        assertEquals(" 12346", CollTable.fit(12345.6, 6));
        assertEquals(" 99999", CollTable.fit(99999.4, 6));
        assertEquals("1e+06", CollTable.fit(999999.9, 6).strip());
        assertEquals("  0.00", CollTable.fit(0, 6));
        assertEquals("123.457", CollTable.g(123.4567));
        assertEquals("2", CollTable.g(2.0));
    }

    @Test
    void rowsHaveNcclTestsWidthsAndInPlaceIsNaWhereTheKindHasNone() {
        CollectiveRunner.Measurement out = m("jmscclpp", CollectiveKind.ALL_REDUCE, 1024, 256, false, 4.0, 0);
        CollectiveRunner.Measurement in = m("jmscclpp", CollectiveKind.ALL_REDUCE, 1024, 256, true, 5.12, 0);
        CollReport allReduce = report(CollectiveKind.ALL_REDUCE, 2, List.of(out, in));
        String row = CollTable.row(allReduce, new CollReport.Line(1024, 256, out, in, null, null));
        // 1024 B in 4 µs = 0.256 GB/s, busbw x1 on 2 ranks; in 5.12 µs = 0.2 GB/s
        assertEquals("        1024           256     float     sum      -1"
                + "     4.00    0.26    0.26       0     5.12    0.20    0.20       0", row);
        CollectiveRunner.Measurement send = m("jmscclpp", CollectiveKind.SEND, 4096, 1024, false, 12345.6, -1);
        assertEquals("        4096          1024     float    none      -1"
                + "  12345.6    0.00    0.00     N/A      N/A     N/A     N/A     N/A",
                CollTable.row(report(CollectiveKind.SEND, 2, List.of(send)),
                        new CollReport.Line(4096, 1024, send, null, null, null)));
        // the reduction and the root: a max reduce onto rank 3
        CollectiveRunner.Measurement reduce = m("jmscclpp", CollectiveKind.REDUCE, 1024, 256, false, 4.0, 0);
        assertTrue(CollTable.row(report(CollectiveKind.REDUCE, ReduceOp.MAX, 3, 4, List.of(reduce), null),
                new CollReport.Line(1024, 256, reduce, null, null, null))
                .startsWith("        1024           256     float     max       3"));
        CollectiveRunner.Measurement nccl = m("nccl", CollectiveKind.ALL_REDUCE, 1024, 256, false, 8.0, 0);
        CollReport withNcclReport = report(CollectiveKind.ALL_REDUCE, 2, List.of(out, in, nccl));
        String withNccl = CollTable.row(withNcclReport, new CollReport.Line(1024, 256, out, in, nccl, null));
        assertTrue(withNccl.endsWith("     8.00    0.13    0.50"), "NCCL's time, busbw, ours/NCCL: " + withNccl);
        List<String> heads = CollTable.heads(true, false).lines().toList();
        assertTrue(heads.get(1).endsWith("     time   busbw   ratio"), heads.get(1));
        assertTrue(heads.get(2).endsWith("  t/nccl"), heads.get(2));
        assertEquals(withNccl.length(), heads.get(1).length(), "the NCCL columns line up with their heads");
        // a size NCCL has no row for keeps the columns
        assertTrue(CollTable.row(withNcclReport, new CollReport.Line(1024, 256, out, in, null, null))
                .endsWith("      N/A     N/A     N/A"));
    }

    @Test
    void stagedColumnsShowTheCostOfStaging() {
        CollectiveRunner.Measurement out = m("jmscclpp", CollectiveKind.ALL_GATHER, 2048, 256, false, 4.0, 0);
        CollectiveRunner.Measurement staged = m("jmscclpp-staged", CollectiveKind.ALL_GATHER, 2048, 256, false, 10.0,
                0);
        CollReport r = report(CollectiveKind.ALL_GATHER, 2, List.of(out, staged));
        List<CollReport.Line> lines = r.lines();
        assertEquals(1, lines.size());
        assertEquals(staged, lines.getFirst().stagedOut());
        String row = CollTable.row(r, lines.getFirst());
        // 2048 B in 10 µs = 0.2048 GB/s, busbw x1/2; staged over registered 2.5
        assertTrue(row.endsWith("    10.00    0.10    2.50"), row);
        List<String> heads = CollTable.heads(false, true).lines().toList();
        assertTrue(heads.get(0).contains("staged out-of-place"), heads.get(0));
        assertTrue(heads.get(2).endsWith("   t/reg"), heads.get(2));
        assertEquals(row.length(), heads.get(1).length());
        assertTrue(CollTable.render(r).contains("(jmscclpp cuda backend, algorithm algo, registered and staged buffers)"));
    }

    @Test
    void theOverheadLinesSayWhetherTheTargetIsMet() {
        // block 7.5, pipelined 7.5, stream 5, stream synchronized 7: the call overhead is 7.5 - 5 = 2.5
        String cuda = CollTable.overhead(new CallOverhead("ll16", 1024, 256, 1000, 7.5, 7.5, 5.0, 7.0));
        assertTrue(cuda.startsWith("# Call overhead at 1 KiB (256 elements, ll16, 1000 calls per form, the median of 5"
                + " rounds): Mono calls issued back to back 7.5 us/call, stream form enqueued back to back 5 us/call:"
                + " Mono - stream = 2.5 us (target <= 2 us: missed)\n"), cuda);
        assertTrue(cuda.contains("waiting for each call: Mono .block() 7.5 us/call, stream form synchronized after each"
                + " call 7 us/call (Mono - stream = 0.5 us)"), cuda);
        assertTrue(CollTable.overhead(new CallOverhead("ll16", 1024, 256, 10, 30, 6.5, 5.0, 7.0)).contains("met"));
        String host = CollTable.overhead(new CallOverhead("rsag", 1024, 256, 10, 30, 20, -1, -1));
        assertTrue(host.contains("issued back to back 20 us/call; .block() one after another 30 us/call (no stream form"
                + " here)"), host);
    }

    @Test
    void theWholeTableHasHeaderColumnsRowsAndTheAverage() {
        CollReport r = report(CollectiveKind.ALL_GATHER, 2, List.of(
                m("jmscclpp", CollectiveKind.ALL_GATHER, 1024, 128, false, 2.0, 0),
                m("jmscclpp", CollectiveKind.ALL_GATHER, 1024, 128, true, 2.0, 0),
                m("jmscclpp", CollectiveKind.ALL_GATHER, 2048, 256, false, 1.0, 3),
                m("jmscclpp", CollectiveKind.ALL_GATHER, 2048, 256, true, 1.0, 0)));
        List<String> lines = CollTable.render(r).lines().toList();
        assertEquals("# jmscclpp bench coll -b 1K -e 1M", lines.getFirst());
        assertTrue(lines.contains("# Collective test starting: all_gather_perf (jmscclpp cuda backend, algorithm"
                + " algo)"), lines.toString());
        assertTrue(lines.contains("#  Rank  0 Group  0 Pid    100 on         h1 device  0 GPU"), lines.toString());
        int head = lines.indexOf(lines.stream().filter(l -> l.startsWith("#       size")).findFirst().orElseThrow());
        assertEquals("#       size         count      type   redop    root     time   algbw   busbw  #wrong"
                + "     time   algbw   busbw  #wrong", lines.get(head));
        assertEquals("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
                + "     (us)  (GB/s)  (GB/s)        ", lines.get(head + 1));
        assertTrue(lines.get(head - 1).contains("out-of-place") && lines.get(head - 1).contains("in-place"));
        // each row's width is the header's
        assertEquals(lines.get(head).length(), lines.get(head + 2).length());
        assertTrue(lines.get(head + 2).startsWith("        1024           128     float    none"), lines.get(head + 2));
        assertTrue(lines.get(head + 3).startsWith("        2048           256"), lines.get(head + 3));
        // busbw: 1024/2000 x 1/2 = 0.256, 2048/1000 x 1/2 = 1.024; mean of four rows 0.64
        assertTrue(lines.contains("# Out of bounds values : 3 FAILED"), lines.toString());
        assertTrue(lines.contains("# Avg bus bandwidth    : 0.64 "), lines.toString());
        assertEquals("# Collective test concluded: all_gather_perf", lines.getLast());
        CollReport sendRecv = report(CollectiveKind.SEND, 2, List.of(
                m("jmscclpp", CollectiveKind.SEND, 1024, 256, false, 2.0, 0)));
        assertTrue(CollTable.render(sendRecv).contains("sendrecv_perf"));
        // a run that ended early says so, and gives no verdict beyond its rows
        List<String> failed = CollTable.footer(sendRecv, "rank 1 exited with 1").lines().toList();
        assertTrue(failed.contains("# Out of bounds values : 0 in the 1 rows measured before the run failed"),
                failed.toString());
        assertEquals("# Collective test FAILED: sendrecv_perf: rank 1 exited with 1", failed.getLast());
        assertTrue(failed.stream().noneMatch(l -> l.contains("OK") || l.contains("concluded")), failed.toString());
    }

    @Test
    void theJsonReportReadsBackTheSame() {
        CollReport r = report(CollectiveKind.REDUCE, ReduceOp.MIN, 1, 4, List.of(
                m("jmscclpp", CollectiveKind.REDUCE, 1024, 256, false, 3.25, 0),
                m("nccl", CollectiveKind.REDUCE, 1024, 256, true, 7.5, -1)),
                new CallOverhead("ll16", 1024, 256, 1000, 7.5, 4.25, 5.0, -1));
        CollReport back = CollJson.read(CollJson.write(r));
        assertEquals(r, back);
        CollReport plain = report(CollectiveKind.ALL_TO_ALL, 2, List.of(
                m("jmscclpp", CollectiveKind.ALL_TO_ALL, 1024, 128, false, 3.25, 0)));
        assertEquals(plain, CollJson.read(CollJson.write(plain)));
        assertThrows(IllegalArgumentException.class, () -> CollJson.read("{\"collective\": \"all_reduce\"}"));
        assertThrows(IllegalArgumentException.class, () -> CollJson.read("{"));
        // values no sweep writes: refused naming them, not drawn (XChart threw on a size of -5) or divided by
        String json = CollJson.write(plain);
        for (String[] bad : new String[][] {{"\"size\" : 1024", "\"size\" : -5", "\"size\" must be at least 1, got -5"},
                {"\"ranks\" : 2", "\"ranks\" : 0", "\"ranks\" must be at least 1, got 0"},
                {"\"time_us\" : 3.25", "\"time_us\" : -1", "\"time_us\" must be at least 0, got -1"},
                {"\"count\" : 128", "\"count\" : -128", "\"count\" must be at least 0, got -128"}}) {
            assertTrue(json.contains(bad[0]), bad[0] + " in " + json);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> CollJson.read(json.replace(bad[0], bad[1])));
            assertEquals(bad[2], e.getMessage());
        }
    }

    @Test
    void theReportsOfEarlierVersionsStillRead() {
        // docs/data holds reports written before reductions, roots and the overhead were
        String old = """
                {"command": "jmscclpp bench coll --op sendrecv", "host": "h", "backend": "cuda",
                 "collective": "sendrecv", "type": "float", "ranks": 2, "algorithm": "memory", "min_bytes": 1024,
                 "max_bytes": 4096, "factor": 4, "iters": 20, "warmup": 5, "check": 1, "graph": 10, "devices": [],
                 "versions": {}, "rows": [{"impl": "jmscclpp", "algo": "memory", "size": 1024, "count": 256,
                 "in_place": false, "time_us": 3.5, "algbw": 0.3, "busbw": 0.3, "wrong": 0}]}
                """;
        CollReport r = CollJson.read(old);
        assertEquals(CollectiveKind.SEND, r.kind());
        assertEquals(null, r.op());
        assertEquals(-1, r.root());
        assertEquals(null, r.overhead());
        CollReport allReduce = CollJson.read(old.replace("\"sendrecv\"", "\"all_reduce\""));
        assertEquals(ReduceOp.SUM, allReduce.op());
    }

    @Test
    void optionsUseNcclTestsLettersAndRefuseNonsense() {
        CollOptions o = CollOptions.parse(List.of("-b", "1K", "-e", "8K", "-f", "4", "-n", "3", "-w", "0", "-c", "2",
                "--op", "reduce_scatter_perf", "-d", "bfloat16", "--redop", "avg", "--ranks", "4"));
        assertEquals(CollectiveKind.REDUCE_SCATTER, o.kind());
        assertEquals(DataType.BFLOAT16, o.type());
        assertEquals(ReduceOp.AVG, o.op());
        assertTrue(o.staged(), "staged on by default on the host backend");
        assertEquals(1000, o.overhead());
        assertEquals(List.of(1024L, 4096L), o.sizes());
        assertEquals(List.of(1024L, 2048L, 4096L, 8192L), CollOptions.parse(List.of("-b", "1K", "-e", "8K")).sizes());
        assertEquals(o, CollOptions.parse(o.rankArgs()));
        CollOptions cuda = CollOptions.parse(List.of("--backend", "cuda", "--op", "broadcast", "--root", "1",
                "--algo", "memory", "-d", "f8e4m3", "--graph", "10", "--baseline", "nccl", "--overhead", "0"));
        assertEquals(CollectiveKind.BROADCAST, cuda.kind());
        assertEquals(1, cuda.root());
        assertEquals(DataType.FP8_E4M3, cuda.type());
        assertTrue(!cuda.staged() && cuda.nccl() && cuda.graph() == 10 && cuda.overhead() == 0, cuda.toString());
        assertEquals(cuda, CollOptions.parse(cuda.rankArgs()));
        assertEquals(CollectiveKind.SEND, CollOptions.parse(List.of("-o", "sendrecv")).kind());
        assertEquals(CollectiveKind.ALL_TO_ALL, CollOptions.parse(List.of("--op", "alltoall")).kind());
        assertEquals(null, CollOptions.parse(List.of("--op", "allgather", "--redop", "max")).reduction());
        for (List<String> bad : List.of(List.of("-b"), List.of("-b", "2K", "-e", "1K"), List.of("--op", "scan"),
                List.of("--op", "send"), List.of("-d", "quad"), List.of("--redop", "xor"), List.of("-f", "1"),
                List.of("--backend", "gpu"), List.of("--baseline", "mpi"), List.of("--baseline", "nccl"),
                List.of("--graph", "2"), List.of("-n", "0"), List.of("--staged", "yes"), List.of("--overhead", "-1"),
                List.of("--op", "reduce", "--root", "2"), List.of("--what", "1"))) {
            assertThrows(IllegalArgumentException.class, () -> CollOptions.parse(bad), bad::toString);
        }
    }

    @Test
    void ncclTestsFlagsHaveNcclTestsMeanings() {
        CollOptions o = CollOptions.parse(List.of("allreduce", "--ranks=2", "-o", "max", "-d", "int32", "-b", "1K",
                "-e", "1M", "-f", "4", "-n", "7", "-w", "2", "-c", "0", "-g", "1", "-t", "1"));
        assertEquals(CollectiveKind.ALL_REDUCE, o.kind());
        assertEquals(2, o.ranks());
        assertEquals(ReduceOp.MAX, o.op());
        assertEquals(DataType.INT32, o.type());
        assertEquals(List.of(1024L, 4096L, 16384L, 65536L, 262144L, 1048576L), o.sizes());
        assertTrue(o.iters() == 7 && o.warmup() == 2 && o.check() == 0, o.toString());
        assertEquals(o, CollOptions.parse(o.rankArgs()), "the ranks read what the command read");
        CollOptions longForms = CollOptions.parse(List.of("--coll=reducescatter", "--op=prod", "--datatype=bfloat16",
                "--minbytes=2K", "--maxbytes=8K", "--stepfactor=2", "--iters=3", "--warmup_iters=0", "--check=1"));
        assertEquals(CollectiveKind.REDUCE_SCATTER, longForms.kind());
        assertEquals(ReduceOp.PROD, longForms.op());
        assertEquals(DataType.BFLOAT16, longForms.type());
        assertEquals(List.of(2048L, 4096L, 8192L), longForms.sizes());
        assertEquals(CollectiveKind.ALL_GATHER, CollOptions.parse(List.of("all_gather_perf")).kind());
        assertEquals(CollectiveKind.ALL_REDUCE, CollOptions.parse(List.of()).kind(), "allreduce by default");
        for (List<String> bad : List.of(List.of("-g", "2"), List.of("-t", "2"), List.of("--ngpus=8"),
                List.of("allreduce", "--coll", "allgather"), List.of("-o", "bogus"), List.of("scan"))) {
            assertThrows(IllegalArgumentException.class, () -> CollOptions.parse(bad), bad::toString);
        }
    }

    @Test
    void theJsonIsJacksonJrsAndReadsBackWithIt() throws Exception {
        CollReport r = report(CollectiveKind.ALL_REDUCE, ReduceOp.MAX, -1, 2, List.of(
                m("jmscclpp", CollectiveKind.ALL_REDUCE, 1024, 256, false, 3.123456, 0)),
                null);
        Map<String, Object> json = JSON.std.mapFrom(CollJson.write(r));
        assertEquals("all_reduce", json.get("collective"));
        assertEquals("max", json.get("op"));
        List<?> rows = (List<?>) json.get("rows");
        assertEquals(1, rows.size());
        assertEquals(3.1235, ((Number) ((Map<?, ?>) rows.getFirst()).get("time_us")).doubleValue());
        assertEquals(null, json.get("overhead"));
    }

    @Test
    void everyCommittedSweepInDocsDataStillReads() throws Exception {
        Path data = Path.of("").toAbsolutePath().getParent().resolve("docs/data");
        Assumptions.assumeTrue(Files.isDirectory(data), () -> "no " + data + " (not a checkout)");
        List<Path> sweeps;
        try (Stream<Path> files = Files.walk(data)) {
            sweeps = files.filter(p -> p.toString().endsWith(".json")).sorted().toList();
        }
        assertTrue(sweeps.size() >= 10, sweeps.toString());
        for (Path p : sweeps) {
            CollReport report = CollJson.read(Files.readString(p));
            assertTrue(!report.rows().isEmpty(), p.toString());
            CollReport again = CollJson.read(CollJson.write(report));
            assertEquals(report.rows().size(), again.rows().size(), p.toString());
            assertEquals(CollTable.render(report), CollTable.render(again), p + " prints the same after a round trip");
        }
    }
}
