package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A rank started through {@link LaunchedRank} lives as long as its launcher, and not longer. */
class LaunchedRankTest {

    private static final Duration DEADLINE = Duration.ofSeconds(60);
    /** How soon a rank must be gone after its launcher: the watch polls every 100 ms, then the JVM exits. */
    private static final Duration PROMPTLY = Duration.ofSeconds(2);

    @TempDir
    Path tmp;

    @Test
    void aRankDiesPromptlyWithItsLauncherKilledBySigkillAndSaysWhy() throws Exception {
        Path rankOutput = tmp.resolve("rank.log");
        try (ChildJvm launcher = ChildJvm.start(tmp.resolve("launcher.log"), LauncherStandIn.class,
                rankOutput.toString(), Launcher.SAMPLE_MAIN, "wait-forever")) {
            RankProcesses.awaitTrue(() -> !launcher.linesStartingWith("rank pid ").isEmpty()
                    && Files.exists(rankOutput) && read(rankOutput).contains("waiting"), DEADLINE,
                    () -> "the rank did not start; launcher:\n" + launcher.output() + "\nrank:\n" + read(rankOutput));
            long rank = Long.parseLong(launcher.linesStartingWith("rank pid ").getFirst());
            assertTrue(RankProcesses.running(rank));
            ProcessHandle handle = ProcessHandle.of(rank).orElseThrow();
            try {
                launcher.process().destroyForcibly();
                assertEquals(137, launcher.waitFor(DEADLINE));
                Duration took = RankProcesses.awaitGone(List.of(rank), DEADLINE, () -> read(rankOutput));
                System.out.println("rank gone " + took.toMillis() + " ms after its launcher was reaped");
                assertTrue(took.compareTo(PROMPTLY) < 0, "the rank took " + took.toMillis() + " ms");
                String said = read(rankOutput);
                assertTrue(said.contains("jmscclpp: rank 0 (pid " + rank + "): its launcher (pid "
                        + launcher.process().pid() + ") died; exiting"), said);
            } finally {
                // a failed test leaves no rank behind (a handle kills only the process it was taken of)
                handle.destroyForcibly();
            }
        }
    }

    @Test
    void aRankWhoseLauncherIsGoneBeforeItStartsExitsAtOnce() throws Exception {
        Process gone = new ProcessBuilder(ChildJvm.command(List.of(), StdinEchoMain.class, List.of())).start();
        gone.getOutputStream().close();
        assertTrue(gone.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS));
        Process rank = start(gone.pid(), Launcher.SAMPLE_MAIN, "wait-forever");
        rank.getOutputStream().close();
        assertTrue(rank.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS));
        String err = new String(rank.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        String out = new String(rank.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(ExitCodes.FAILURE, rank.exitValue(), err);
        assertTrue(err.contains("rank 0 (pid " + rank.pid() + "): its launcher (pid " + gone.pid() + ") died; exiting"),
                err);
        assertFalse(out.contains("waiting"), "the rank's main never ran: " + out);
    }

    @Test
    void whileItsLauncherLivesTheRankRunsAndKeepsItsStdin() throws Exception {
        // this JVM is the launcher: the rank's parent
        Process rank = start(ProcessHandle.current().pid(), StdinEchoMain.class.getName());
        try (OutputStream in = rank.getOutputStream()) {
            in.write("one\ntwo\n".getBytes(StandardCharsets.UTF_8));
        }
        assertTrue(rank.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS));
        String err = new String(rank.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, rank.exitValue(), err);
        assertEquals(List.of("echo one", "echo two"),
                new String(rank.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList());
    }

    @Test
    void whatTheRanksMainThrowsEndsItAsAMainClassWould() throws Exception {
        Process rank = start(ProcessHandle.current().pid(), "org.jmscclpp.samples.NoSuchMain");
        rank.getOutputStream().close();
        assertTrue(rank.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS));
        String err = new String(rank.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(1, rank.exitValue(), err);
        assertTrue(err.contains("ClassNotFoundException: org.jmscclpp.samples.NoSuchMain"), err);
    }

    /** A rank of one through {@link LaunchedRank}, told that {@code launcher} launched it. */
    private static Process start(long launcher, String mainClass, String... args) throws IOException {
        List<String> command = Launcher.rankCommand(List.of(), mainClass, List.of(args));
        // the launcher's pid follows LaunchedRank's class name
        int at = command.indexOf(LaunchedRank.class.getName()) + 1;
        command.set(at, Long.toString(launcher));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().putAll(Map.of(RankEnvironment.JMSCCLPP_RANK, "0", RankEnvironment.JMSCCLPP_WORLD_SIZE, "1",
                RankEnvironment.COMM_ID, "127.0.0.1:" + Launcher.freeLoopbackPort()));
        return pb.start();
    }

    private static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
        } catch (IOException e) {
            return "(cannot read " + file + ": " + e + ")";
        }
    }
}
