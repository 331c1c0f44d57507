package org.jmscclpp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.samples.RankProcesses;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code jmscclpp run -n 4} killed with SIGKILL in the middle of a host-backend allreduce loop: no
 * rank outlives it, and no rank leaves a shared-memory file behind.
 */
class RunCommandSigkillTest {

    private static final Duration DEADLINE = Duration.ofSeconds(120);
    /** The watch polls every 100 ms; four JVMs then shut down on two cores. */
    private static final Duration PROMPTLY = Duration.ofSeconds(5);

    @TempDir
    Path shm;
    @TempDir
    Path logs;

    @Test
    void everyRankOfAJobDiesWithItsLauncherKilledBySigkillAndDeletesItsFiles() throws Exception {
        Path log = logs.resolve("launcher.log");
        List<String> command = ChildJvm.command(List.of("--enable-native-access=ALL-UNNAMED"), Main.class,
                List.of("run", "-n", "4", "allreduce", "--backend", "host", "--iters", "2000000", "--bytes", "64K"));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put(HostBackend.SHM_DIR_ENV, shm.toString());
        Process launcher = pb.start();
        List<ProcessHandle> started = new ArrayList<>();
        try {
            // the job is in its loop once every rank has its buffers
            RankProcesses.awaitTrue(() -> ranks(launcher).size() == 4 && ranks(launcher).stream()
                            .allMatch(pid -> !filesOf(pid).isEmpty()), DEADLINE,
                    () -> "the job did not get going; ranks " + ranks(launcher) + ", files " + files() + "\n"
                            + read(log));
            List<Long> ranks = ranks(launcher);
            launcher.toHandle().children().forEach(started::add);
            assertTrue(launcher.isAlive(), () -> read(log));

            launcher.destroyForcibly();
            assertTrue(launcher.waitFor(DEADLINE.toSeconds(), TimeUnit.SECONDS));
            assertEquals(137, launcher.exitValue());
            Duration took = RankProcesses.awaitGone(ranks, DEADLINE, () -> "files " + files());
            System.out.println("4 ranks gone " + took.toMillis() + " ms after their launcher was reaped");
            assertTrue(took.compareTo(PROMPTLY) < 0, "the ranks took " + took.toMillis() + " ms");
            for (long rank : ranks) {
                assertEquals(List.of(), filesOf(rank), "rank pid " + rank + " left files behind");
            }
            assertEquals(List.of(), files());
        } finally {
            // a failed test leaves no rank behind (a handle kills only the process it was taken of)
            launcher.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
            launcher.destroyForcibly();
            started.forEach(ProcessHandle::destroyForcibly);
        }
    }

    /** The launcher's children: its ranks. */
    private static List<Long> ranks(Process launcher) {
        return launcher.toHandle().children().map(ProcessHandle::pid).sorted().toList();
    }

    private List<String> filesOf(long pid) {
        return files().stream().filter(n -> n.startsWith("jmscclpp-" + pid + "-")).toList();
    }

    private List<String> files() {
        try (Stream<Path> s = Files.list(shm)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            return "(cannot read " + file + ": " + e + ")";
        }
    }
}
