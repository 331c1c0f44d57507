package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * TcpBootstrap across real processes: every rank is its own JVM ({@link RankMain}), so ranks share
 * nothing but the network, and a rank can die the way processes die (SIGKILL: no goodbye, the
 * kernel resets its connections).
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class MultiProcessBootstrapTest {

    /** Starting a JVM and initializing on a busy two-core host; generous, it only bounds a hang. */
    private static final Duration START = Duration.ofSeconds(40);
    private static final Pattern FAILED = Pattern.compile(
            "FAILED (\\w+) peer=(\\S+) elapsed_ms=(\\d+) message=(.*)");

    @RegisterExtension
    final RankProcesses.Tracker jobs = new RankProcesses.Tracker();

    @Test
    void withUniqueIdFourProcessesPassTheChecks() {
        RankProcesses job = jobs.open("id-job", RankMain.class);
        job.start(0, args(0, 4, "mode=id", "scenario=checks"), Map.of());
        String line = job.awaitLineStartingWith(0, "UNIQUE_ID ", START).text();
        String hex = line.substring("UNIQUE_ID ".length());
        for (int r = 1; r < 4; r++) {
            job.start(r, args(r, 4, "mode=id", "id=" + hex, "scenario=checks"), Map.of());
        }
        assertAllPass(job, 4);
    }

    @Test
    void withIpPortPairFourProcessesPassTheChecks() {
        RankProcesses job = jobs.open("address-job", RankMain.class);
        String address = "127.0.0.1:" + freePort();
        for (int r = 0; r < 4; r++) {
            job.start(r, args(r, 4, "mode=address", "address=" + address, "scenario=checks"), Map.of());
        }
        assertAllPass(job, 4);
    }

    /**
     * Ranks 0, 1 and 3 start; once all three checked in with the root, rank 3 dies; then rank 2
     * starts. Every survivor fails within its init deadline (plus 10%) with REMOTE_ERROR or TIMEOUT.
     * Ranks 0 and 1 were checked in when rank 3 died: the root tells them at once, naming rank 3.
     * Rank 2 comes too late to be told: the root lives in rank 0's process, which failed and
     * exited before rank 2 started, so rank 2 can only time out in root check-in, saying the root
     * could not be reached (the same as MSCCL++ and NCCL, whose root also lives in rank 0).
     */
    @Test
    void aRankThatDiesAfterCheckingInFailsTheInitializationOfEverySurvivor() {
        RankProcesses job = jobs.open("dead-at-init", RankMain.class);
        long initTimeoutMs = 10_000;
        String address = "127.0.0.1:" + freePort();
        for (int r : new int[] {0, 1, 3}) {
            job.start(r, args(r, 4, "mode=address", "address=" + address, "scenario=checks",
                    "init-timeout-ms=" + initTimeoutMs), Map.of());
        }
        // every rank started so far must have checked in: a rank still starting when rank 3 dies
        // would find no root and only time out, like the late rank 2
        for (int r : new int[] {0, 1, 3}) {
            int rank = r;
            job.awaitLine(r, s -> s.contains("rank " + rank + ": checked in with the root"), START);
        }
        job.kill(3);
        assertNotEquals(0, job.waitFor(3, Duration.ofSeconds(10)), "rank 3 was killed");
        job.start(2, args(2, 4, "mode=address", "address=" + address, "scenario=checks",
                "init-timeout-ms=" + initTimeoutMs), Map.of());

        List<String> problems = new ArrayList<>();
        for (int r : new int[] {0, 1, 2}) {
            Failed f = Failed.parse(job.awaitLineStartingWith(r, "FAILED ", START.plusMillis(initTimeoutMs)));
            System.out.printf("dead-at-init: rank %d failed after %d ms: %s%n", r, f.elapsedMs, f.line);
            if (!f.code.equals("REMOTE_ERROR") && !f.code.equals("TIMEOUT")) {
                problems.add("rank " + r + " failed with " + f.code + ", expected REMOTE_ERROR or TIMEOUT: " + f.line);
            }
            if (r != 2 && !f.names(3)) {
                problems.add("rank " + r + "'s error does not name rank 3: " + f.line);
            }
            if (r == 2 && !f.names(3) && !(f.code.equals("TIMEOUT") && f.message.contains("phase root check-in")
                    && f.message.contains("the root could not be reached"))) {
                problems.add("rank 2 neither names rank 3 nor says the root could not be reached: " + f.line);
            }
            if (f.elapsedMs > initTimeoutMs * 11 / 10) {
                problems.add("rank " + r + " failed after " + f.elapsedMs + " ms, deadline " + initTimeoutMs
                        + " ms + 10%: " + f.line);
            }
            assertEquals(RankMain.EXIT_FAILED, job.waitFor(r, Duration.ofSeconds(10)), "exit code of rank " + r);
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    /**
     * A rank whose root never answers fails with TIMEOUT in root check-in within its init
     * deadline (plus 10%) from the moment it called initialize, in a fresh JVM, where starting the
     * event loops alone takes a noticeable part of a short deadline.
     */
    @Test
    void aRankWithoutARootTimesOutWithinItsInitDeadline() {
        RankProcesses job = jobs.open("no-root", RankMain.class);
        long initTimeoutMs = 3_000;
        String address = "127.0.0.1:" + freePort();
        job.start(1, args(1, 2, "mode=address", "address=" + address, "scenario=checks",
                "init-timeout-ms=" + initTimeoutMs), Map.of());
        Failed f = Failed.parse(job.awaitLineStartingWith(1, "FAILED ", START.plusMillis(initTimeoutMs)));
        System.out.printf("no-root: rank 1 failed after %d ms: %s%n", f.elapsedMs, f.line);
        assertEquals("TIMEOUT", f.code, f.line);
        assertTrue(f.message.contains("phase root check-in"), f.line);
        assertTrue(f.message.contains("the root could not be reached (last attempt: "), f.line);
        assertTrue(f.elapsedMs <= initTimeoutMs * 11 / 10,
                "failed after " + f.elapsedMs + " ms, deadline " + initTimeoutMs + " ms + 10%: " + f.line);
        assertEquals(RankMain.EXIT_FAILED, job.waitFor(1, Duration.ofSeconds(10)));
    }

    /**
     * Ranks 0 and 1 of a 4-rank job start; ranks 2 and 3 never do. Both fail with TIMEOUT within
     * their init deadline (plus 10%), and both errors name the ranks that never checked in: the root
     * gives up a little before the ranks, so its report reaches them first.
     */
    @Test
    void ranksThatNeverStartAreNamedByEveryRankThatWaited() {
        RankProcesses job = jobs.open("never-started", RankMain.class);
        long initTimeoutMs = 4_000;
        String address = "127.0.0.1:" + freePort();
        for (int r = 0; r < 2; r++) {
            job.start(r, args(r, 4, "mode=address", "address=" + address, "scenario=checks",
                    "init-timeout-ms=" + initTimeoutMs), Map.of());
        }
        List<String> problems = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            Failed f = Failed.parse(job.awaitLineStartingWith(r, "FAILED ", START.plusMillis(initTimeoutMs)));
            System.out.printf("never-started: rank %d failed after %d ms: %s%n", r, f.elapsedMs, f.line);
            if (!f.code.equals("TIMEOUT") || !f.message.contains("never checked in: ranks 2, 3")) {
                problems.add("rank " + r + " does not say that ranks 2 and 3 never checked in: " + f.line);
            }
            if (f.elapsedMs > initTimeoutMs * 11 / 10) {
                problems.add("rank " + r + " failed after " + f.elapsedMs + " ms, deadline " + initTimeoutMs
                        + " ms + 10%: " + f.line);
            }
            assertEquals(RankMain.EXIT_FAILED, job.waitFor(r, Duration.ofSeconds(10)), "exit code of rank " + r);
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    /**
     * Rank 0 hosts the root of a job started from an address. Killed while rank 1 waits for its
     * welcome, it is named as rank 0 (the peer of rank 1's REMOTE_ERROR), not only by the root's
     * address, and rank 1 fails at once rather than at its deadline.
     */
    @Test
    void aRootKilledDuringCheckInIsNamedAsRankZero() {
        RankProcesses job = jobs.open("root-killed", RankMain.class);
        long initTimeoutMs = 20_000;
        String address = "127.0.0.1:" + freePort();
        for (int r = 0; r < 2; r++) {
            job.start(r, args(r, 3, "mode=address", "address=" + address, "scenario=checks",
                    "init-timeout-ms=" + initTimeoutMs), Map.of());
        }
        job.awaitLine(1, s -> s.contains("rank 1: checked in with the root"), START);
        job.kill(0);
        Failed f = Failed.parse(job.awaitLineStartingWith(1, "FAILED ", START));
        System.out.printf("root-killed: rank 1 failed after %d ms: %s%n", f.elapsedMs, f.line);
        assertEquals("REMOTE_ERROR", f.code, f.line);
        assertEquals("0", f.peer, f.line);
        assertTrue(f.message.contains("rank 0's root at"), f.line);
        assertTrue(f.elapsedMs < initTimeoutMs / 2, "rank 1 waited for its deadline: " + f.line);
        assertEquals(RankMain.EXIT_FAILED, job.waitFor(1, Duration.ofSeconds(10)));
    }

    /**
     * Four ranks all-gather in a loop; rank 2 is killed. Every survivor fails within the operation
     * deadline (plus 10%) of the kill with an error naming rank 2, and exits.
     */
    @Test
    void aRankKilledDuringAllGatherFailsEverySurvivorNamingIt() {
        RankProcesses job = jobs.open("dead-in-allgather", RankMain.class);
        long opTimeoutMs = 5_000;
        String address = "127.0.0.1:" + freePort();
        for (int r = 0; r < 4; r++) {
            job.start(r, args(r, 4, "mode=address", "address=" + address, "scenario=loop-allgather",
                    "op-timeout-ms=" + opTimeoutMs, "pace-ms=20"), Map.of());
        }
        for (int r = 0; r < 4; r++) {
            job.awaitLine(r, "READY"::equals, START);
        }
        long killedAt = System.nanoTime();
        job.kill(2);

        List<String> problems = new ArrayList<>();
        for (int r : new int[] {0, 1, 3}) {
            RankProcesses.Line line = job.awaitLineStartingWith(r, "FAILED ", Duration.ofMillis(opTimeoutMs * 3));
            Failed f = Failed.parse(line);
            long sinceKillMs = TimeUnit.NANOSECONDS.toMillis(line.nanos() - killedAt);
            System.out.printf("dead-in-allgather: rank %d failed %d ms after the kill (%d ms into its operation): %s%n",
                    r, sinceKillMs, f.elapsedMs, f.line);
            if (!f.code.equals("REMOTE_ERROR") && !f.code.equals("TIMEOUT")) {
                problems.add("rank " + r + " failed with " + f.code + ", expected REMOTE_ERROR or TIMEOUT: " + f.line);
            }
            if (!f.names(2)) {
                problems.add("rank " + r + "'s error does not name rank 2: " + f.line);
            }
            if (sinceKillMs > opTimeoutMs * 11 / 10) {
                problems.add("rank " + r + " failed " + sinceKillMs + " ms after the kill, deadline " + opTimeoutMs
                        + " ms + 10%: " + f.line);
            }
            assertEquals(RankMain.EXIT_FAILED, job.waitFor(r, Duration.ofSeconds(10)), "exit code of rank " + r);
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    /**
     * Two 3-rank jobs on this host at the same time, on two root ports of the loopback interface
     * (so the secrets derived from the addresses differ): both pass, so neither took the other's
     * connections or messages.
     */
    @Test
    void twoJobsAtOnceOnOneHostDoNotTalkToEachOther() {
        RankProcesses a = jobs.open("job-a", RankMain.class);
        RankProcesses b = jobs.open("job-b", RankMain.class);
        String addressA = "127.0.0.1:" + freePort();
        String addressB = "127.0.0.1:" + freePort();
        for (int r = 0; r < 3; r++) {
            a.start(r, args(r, 3, "mode=address", "address=" + addressA, "scenario=checks"), Map.of());
            b.start(r, args(r, 3, "mode=address", "address=" + addressB, "scenario=checks"), Map.of());
        }
        assertAllPass(a, 3);
        assertAllPass(b, 3);
    }

    private static void assertAllPass(RankProcesses job, int n) {
        for (int r = 0; r < n; r++) {
            job.awaitLine(r, "CHECKS OK"::equals, START);
            assertEquals(RankMain.EXIT_OK, job.waitFor(r, Duration.ofSeconds(10)), "exit code of rank " + r);
        }
    }

    private static List<String> args(int rank, int n, String... more) {
        List<String> a = new ArrayList<>(List.of("rank=" + rank, "nranks=" + n));
        a.addAll(List.of(more));
        return a;
    }

    /** A port nobody listens on right now (the root binds it with SO_REUSEADDR a moment later). */
    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A rank's {@code FAILED} line. */
    record Failed(String line, String code, String peer, long elapsedMs, String message) {
        static Failed parse(RankProcesses.Line line) {
            Matcher m = FAILED.matcher(line.text());
            if (!m.matches()) {
                throw new AssertionError("not a FAILED line: " + line.text());
            }
            return new Failed(line.text(), m.group(1), m.group(2), Long.parseLong(m.group(3)), m.group(4));
        }

        /** Whether the error is about {@code rank}: its peer, or a rank its message names. */
        boolean names(int rank) {
            return peer.equals(Integer.toString(rank))
                    || Pattern.compile("\\brank " + rank + "\\b|\\[" + rank + "]").matcher(message).find();
        }
    }
}
