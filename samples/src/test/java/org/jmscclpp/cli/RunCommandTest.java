package org.jmscclpp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RunCommandTest {

    /** Output of one {@code RunCommand.run} call. */
    private record Cli(int code, List<String> out, List<String> err, long millis) {
    }

    private static Cli cli(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        long t0 = System.nanoTime();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = RunCommand.run(List.of(args), o, e);
        }
        return new Cli(code, out.toString(StandardCharsets.UTF_8).lines().toList(),
                err.toString(StandardCharsets.UTF_8).lines().toList(), (System.nanoTime() - t0) / 1_000_000);
    }

    @Test
    void everyRankSucceedsAndEveryLineCarriesItsRank() {
        Cli r = cli("-n", "3", "exit-code", "0", "hello");
        assertEquals(0, r.code(), () -> "stderr: " + r.err());
        assertEquals(Set.of(0, 1, 2), ranksOf(r.out(), "rank (\\d) of 3: hello"), r.out().toString());
        assertEquals(Set.of(0, 1, 2), ranksOf(r.err(), "rank (\\d) of 3: hello \\(stderr\\)"), r.err().toString());
        assertEquals(3, r.out().size(), r.out().toString());
        assertEquals(3, r.err().size(), r.err().toString());
    }

    /** Checks every line is "[rank R] " + a text naming the same R; returns the ranks seen. */
    private static Set<Integer> ranksOf(List<String> lines, String text) {
        Pattern p = Pattern.compile("\\[rank (\\d)] " + text);
        Set<Integer> ranks = new TreeSet<>();
        for (String line : lines) {
            Matcher m = p.matcher(line);
            assertTrue(m.matches(), "unexpected line: " + line);
            assertEquals(m.group(1), m.group(2), "prefix and text disagree: " + line);
            ranks.add(Integer.parseInt(m.group(1)));
        }
        return ranks;
    }

    @Test
    void oneFailingRankStopsTheOthersQuickly() {
        Cli r = cli("-n", "3", "exit-code", "wait,3,wait");
        assertEquals(1, r.code());
        String report = String.join("\n", r.err());
        assertTrue(report.contains("rank 1 failed first, with exit code 3"), report);
        assertTrue(report.contains("rank 0 stopped"), report);
        assertTrue(report.contains("rank 2 stopped"), report);
        // the waiting ranks would live 60 s; stopping them takes a SIGTERM, at worst a 5 s grace
        assertTrue(r.millis() < 30_000, "took " + r.millis() + " ms");
    }

    @Test
    void timeoutStopsEveryRank() {
        Cli r = cli("-n", "2", "--timeout", "1.5", "wait-forever");
        assertEquals(1, r.code());
        String report = String.join("\n", r.err());
        assertTrue(report.contains("timeout: ranks 0, 1 still running after 1.5 s"), report);
        assertTrue(r.millis() < 30_000, "took " + r.millis() + " ms");
    }

    /**
     * {@code jmscclpp run} started by another launcher ({@code mpirun -np 1}, {@code torchrun}, a pod that sets
     * RANK and WORLD_SIZE): its ranks are its own, not the outer launcher's, whose variables they would inherit.
     */
    @Test
    void theRanksOfARunUnderAnotherLauncherAreTheRunsOwn(@TempDir Path dir) {
        Map<String, String> outer = Map.of("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1",
                "OMPI_COMM_WORLD_LOCAL_RANK", "0", "RANK", "0", "WORLD_SIZE", "1", "LOCAL_RANK", "0");
        try (ChildJvm run = ChildJvm.start(dir.resolve("run.log"), outer, List.of(), Main.class,
                "run", "-n", "2", "exit-code", "0", "hello")) {
            assertEquals(0, run.waitFor(Duration.ofSeconds(120)), run::output);
            assertEquals(Set.of("[rank 0] rank 0 of 2: hello", "[rank 1] rank 1 of 2: hello"),
                    Set.copyOf(run.output().lines().filter(l -> l.endsWith(": hello")).toList()), run::output);
        }
    }

    @Test
    void usageErrorsStartNothing() {
        assertEquals(2, cli("exit-code", "0").code());
        assertEquals(2, cli("-n", "0", "exit-code", "0").code());
        assertEquals(2, cli("-n", "two", "exit-code", "0").code());
        assertEquals(2, cli("-n", "2").code());
        assertEquals(2, cli("-n", "2", "--timeout", "-1", "exit-code", "0").code());
        Cli tiny = cli("-n", "2", "--timeout", "1e-12", "exit-code", "0");
        assertEquals(2, tiny.code(), "a timeout below a nanosecond is zero: " + tiny.err());
        assertTrue(String.join("\n", tiny.err()).contains("--timeout must be at least a nanosecond"),
                tiny.err().toString());
        assertEquals(2, cli("-n", "2", "--bogus", "1", "exit-code", "0").code());
        Cli unknown = cli("-n", "2", "no-such-sample");
        assertEquals(2, unknown.code());
        assertTrue(String.join("\n", unknown.err()).contains("unknown sample 'no-such-sample'"), unknown.err().toString());
    }

    @Test
    void sampleUsageErrorGivesExitCode2() {
        Cli r = cli("-n", "1", "exit-code", "300");
        assertEquals(2, r.code(), "a rank's usage error is the job's");
        assertTrue(String.join("\n", r.err()).contains("rank 0 failed first, with exit code 2"), r.err().toString());
    }
}
