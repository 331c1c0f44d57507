package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CollTableTest {

    private static CollectiveRunner.Measurement m(String impl, CollectiveKind kind, long size, long count,
                                                  boolean inPlace, double us, long wrong) {
        return new CollectiveRunner.Measurement(impl, "algo", kind, size, count, DataType.FLOAT32, inPlace, us, wrong);
    }

    private static CollReport report(CollectiveKind kind, int ranks, List<CollectiveRunner.Measurement> rows) {
        return new CollReport("jmscclpp bench coll -b 1K -e 1M", "h1", "cuda", kind, DataType.FLOAT32, ranks, "algo",
                1024, 1 << 20, 2, 20, 5, 1, 0, List.of("Rank  0 Group  0 Pid    100 on         h1 device  0 GPU"),
                Map.of("jmscclpp", "0.1"), rows);
    }

    @Test
    void busFactorsAreNcclTests() {
        assertEquals(1.0, CollectiveKind.ALLREDUCE.busFactor(2));
        assertEquals(1.5, CollectiveKind.ALLREDUCE.busFactor(4));
        assertEquals(0.5, CollectiveKind.ALLGATHER.busFactor(2));
        assertEquals(0.75, CollectiveKind.ALLTOALL.busFactor(4));
        assertEquals(1.0, CollectiveKind.SENDRECV.busFactor(8));
        // 1 MB in 10 µs is 100 GB/s; allreduce on 4 ranks: busbw 150
        CollectiveRunner.Measurement x = m("jmscclpp", CollectiveKind.ALLREDUCE, 1_000_000, 250_000, false, 10, 0);
        assertEquals(100.0, CollReport.algbw(x), 1e-9);
        assertEquals(150.0, CollReport.busbw(x, 4), 1e-9);
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
        CollectiveRunner.Measurement out = m("jmscclpp", CollectiveKind.ALLREDUCE, 1024, 256, false, 4.0, 0);
        CollectiveRunner.Measurement in = m("jmscclpp", CollectiveKind.ALLREDUCE, 1024, 256, true, 5.12, 0);
        String row = CollTable.row(new CollReport.Line(1024, 256, out, in, null), 2, CollectiveKind.ALLREDUCE,
                DataType.FLOAT32);
        // 1024 B in 4 µs = 0.256 GB/s, busbw x1 on 2 ranks; in 5.12 µs = 0.2 GB/s
        assertEquals("        1024           256     float     sum      -1"
                + "     4.00    0.26    0.26       0     5.12    0.20    0.20       0", row);
        CollectiveRunner.Measurement a2a = m("jmscclpp", CollectiveKind.ALLTOALL, 4096, 512, false, 12345.6, -1);
        assertEquals("        4096           512     float    none      -1"
                + "  12345.6    0.00    0.00     N/A      N/A     N/A     N/A     N/A",
                CollTable.row(new CollReport.Line(4096, 512, a2a, null, null), 2, CollectiveKind.ALLTOALL,
                        DataType.FLOAT32));
        CollectiveRunner.Measurement nccl = m("nccl", CollectiveKind.ALLREDUCE, 1024, 256, false, 8.0, 0);
        String withNccl = CollTable.row(new CollReport.Line(1024, 256, out, in, nccl), 2, CollectiveKind.ALLREDUCE,
                DataType.FLOAT32);
        assertTrue(withNccl.endsWith("     8.00    0.13    0.50"), "NCCL's time, busbw, ours/NCCL: " + withNccl);
        List<String> heads = CollTable.heads(true).lines().toList();
        assertTrue(heads.get(1).endsWith("     time   busbw   ratio"), heads.get(1));
        assertEquals(withNccl.length(), heads.get(1).length(), "the NCCL columns line up with their heads");
    }

    @Test
    void theWholeTableHasHeaderColumnsRowsAndTheAverage() {
        CollReport r = report(CollectiveKind.ALLGATHER, 2, List.of(
                m("jmscclpp", CollectiveKind.ALLGATHER, 1024, 128, false, 2.0, 0),
                m("jmscclpp", CollectiveKind.ALLGATHER, 1024, 128, true, 2.0, 0),
                m("jmscclpp", CollectiveKind.ALLGATHER, 2048, 256, false, 1.0, 3),
                m("jmscclpp", CollectiveKind.ALLGATHER, 2048, 256, true, 1.0, 0)));
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
    }

    @Test
    void theJsonReportReadsBackTheSame() {
        CollReport r = report(CollectiveKind.ALLREDUCE, 4, List.of(
                m("jmscclpp", CollectiveKind.ALLREDUCE, 1024, 256, false, 3.25, 0),
                m("nccl", CollectiveKind.ALLREDUCE, 1024, 256, true, 7.5, -1)));
        CollReport back = CollJson.read(CollJson.write(r));
        assertEquals(r, back);
        assertThrows(IllegalArgumentException.class, () -> CollJson.read("{\"collective\": \"all_reduce\"}"));
        assertThrows(IllegalArgumentException.class, () -> CollJson.read("{"));
        assertEquals("\"a\\\"b\\\\c\\n\"", CollJson.quote("a\"b\\c\n"));
    }

    @Test
    void optionsUseNcclTestsLettersAndRefuseNonsense() {
        CollOptions o = CollOptions.parse(List.of("-b", "1K", "-e", "8K", "-f", "4", "-n", "3", "-w", "0", "-c", "2",
                "--op", "all_gather_perf", "-d", "bfloat16", "--ranks", "4"));
        assertEquals(CollectiveKind.ALLGATHER, o.kind());
        assertEquals(DataType.BFLOAT16, o.type());
        assertEquals(List.of(1024L, 4096L), o.sizes());
        assertEquals(List.of(1024L, 2048L, 4096L, 8192L), CollOptions.parse(List.of("-b", "1K", "-e", "8K")).sizes());
        assertEquals(new CollOptions(4, CollectiveKind.ALLGATHER, DataType.BFLOAT16, "host", "x", 1024, 8192, 4, 3, 0,
                2, 0, false, null, null), CollOptions.parse(o.rankArgs("x")));
        for (List<String> bad : List.of(List.of("-b"), List.of("-b", "2K", "-e", "1K"), List.of("--op", "reduce"),
                List.of("-d", "double"), List.of("-f", "1"), List.of("--backend", "gpu"), List.of("--baseline", "mpi"),
                List.of("--baseline", "nccl"), List.of("--graph", "2"), List.of("-n", "0"), List.of("--what", "1"))) {
            assertThrows(IllegalArgumentException.class, () -> CollOptions.parse(bad), bad::toString);
        }
    }
}
