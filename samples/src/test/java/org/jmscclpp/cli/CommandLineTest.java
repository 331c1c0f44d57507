package org.jmscclpp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.jr.ob.JSON;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.jmscclpp.bench.BenchCommands;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Version;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The picocli command line: help and version everywhere, options as users type them, usage errors exit 2. */
class CommandLineTest {

    /** A data row of bench coll: size, count, type, redop, root, then the placements' columns. */
    private static final Pattern ROW = Pattern.compile(" *\\d+ +\\d+ +\\S+ +\\S+ +-?\\d+( +\\S+){8,}");

    /** Every way to ask for a usage: each command, benchmark and sample (internal ones too), with -h and --help. */
    static List<List<String>> helpRequests() {
        List<List<String>> asks = new ArrayList<>(List.of(List.of("--help"), List.of("-h"), List.of("help"),
                List.of("run", "--help"), List.of("run", "-h"), List.of("bench", "--help"), List.of("bench", "-h"),
                List.of("help", "bench"), List.of("help", "bench", "coll"), List.of("help", "allgather"),
                List.of("run", "-n", "2", "allgather", "--help"), List.of("help", "--help"), List.of("help", "-h"),
                List.of("help", "help")));
        for (BenchCommands.Bench b : BenchCommands.all()) {
            asks.add(List.of("bench", b.name(), "--help"));
            asks.add(List.of("bench", b.name(), "-h"));
        }
        for (Samples.Entry e : Samples.all()) {
            asks.add(List.of(e.name(), "--help"));
            asks.add(List.of(e.name(), "-h"));
        }
        return asks;
    }

    @Test
    void helpOnEveryCommandBenchmarkAndSampleExitsZeroWithTheUsageOnStdout() {
        for (List<String> ask : helpRequests()) {
            MainRun r = MainRun.of(ask.toArray(String[]::new));
            assertEquals(ExitCodes.OK, r.code(), ask + ": " + r.err());
            assertTrue(r.out().startsWith("Usage: jmscclpp"), ask + ": " + r.out());
            assertEquals("", r.err(), ask.toString());
        }
        MainRun coll = MainRun.of("bench", "coll", "--help");
        for (String flag : List.of("-b, --minbytes", "-e, --maxbytes", "-f, --stepfactor", "-n, --iters",
                "-w, --warmup_iters", "-o, --op", "-d, --datatype", "-c, --check", "-g, --ngpus", "-t, --nthreads")) {
            assertTrue(coll.out().contains(flag), flag + " in " + coll.out());
        }
        MainRun sample = MainRun.of("allreduce", "--help");
        assertTrue(sample.out().contains("--bytes=S") && sample.out().contains("-o, --op, --redop=OP"), sample.out());
    }

    @Test
    void versionPrintsTheProjectVersion() {
        String version = Version.get();
        assertTrue(version.matches("\\d+\\.\\d+\\.\\d+(-SNAPSHOT)?"), version);
        for (List<String> ask : List.of(List.of("--version"), List.of("-V"), List.of("bench", "--version"),
                List.of("bench", "coll", "-V"), List.of("run", "--version"), List.of("allgather", "-V"),
                // as with --help, run answers a sample's --version itself, once, without starting ranks
                List.of("run", "-n", "2", "allgather", "-V"), List.of("run", "-n", "2", "allgather", "--version"))) {
            MainRun r = MainRun.of(ask.toArray(String[]::new));
            assertEquals(ExitCodes.OK, r.code(), ask + ": " + r.err());
            assertTrue(r.out().startsWith("jmscclpp " + version + "\n"), ask + ": " + r.out());
            assertEquals(1, r.out().split("jmscclpp " + version, -1).length - 1, ask + ": " + r.out());
        }
    }

    @Test
    void badOptionsAreUsageErrorsThatSayWhatIsWrongOnStderr() {
        record Bad(List<String> args, String says) {
        }
        for (Bad bad : List.of(new Bad(List.of("--bogus"), "unknown option '--bogus'"),
                new Bad(List.of("bench", "coll", "--bogus"), "Unknown option: '--bogus'"),
                new Bad(List.of("bench", "coll", "-n"), "Missing required parameter for option '--iters'"),
                new Bad(List.of("bench", "coll", "-n", "lots"), "Invalid value for option '--iters'"),
                new Bad(List.of("bench", "coll", "allreduce", "allgather"),
                        "Unmatched argument at index 1: 'allgather'"),
                new Bad(List.of("bench", "coll", "allreduce", "--coll", "allgather"), "two collectives"),
                new Bad(List.of("bench", "coll", "-g", "2"), "each rank process drives one GPU, so -g (GPUs per"
                        + " thread) takes only 1; for 2 GPUs run --ranks 2"),
                new Bad(List.of("bench", "coll", "-t", "4"), "-t (threads per process) takes only 1"),
                new Bad(List.of("bench", "coll", "-o", "xor"), "-o/--op is the reduction"),
                new Bad(List.of("bench", "write", "--iters=0"), "--iters needs an integer of at least 1, got 0"),
                new Bad(List.of("run", "-n", "2"), "Missing required parameter: 'SAMPLE'"),
                new Bad(List.of("run", "allgather"), "Missing required option: '--nranks=N'"),
                new Bad(List.of("run", "-n", "2", "allgather", "--bytes", "lots"), "allgather: Invalid value for"
                        + " option '--bytes'"),
                new Bad(List.of("run", "-n", "2", "shuffle", "--records", "0"), "--records needs an integer from 1"),
                new Bad(List.of("allgather", "--bogus"), "Unknown option: '--bogus'"),
                new Bad(List.of("help", "allgather", "extra"), "no command 'allgather extra'"),
                new Bad(List.of("help", "bench", "coll", "extra"), "no command 'bench coll extra'"))) {
            MainRun r = MainRun.of(bad.args().toArray(String[]::new));
            assertEquals(ExitCodes.USAGE, r.code(), bad.args() + ": " + r.err());
            assertTrue(r.err().contains(bad.says()), bad.args() + ": " + r.err());
            assertEquals("", r.out(), bad.args().toString());
        }
    }

    @Test
    void optionsTakeTheirValueAfterAnEqualsSignToo() {
        // --opt=value and --opt value are the same: here both reach a check that stops before anything starts
        for (String[] args : List.of(new String[] {"bench", "coll", "--ranks=2", "--root=5", "--coll=broadcast"},
                new String[] {"bench", "coll", "--ranks", "2", "--root", "5", "--coll", "broadcast"})) {
            MainRun r = MainRun.of(args);
            assertEquals(ExitCodes.USAGE, r.code(), r.err());
            assertTrue(r.err().contains("--root 5 is not a rank of 2"), r.err());
        }
        MainRun run = MainRun.of(Map.of(), "run", "--nranks=1", "--timeout=30", "exit-code", "0");
        assertEquals(ExitCodes.OK, run.code(), run.err());
    }

    /**
     * {@code bench coll} as a user runs it, in a child JVM: each size's row reaches stdout while the
     * sweep still runs (read line by line from the child), and the JSON reads back with jackson-jr.
     */
    @Test
    @Timeout(180)
    void benchCollPrintsEachRowAsItsSizeFinishesAndItsJsonReadsBack(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("sweep.json");
        Path stderr = dir.resolve("stderr.txt");
        List<String> command = ChildJvm.command(List.of("--enable-native-access=ALL-UNNAMED"), Main.class,
                List.of("bench", "coll", "allgather", "--ranks=2", "-b", "1K", "-e", "1M", "-f", "4", "-n", "2", "-w",
                        "0", "-d", "int32", "--overhead", "0", "--json", json.toString()));
        Process child = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
        List<String> out = new ArrayList<>();
        List<Boolean> aliveAtRow = new ArrayList<>();
        try (BufferedReader reader = child.inputReader(StandardCharsets.UTF_8)) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                out.add(line);
                if (ROW.matcher(line).matches()) {
                    aliveAtRow.add(child.isAlive());
                }
            }
        } finally {
            child.destroy();
        }
        assertEquals(ExitCodes.OK, child.waitFor(), () -> out + "\n" + read(stderr));
        assertEquals(6, aliveAtRow.size(), "1K, 4K, 16K, 64K, 256K and 1M: " + out);
        assertTrue(aliveAtRow.getFirst(), "the first row came while the sweep ran: " + out);
        assertTrue(out.getLast().startsWith("# Collective test concluded: all_gather_perf"), out.toString());
        Map<String, Object> report = JSON.std.mapFrom(Files.readString(json));
        assertEquals("all_gather", report.get("collective"));
        assertEquals("int32", report.get("type"));
        assertEquals(2, ((Number) report.get("ranks")).intValue());
        List<?> rows = (List<?>) report.get("rows");
        assertEquals(12, rows.stream().filter(r -> "jmscclpp".equals(((Map<?, ?>) r).get("impl"))).count(),
                "6 sizes, out and in place: " + rows);
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "(cannot read " + p + ": " + e + ")";
        }
    }
}
