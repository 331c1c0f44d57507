package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.cli.ExitCodeSample;
import org.junit.jupiter.api.Test;

class LauncherTest {

    private static final Duration DEADLINE = Duration.ofSeconds(60);

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
}
