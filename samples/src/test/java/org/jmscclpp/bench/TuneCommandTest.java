package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.TuningTable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TuneCommandTest {

    private static CollReport sweep(String algorithm, int ranks, double[] times, long... sizes) {
        return sweep("cuda", algorithm, ranks, times, 0, sizes);
    }

    private static CollReport sweep(String backend, String algorithm, int ranks, double[] times, long wrong,
                                    long... sizes) {
        List<CollectiveRunner.Measurement> rows = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            rows.add(new CollectiveRunner.Measurement(CollReport.JMSCCLPP, algorithm, CollectiveKind.ALL_REDUCE,
                    sizes[i], sizes[i] / 4, DataType.FLOAT32, false, times[i], wrong));
            // in-place, NCCL and wrong rows take no part
            rows.add(new CollectiveRunner.Measurement(CollReport.JMSCCLPP, algorithm, CollectiveKind.ALL_REDUCE,
                    sizes[i], sizes[i] / 4, DataType.FLOAT32, true, 0.001, 0));
            rows.add(new CollectiveRunner.Measurement(CollReport.NCCL, "nccl", CollectiveKind.ALL_REDUCE,
                    sizes[i], sizes[i] / 4, DataType.FLOAT32, false, 0.001, 0));
        }
        return new CollReport("jmscclpp bench coll --algo " + algorithm, "h1", backend, CollectiveKind.ALL_REDUCE,
                DataType.FLOAT32, ReduceOp.SUM, -1, ranks, algorithm, 1024, 1 << 20, 4, 20, 5, 1, 10,
                List.of("Rank  0 Group  0 Pid    100 on         h1 device  0 GPU"), Map.of("NCCL", "2.28.3"), rows, null);
    }

    @Test
    void eachSizeGetsTheFastestAlgorithmAndTheTableReadsBack() {
        CollReport ll = sweep("ll16", 2, new double[] {4, 5, 9, 30}, 1024, 4096, 65536, 262144);
        CollReport direct = sweep("rsag", 2, new double[] {6, 6, 7, 12}, 1024, 4096, 65536, 262144);
        String text = TuneCommand.table(List.of(ll, direct), List.of(Path.of("a"), Path.of("b")));
        TuningTable t = TuningTable.parse(text, "test");
        assertEquals(List.of(new TuningTable.Row(CollectiveKind.ALL_REDUCE, 2, 2, "*", 4096, "ll16"),
                new TuningTable.Row(CollectiveKind.ALL_REDUCE, 2, 2, "*", Long.MAX_VALUE, "rsag")), t.rows());
        assertTrue(text.contains("--algo ll16") && text.contains("--algo rsag"), text);
        assertEquals("ll16", t.choose(CollectiveKind.ALL_REDUCE, 2, "nvlink", 3000).orElseThrow());
        assertEquals("rsag", t.choose(CollectiveKind.ALL_REDUCE, 2, "nvlink", 5000).orElseThrow());
    }

    @Test
    void sweepsOfDifferentRankCountsAreRefused() {
        CollReport two = sweep("ll16", 2, new double[] {4}, 1024);
        CollReport four = sweep("rsag", 4, new double[] {6}, 1024);
        assertThrows(IllegalArgumentException.class, () -> TuneCommand.table(List.of(two, four),
                List.of(Path.of("a"), Path.of("b"))));
    }

    @Test
    void sweepsOfDifferentBackendsAreRefused() {
        CollReport cuda = sweep("ll16", 2, new double[] {4}, 1024);
        CollReport host = sweep("host", "rsag", 2, new double[] {6}, 0, 1024);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TuneCommand.table(
                List.of(cuda, host), List.of(Path.of("a"), Path.of("b"))));
        assertTrue(e.getMessage().contains("b ran the host backend, the others cuda"), e.getMessage());
    }

    @Test
    void aSweepWithoutOneCorrectOutOfPlaceTimeIsRefused() {
        CollReport ll = sweep("ll16", 2, new double[] {4, 5}, 1024, 4096);
        CollReport broken = sweep("cuda", "rsag", 2, new double[] {1, 1}, 3, 1024, 4096);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TuneCommand.table(
                List.of(ll, broken), List.of(Path.of("a"), Path.of("b"))));
        assertTrue(e.getMessage().startsWith("b has no correct out-of-place"), e.getMessage());
    }

    /** {@code --out} in a folder that does not exist yet makes it, as bench coll's --json and --plot do. */
    @Test
    void outInAMissingFolderIsWritten(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("sweep.json");
        Files.writeString(json, CollJson.write(sweep("rsag", 2, new double[] {6}, 1024)), StandardCharsets.UTF_8);
        Path out = dir.resolve("new/folder/tuning.txt");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (PrintStream o = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            assertEquals(0, TuneCommand.run(List.of("--json", json.toString(), "--out", out.toString()), o, e),
                    err::toString);
            assertTrue(Files.readString(out).contains("rsag"));
            // a folder is still a failure naming it
            assertEquals(1, TuneCommand.run(List.of("--json", json.toString(), "--out", dir.toString()), o, e));
        }
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("cannot write " + dir), err::toString);
    }
}
