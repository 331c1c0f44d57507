package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class LauncherTest {

    private static final Duration DEADLINE = Duration.ofSeconds(60);

    /** Output of one {@code Launcher.runCli} call. */
    private record Cli(int code, List<String> out, List<String> err, long millis) {
    }

    private static Cli cli(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        long t0 = System.nanoTime();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Launcher.runCli(List.of(args), o, e);
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
    void jobReportsExitCodesOfFailedAndStoppedRanks() throws InterruptedException {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.start(3, "exit-code", List.of("wait,wait,5"),
                Map.of("JMSCCLPP_TEST_MARK", "x"), lines::add)) {
            assertTrue(job.waitFor(DEADLINE), "ranks still running after " + DEADLINE);
            assertEquals(new Launcher.RankExit(2, 5), job.firstFailure().orElseThrow());
            assertEquals(5, job.exitCode(2).orElseThrow());
            for (int rank : new int[] {0, 1}) {
                int code = job.exitCode(rank).orElseThrow();
                assertNotEquals(0, code, "rank " + rank);
                assertNotEquals(ExitCodeSample.WAIT_EXPIRED, code, "rank " + rank + " was not stopped");
            }
            assertTrue(job.rootAddress().matches("127\\.0\\.0\\.1:\\d+"), job.rootAddress());
        }
    }

    @Test
    void killedRankIsTheFirstFailureAndOthersRunOnWithoutFailFast() throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(2).sample("wait-forever", List.of()).output(lines::add)
                .failFast(false).start()) {
            assertTrue(job.pid(0) > 0);
            job.kill(0);
            assertEquals(new Launcher.RankExit(0, 137), job.onExit(0).get(30, TimeUnit.SECONDS), "SIGKILL");
            assertFalse(job.waitFor(Duration.ofMillis(200)), "rank 1 must still run without fail-fast");
            assertTrue(job.exitCode(1).isEmpty());
            Launcher.RankExit first = job.firstFailure().orElseThrow();
            assertEquals(0, first.rank());
            assertEquals(137, first.exitCode(), "SIGKILL");
            job.stop();
            assertTrue(job.waitFor(DEADLINE));
            // a rank stopped on purpose is not a failure
            assertEquals(0, job.firstFailure().orElseThrow().rank());
        }
    }

    @Test
    void timeoutStopsEveryRank() {
        Cli r = cli("-n", "2", "--timeout", "1.5", "wait-forever");
        assertEquals(1, r.code());
        String report = String.join("\n", r.err());
        assertTrue(report.contains("timeout: ranks 0, 1 still running after 1.5 s"), report);
        assertTrue(r.millis() < 30_000, "took " + r.millis() + " ms");
    }

    @Test
    void usageErrorsStartNothing() {
        assertEquals(2, cli("exit-code", "0").code());
        assertEquals(2, cli("-n", "0", "exit-code", "0").code());
        assertEquals(2, cli("-n", "two", "exit-code", "0").code());
        assertEquals(2, cli("-n", "2").code());
        assertEquals(2, cli("-n", "2", "--timeout", "-1", "exit-code", "0").code());
        assertEquals(2, cli("-n", "2", "--bogus", "1", "exit-code", "0").code());
        Cli unknown = cli("-n", "2", "no-such-sample");
        assertEquals(2, unknown.code());
        assertTrue(String.join("\n", unknown.err()).contains("unknown sample 'no-such-sample'"), unknown.err().toString());
    }

    @Test
    void sampleUsageErrorGivesExitCode2() {
        Cli r = cli("-n", "1", "exit-code", "300");
        assertEquals(1, r.code());
        assertTrue(String.join("\n", r.err()).contains("rank 0 failed first, with exit code 2"), r.err().toString());
    }
}
