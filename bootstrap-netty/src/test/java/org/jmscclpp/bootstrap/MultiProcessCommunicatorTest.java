package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.jmscclpp.core.proxy.ProxyService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The communicator across real processes: every rank is its own JVM ({@link CommunicatorRankMain})
 * with a {@link TcpBootstrap} and its own host backend over one shared-memory directory, so peers'
 * buffers reach a rank only through HOST_IPC handles, mapped files and the bootstrap. Ports of
 * MSCCL++'s CommunicatorTest (BasicWrite, WriteWithHostSemaphores, WriteWithDeviceSemaphores) with
 * 2 and 4 ranks, a peer killed during setup, and PortChannelOneToOneTest's ping-pongs with a proxy
 * service per rank process. After each test the directory must be empty:
 * ranks that succeed close everything (and check they hold nothing of it), ranks that fail leave
 * their files to the JVM's exit hook.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class MultiProcessCommunicatorTest {

    /** Starting JVMs and initializing on a busy two-core host; generous, it only bounds a hang. */
    private static final Duration START = Duration.ofSeconds(60);
    private static final Duration EXIT = Duration.ofSeconds(30);

    @RegisterExtension
    final RankProcesses.Tracker jobs = new RankProcesses.Tracker();

    private Path shm;

    /** A fresh directory under /dev/shm (the host backend's real home) when it is writable, else the temp dir. */
    @BeforeEach
    void makeDirectory() throws IOException {
        Path devShm = Path.of("/dev/shm");
        shm = Files.isDirectory(devShm) && Files.isWritable(devShm)
                ? Files.createTempDirectory(devShm, "jmscclpp-mp-test-")
                : Files.createTempDirectory("jmscclpp-mp-test-");
    }

    /** Runs after the tracker killed any rank still alive; removes what a failed test left. */
    @AfterEach
    void removeDirectory() throws IOException {
        try (Stream<Path> files = Files.list(shm)) {
            for (Path f : files.toList()) {
                Files.deleteIfExists(f);
            }
        }
        Files.deleteIfExists(shm);
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void basicWrite(int n) throws IOException {
        runToSuccess("basic-write", n);
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void writeWithHostSemaphores(int n) throws IOException {
        runToSuccess("host-semaphores", n);
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void writeWithDeviceSemaphores(int n) throws IOException {
        runToSuccess("device-semaphores", n);
    }

    /**
     * The last rank initializes its bootstrap, prints {@code ready-to-die} and waits; the others
     * register their buffers and run setup against it; once every survivor is in setup, the last
     * rank is killed with SIGKILL. Every survivor's setup fails with REMOTE_ERROR naming it, long
     * before the setup deadline, and its exit hook deletes the files it never closed.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void aPeerKilledDuringSetupFailsEverySurvivorsSetupNamingIt(int n) throws IOException {
        long setupTimeoutMs = 30_000;
        int victim = n - 1;
        RankProcesses job = start("die-before-setup", n, "setup-timeout-ms=" + setupTimeoutMs);
        job.awaitLine(victim, "ready-to-die"::equals, START);
        for (int r = 0; r < victim; r++) {
            job.awaitLine(r, "SETUP"::equals, START);
        }
        long killedAt = System.nanoTime();
        job.kill(victim);
        assertNotEquals(0, job.waitFor(victim, EXIT), "rank " + victim + " was killed");

        // the peer's death is news within a round trip; the deadline is ten times what that needs
        List<String> problems = survivorsFailed(job, victim, killedAt, "killed-in-setup n=" + n, setupTimeoutMs,
                f -> f.code().equals("REMOTE_ERROR") && f.names(victim) && f.elapsedMs() < setupTimeoutMs);
        assertTrue(problems.isEmpty(), String.join("\n", problems));
        assertDirectoryEmpty();
    }

    /**
     * Every rank builds host and device semaphores with every peer; the survivors then wait (host
     * semaphore on even ranks, a device handle on a kernel thread on odd ranks) for a signal from
     * the last rank, which is killed with SIGKILL. Every wait ends with REMOTE_ERROR naming it within
     * a fraction of the wait's own 30 s deadline: the bootstrap's news reaches the waits through the
     * communicator's abort signal.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 4})
    void aPeerKilledWhileTheOthersWaitForItsSignalEndsEveryWaitNamingIt(int n) throws IOException {
        long waitTimeoutMs = 30_000;
        int victim = n - 1;
        RankProcesses job = start("die-in-waits", n, "setup-timeout-ms=" + waitTimeoutMs);
        job.awaitLine(victim, "ready-to-die"::equals, START);
        for (int r = 0; r < victim; r++) {
            job.awaitLine(r, "WAITING"::equals, START);
        }
        long killedAt = System.nanoTime();
        job.kill(victim);
        assertNotEquals(0, job.waitFor(victim, EXIT), "rank " + victim + " was killed");

        List<String> problems = survivorsFailed(job, victim, killedAt, "killed-while-waited-for n=" + n, waitTimeoutMs,
                f -> f.code().equals("REMOTE_ERROR") && f.names(victim));
        // (the victim's shared-memory files stay: SIGKILL runs no exit hook)
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    /**
     * As above, but the last rank aborts the job through its communicator (NCCL's ncclCommAbort)
     * while the others wait for its signal: every wait ends with ABORTED naming it and carrying
     * its reason, long before the wait's deadline; the aborting rank exits normally.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3})
    void anAbortOnOneRankEndsEveryOtherRanksWaitsNamingIt(int n) throws IOException {
        long waitTimeoutMs = 30_000;
        int aborter = n - 1;
        RankProcesses job = start("abort-in-waits", n, "setup-timeout-ms=" + waitTimeoutMs);
        job.awaitLine(aborter, "ABORTED"::equals, START);
        long abortedAt = System.nanoTime();
        List<String> problems = survivorsFailed(job, aborter, abortedAt, "aborted n=" + n, waitTimeoutMs,
                f -> f.code().equals("ABORTED") && f.peer().equals(Integer.toString(aborter))
                        && f.message().contains("the test aborts the job"));
        assertEquals(RankMain.EXIT_OK, job.waitFor(aborter, EXIT), "exit code of the aborting rank");
        assertTrue(problems.isEmpty(), String.join("\n", problems));
    }

    /**
     * MSCCL++'s PortChannelOneToOneTest.PingPong and PingPongWithPoll between two rank processes
     * ({@link PortChannelRankMain}), each with its own proxy service of {@code poller}: 1, 1K, 1M
     * and 4M ints, every element checked every turn, first with {@code wait()}, then spinning on
     * {@code poll()}. 1000 turns for the small sizes, 32 and 8 for 1M and 4M ints (see
     * {@link PortChannelRankMain#turns}). The directory ends empty.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(ProxyService.Poller.class)
    void portChannelPingPongBetweenTwoProcesses(ProxyService.Poller poller) throws IOException {
        RankProcesses job = jobs.open("port-channel-" + poller, PortChannelRankMain.class);
        String address = "127.0.0.1:" + freePort();
        for (int r = 0; r < 2; r++) {
            job.start(r, List.of("rank=" + r, "address=" + address, "shm-dir=" + shm, "poller=" + poller,
                    "modes=wait,poll"), Map.of());
        }
        for (int r = 0; r < 2; r++) {
            job.awaitLine(r, "OK ping-pong"::equals, START.multipliedBy(2));
            job.awaitLine(r, "CLOSED-CLEAN files=0 fds=0 maps=0"::equals, START);
        }
        for (int r = 0; r < 2; r++) {
            assertEquals(RankMain.EXIT_OK, job.waitFor(r, EXIT), "exit code of rank " + r);
        }
        for (String mode : List.of("wait", "poll")) {
            for (int ints : PortChannelRankMain.SIZES) {
                String prefix = "PINGPONG mode=" + mode + " ints=" + ints + " turns=" + PortChannelRankMain.turns(ints)
                        + " ms=";
                for (int r = 0; r < 2; r++) {
                    System.out.printf("port channel %s rank %d: %s%n", poller, r,
                            job.awaitLineStartingWith(r, prefix, Duration.ZERO));
                }
            }
        }
        assertDirectoryEmpty();
    }

    /**
     * Waits for the {@code FAILED} line of every rank below {@code culprit} (the ranks that outlive
     * it), prints it with the time since {@code sinceNanos}, and checks that each rank exits with
     * EXIT_FAILED; returns a problem for each line {@code expected} rejects or that came later than
     * a third of {@code deadlineMs} (the news travels in a round trip; the deadline is far longer).
     */
    private static List<String> survivorsFailed(RankProcesses job, int culprit, long sinceNanos, String label,
                                                long deadlineMs, Predicate<MultiProcessBootstrapTest.Failed> expected) {
        List<String> problems = new ArrayList<>();
        for (int r = 0; r < culprit; r++) {
            RankProcesses.Line line = job.awaitLineStartingWith(r, "FAILED ", Duration.ofMillis(deadlineMs * 2));
            MultiProcessBootstrapTest.Failed f = MultiProcessBootstrapTest.Failed.parse(line);
            long sinceMs = TimeUnit.NANOSECONDS.toMillis(line.nanos() - sinceNanos);
            System.out.printf("%s: rank %d failed %d ms after rank %d went (%d ms into its operation): %s%n",
                    label, r, sinceMs, culprit, f.elapsedMs(), f.line());
            if (!expected.test(f)) {
                problems.add("rank " + r + " did not fail as expected about rank " + culprit + ": " + f.line());
            }
            if (sinceMs > deadlineMs / 3) {
                problems.add("rank " + r + " failed " + sinceMs + " ms after rank " + culprit + " went; deadline "
                        + deadlineMs + " ms: " + f.line());
            }
            assertEquals(RankMain.EXIT_FAILED, job.waitFor(r, EXIT), "exit code of rank " + r);
        }
        return problems;
    }

    private void runToSuccess(String scenario, int n) throws IOException {
        RankProcesses job = start(scenario, n);
        for (int r = 0; r < n; r++) {
            job.awaitLine(r, ("OK " + scenario)::equals, START);
            job.awaitLine(r, "CLOSED-CLEAN files=0 fds=0 maps=0"::equals, START);
        }
        for (int r = 0; r < n; r++) {
            assertEquals(RankMain.EXIT_OK, job.waitFor(r, EXIT), "exit code of rank " + r);
        }
        assertDirectoryEmpty();
    }

    private RankProcesses start(String scenario, int n, String... more) {
        RankProcesses job = jobs.open(scenario + "-" + n, CommunicatorRankMain.class);
        String address = "127.0.0.1:" + freePort();
        for (int r = 0; r < n; r++) {
            List<String> args = new ArrayList<>(List.of("rank=" + r, "nranks=" + n, "address=" + address,
                    "shm-dir=" + shm, "scenario=" + scenario));
            args.addAll(List.of(more));
            job.start(r, args, Map.of());
        }
        return job;
    }

    /** Every rank has exited: whatever is left in the directory was neither closed nor deleted at exit. */
    private void assertDirectoryEmpty() throws IOException {
        try (Stream<Path> files = Files.list(shm)) {
            List<String> left = files.map(p -> p.getFileName().toString()).sorted().toList();
            assertEquals(List.of(), left, "files left in " + shm);
        }
    }

    /** A port nobody listens on right now (the root binds it with SO_REUSEADDR a moment later). */
    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
