package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.samples.CollectiveRun;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.TestRankMain;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** {@code jmscclpp bench coll} on the host backend with real rank processes, the library's collectives and a corrupting wrapper. */
class CollBenchTest {

    /** A data row: size, count, type, redop, root, then four columns per placement, three more for staged buffers. */
    private static final Pattern ROW = Pattern.compile(" *\\d+ +\\d+ +\\S+ +\\S+ +-?\\d+( +(\\S+)){8}( +(\\S+)){0,3}");

    @TempDir
    Path dir;

    @BeforeAll
    static void registerTestWrappers() {
        TestRankMain.registerWrappers();
    }

    record Run(int code, String out, String err) {
        List<String> rows() {
            return out.lines().filter(l -> ROW.matcher(l).matches()).toList();
        }
    }

    private static Run bench(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = CollBench.run(List.of(args), o, e, TestRankMain.class.getName(), TestRankMain.JVM_ARGS,
                    CollBench::hostLacks);
        }
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** The kinds of bench coll: every kind of the library's API, SEND standing for sendrecv. */
    static List<CollectiveKind> kinds() {
        return List.of(CollectiveKind.ALL_REDUCE, CollectiveKind.ALL_GATHER, CollectiveKind.REDUCE_SCATTER,
                CollectiveKind.BROADCAST, CollectiveKind.REDUCE, CollectiveKind.ALL_TO_ALL, CollectiveKind.SEND);
    }

    @ParameterizedTest
    @MethodSource("kinds")
    @Timeout(120)
    void everyKindPrintsOneCheckedRowPerSizeWithTheStagingCost(CollectiveKind kind) {
        Run r = bench("--op", CollectiveRun.sampleName(kind), "-b", "256", "-e", "1K", "-n", "2", "-w", "1", "-c", "1",
                "--overhead", "20");
        assertEquals(ExitCodes.OK, r.code(), r.out() + r.err());
        List<String> rows = r.rows();
        assertEquals(3, rows.size(), r.out());
        for (String row : rows) {
            String[] c = row.strip().split(" +");
            assertEquals(kind.reduces() ? "sum" : "none", c[3], row);
            assertEquals(kind.rooted() ? "0" : "-1", c[4], row);
            assertEquals("0", c[8], "out-of-place #wrong: " + row);
            assertEquals(CollectiveRun.hasInPlace(kind) ? "0" : "N/A", c[12], "in-place #wrong: " + row);
            long size = Long.parseLong(c[0]);
            assertEquals(size, new CollectiveRun(kind, DataType.FLOAT32, kind.reduces() ? ReduceOp.SUM : null,
                    kind.rooted() ? 0 : -1, 2, Long.parseLong(c[1]), false).size(), row);
            double time = Double.parseDouble(c[5]);
            double busbw = Double.parseDouble(c[7]);
            assertTrue(time > 0, row);
            // busbw = S / time x factor, to the printed precision
            assertEquals(size / (time * 1e3) * kind.busFactor(2), busbw, 0.006 + busbw * 0.01, row);
            // the staged columns: time, busbw, staged time over registered
            assertEquals(16, c.length, row);
            double staged = Double.parseDouble(c[13]);
            assertTrue(staged > 0, row);
            assertEquals(staged / time, Double.parseDouble(c[15]), 0.006 + staged / time * 0.02, row);
        }
        assertTrue(r.out().contains("# Collective test starting: " + CollectiveRun.label(kind) + "_perf (jmscclpp host"
                + " backend, algorithm auto, registered and staged buffers)"), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.matches("# Call overhead at 1 KiB \\(\\d+ elements, \\S+, 20 calls"
                + " per form, the median of 5 rounds\\): Mono calls issued back to back [0-9.e+]+ us/call;"
                + " \\.block\\(\\) one after another [0-9.e+]+ us/call .*")), r.out());
        assertTrue(r.out().contains("#  Rank  1 Group  0 Pid "), r.out());
        assertTrue(r.out().contains("# Out of bounds values : 0 OK"), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.matches("# Avg bus bandwidth    : [0-9.e+-]+ ")), r.out());
    }

    @Test
    @Timeout(120)
    void aCollectiveThatCorruptsDataShowsWrongElementsAndExitsOne() {
        Run r = bench("--op", "allreduce", "--algo", TestRankMain.CORRUPT, "-b", "64", "-e", "64", "-n", "1",
                "-w", "0", "-c", "2", "--staged", "off", "--overhead", "0");
        assertEquals(ExitCodes.FAILURE, r.code(), r.out() + r.err());
        List<String> rows = r.rows();
        assertEquals(1, rows.size(), r.out());
        String[] c = rows.getFirst().strip().split(" +");
        // one wrong element per rank and check: 2 ranks x 2 checks, in each placement
        assertEquals("4", c[8], rows.getFirst());
        assertEquals("4", c[12], rows.getFirst());
        assertTrue(r.out().contains("# Out of bounds values : 8 FAILED"), r.out());
    }

    /**
     * {@code --hosts 2}: four rank processes as two hosts of two (their own MSCCLPP_HOSTID per pair),
     * so the library runs the collectives of jobs that span hosts; every element checked.
     */
    @Test
    @Timeout(180)
    void hostsMakePretendHostsOfConsecutiveRanks() {
        Run r = bench("--op", "allreduce", "--ranks", "4", "--hosts", "2", "-b", "1K", "-e", "4K", "-f", "4", "-n", "2",
                "-w", "1", "-c", "1", "--staged", "off", "--overhead", "0");
        assertEquals(ExitCodes.OK, r.code(), r.out() + r.err());
        assertTrue(r.err().contains("4 processes as 2 hosts"), r.err());
        List<String> rows = r.rows();
        assertEquals(2, rows.size(), r.out());
        for (String row : rows) {
            String[] c = row.strip().split(" +");
            assertEquals("0", c[8], "out-of-place #wrong: " + row);
            assertEquals("0", c[12], "in-place #wrong: " + row);
        }
        CollOptions o = CollOptions.parse(List.of("--ranks", "4", "--hosts", "2"));
        assertEquals(o.hostEnv(1).get("MSCCLPP_HOSTID"), o.hostEnv(0).get("MSCCLPP_HOSTID"));
        assertNotEquals(o.hostEnv(1).get("MSCCLPP_HOSTID"), o.hostEnv(2).get("MSCCLPP_HOSTID"));
        assertEquals(o.hostEnv(2).get("MSCCLPP_HOSTID"), o.hostEnv(2).get("NCCL_HOSTID"));
        assertTrue(CollOptions.parse(List.of("--ranks", "4")).hostEnv(3).isEmpty());
    }

    @Test
    void argumentErrorsExitTwo() {
        for (List<String> bad : List.of(List.of("-b", "lots"), List.of("--op", "scan"), List.of("--algo", "nope"),
                List.of("--algo", "port"), List.of("--baseline", "nccl"), List.of("-n"), List.of("--redop", "xor"),
                List.of("--op", "broadcast", "--root", "2"), List.of("-d", "quad"), List.of("--ranks", "4", "--hosts", "3"),
                List.of("--hosts", "0"),
                // a sweep none of whose sizes holds an element started the ranks and exited 1 with no row
                List.of("-b", "1", "-e", "1"), List.of("allgather", "-b", "8", "-e", "8"),
                List.of("alltoall", "--ranks", "3", "-b", "8", "-e", "8"),
                // an algorithm of jobs that span hosts on ranks of one host: the ranks refused it and the command exited 1
                List.of("--algo", "hier"), List.of("allgather", "--algo", "flat"),
                // a folder as the output is refused before the sweep, not after it
                List.of("--json", dir.toString()), List.of("--plot", dir.toString()))) {
            Run r = bench(bad.toArray(String[]::new));
            assertEquals(ExitCodes.USAGE, r.code(), bad + ": " + r.err());
            assertTrue(r.err().startsWith("jmscclpp bench coll: "), r.err());
        }
        assertEquals(3, CollOptions.parse(List.of("allgather", "-b", "8", "-e", "32")).sizes().size());
        Run noGpu = new Run(CollBench.run(List.of("--backend", "cuda"), System.out, System.err,
                TestRankMain.class.getName(), List.of(), o -> Optional.of("no GPU")), "", "");
        assertEquals(ExitCodes.USAGE, noGpu.code());
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(ExitCodes.USAGE, CollBench.plot(List.of("--json", "x.json"), System.out,
                new PrintStream(err, true, StandardCharsets.UTF_8)));
    }

    @Test
    @Timeout(120)
    void jsonAndPlotAreWrittenAndBenchPlotDrawsTheJsonAgain() throws Exception {
        Assumptions.assumeTrue(CollBench.plotUnavailableReason().isEmpty(), () -> "cannot draw here: "
                + CollBench.plotUnavailableReason().orElseThrow());
        Path json = dir.resolve("out/r.json");
        Path png = dir.resolve("out/r.png");
        Run r = bench("--op", "allgather", "-b", "128", "-e", "512", "-n", "1", "-w", "0", "--staged", "off",
                "--overhead", "5", "--json", json.toString(), "--plot", png.toString());
        assertEquals(ExitCodes.OK, r.code(), r.out() + r.err());
        CollReport report = CollJson.read(Files.readString(json));
        assertEquals(CollectiveKind.ALL_GATHER, report.kind());
        assertEquals(6, report.rows().size(), "3 sizes x 2 placements");
        assertTrue(report.overhead() != null && report.overhead().calls() == 5, String.valueOf(report.overhead()));
        assertPng(png);
        Path again = dir.resolve("again.png");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = CollBench.plot(List.of("--json", json.toString(), "--plot", again.toString()),
                new PrintStream(out, true, StandardCharsets.UTF_8), System.err);
        assertEquals(ExitCodes.OK, code);
        assertEquals(r.rows(), new Run(0, out.toString(StandardCharsets.UTF_8), "").rows(), "the same table");
        assertPng(again);
    }

    @Test
    void benchPlotWritesTheFileItIsGivenAndNothingBesideIt() throws Exception {
        Assumptions.assumeTrue(CollBench.plotUnavailableReason().isEmpty(), () -> "cannot draw here: "
                + CollBench.plotUnavailableReason().orElseThrow());
        List<CollectiveRunner.Measurement> rows = List.of(
                new CollectiveRunner.Measurement(CollReport.JMSCCLPP, "rsag", CollectiveKind.ALL_REDUCE, 1024, 256,
                        DataType.FLOAT32, false, 12.5, 0),
                new CollectiveRunner.Measurement(CollReport.JMSCCLPP, "rsag", CollectiveKind.ALL_REDUCE, 4096, 1024,
                        DataType.FLOAT32, false, 20.0, 0));
        CollReport report = new CollReport("jmscclpp bench coll -b 1K -e 4K", "h1", "host", CollectiveKind.ALL_REDUCE,
                DataType.FLOAT32, ReduceOp.SUM, -1, 2, "rsag", 1024, 4096, 4, 20, 5, 1, 0,
                List.of("Rank  0 Group  0 Pid    100 on         h1 device  0 host CPU"), java.util.Map.of(), rows, null);
        Path json = dir.resolve("r.json");
        Files.writeString(json, CollJson.write(report));
        // a name without .png: the file of that name, not r.png beside it
        Path plain = dir.resolve("plain");
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertEquals(ExitCodes.OK, CollBench.plot(List.of("--json", json.toString(), "--plot", plain.toString()),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8)), err.toString(StandardCharsets.UTF_8));
        assertPng(plain);
        assertTrue(Files.notExists(dir.resolve("plain.png")), "nothing written beside it");
        // a folder: a failure naming it, not DIR.png beside the folder
        Path folder = Files.createDirectory(dir.resolve("pictures"));
        err.reset();
        assertEquals(ExitCodes.FAILURE, CollBench.plot(List.of("--json", json.toString(), "--plot", folder.toString()),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8)));
        String said = err.toString(StandardCharsets.UTF_8);
        assertTrue(said.contains("cannot write the plot " + folder) && !said.contains("wrote"), said);
        assertTrue(Files.notExists(dir.resolve("pictures.png")), "nothing written beside the folder");
    }

    private static void assertPng(Path png) throws Exception {
        byte[] bytes = Files.readAllBytes(png);
        assertTrue(bytes.length > 8 && bytes[1] == 'P' && bytes[2] == 'N' && bytes[3] == 'G', "a PNG signature");
        BufferedImage image = ImageIO.read(png.toFile());
        assertTrue(image != null && image.getWidth() >= 1000 && image.getHeight() >= 400, "decodes: " + image);
    }
}
