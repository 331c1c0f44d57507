package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two hosts on one machine: two network namespaces joined by a veth pair on a private /30, one
 * rank JVM ({@link NetnsRankMain}) in each, {@code MSCCLPP_SOCKET_IFNAME} naming the veth and a
 * different {@code MSCCLPP_HOSTID} per namespace. Rank 0 hosts the root at its veth address
 * ({@code initialize("10.201.77.1:29400")}); both ranks run the conformance checks, see each other
 * at their veth addresses and count one rank per node.
 *
 * <p>The namespaces are this test's own hosts, created under unique names and deleted afterwards;
 * no traffic leaves them. Without permission to create namespaces (not root, no {@code ip}) the
 * test is skipped with the reason.
 */
class NetnsBootstrapTest {

    private static final String IP_A = "10.201.77.1";
    private static final String IP_B = "10.201.77.2";
    private static final int PREFIX = 30;
    private static final int ROOT_PORT = 29400;
    private static final Duration COMMAND_DEADLINE = Duration.ofSeconds(10);
    private static final Duration RANK_DEADLINE = Duration.ofSeconds(60);
    private static final Duration LINK_UP_DEADLINE = Duration.ofSeconds(10);

    private static final List<String> createdNamespaces = new ArrayList<>();
    private static String nsA;
    private static String nsB;
    private static String vethA;
    private static String vethB;

    private record Result(int exitCode, String output) {
    }

    /** Runs a short command, output and errors merged, failing if it outlives its deadline. */
    private static Result run(String... command) throws IOException, InterruptedException {
        File out = File.createTempFile("netns-cmd", ".txt");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out).start();
            if (!p.waitFor(COMMAND_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly().waitFor(COMMAND_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
                fail(String.join(" ", command) + " did not finish within " + COMMAND_DEADLINE);
            }
            return new Result(p.exitValue(), Files.readString(out.toPath(), StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out.toPath());
        }
    }

    private static void mustRun(String... command) throws IOException, InterruptedException {
        Result r = run(command);
        assertEquals(0, r.exitCode(), String.join(" ", command) + " failed: " + r.output());
    }

    @BeforeAll
    static void createHosts() throws IOException, InterruptedException {
        Assumptions.assumeTrue(System.getProperty("os.name").startsWith("Linux"), "network namespaces are Linux only");
        String tag = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
        nsA = "jmscclpp-" + tag + "-a";
        nsB = "jmscclpp-" + tag + "-b";
        vethA = "jv" + tag + "a"; // interface names are at most 15 characters
        vethB = "jv" + tag + "b";
        Result probe;
        try {
            probe = run("ip", "netns", "add", nsA);
        } catch (IOException e) {
            Assumptions.abort("skipped: cannot run `ip` (" + e.getMessage() + ")");
            return;
        }
        if (probe.exitCode() != 0) {
            String why = "skipped: `ip netns add` is not permitted here: " + probe.output().strip();
            System.out.println(NetnsBootstrapTest.class.getSimpleName() + " " + why);
            Assumptions.abort(why);
        }
        createdNamespaces.add(nsA);
        mustRun("ip", "netns", "add", nsB);
        createdNamespaces.add(nsB);
        mustRun("ip", "link", "add", vethA, "netns", nsA, "type", "veth", "peer", "name", vethB, "netns", nsB);
        mustRun("ip", "-n", nsA, "addr", "add", IP_A + "/" + PREFIX, "dev", vethA);
        mustRun("ip", "-n", nsB, "addr", "add", IP_B + "/" + PREFIX, "dev", vethB);
        for (String[] nsAndDev : new String[][] {{nsA, vethA}, {nsB, vethB}}) {
            mustRun("ip", "-n", nsAndDev[0], "link", "set", "lo", "up");
            mustRun("ip", "-n", nsAndDev[0], "link", "set", nsAndDev[1], "up");
        }
        awaitCarrier(nsA, vethA);
        awaitCarrier(nsB, vethB);
    }

    /**
     * The kernel turns a veth's carrier on asynchronously once both ends are up, and the interface
     * selector skips an interface that is not running; there is no event to wait on from outside
     * the namespace, so poll its state, bounded by {@link #LINK_UP_DEADLINE}.
     */
    private static void awaitCarrier(String ns, String dev) throws IOException, InterruptedException {
        long until = System.nanoTime() + LINK_UP_DEADLINE.toNanos();
        while (true) {
            Result r = run("ip", "-n", ns, "-o", "link", "show", "dev", dev);
            if (r.exitCode() == 0 && r.output().contains("LOWER_UP") && r.output().contains("state UP")) {
                return;
            }
            if (System.nanoTime() > until) {
                fail(dev + " in " + ns + " is not up after " + LINK_UP_DEADLINE + ": " + r.output());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
    }

    @AfterAll
    static void deleteHosts() throws IOException, InterruptedException {
        List<String> failures = new ArrayList<>();
        // Deleting a namespace destroys the veth end inside it, and with it the pair.
        for (String ns : createdNamespaces) {
            Result r = run("ip", "netns", "del", ns);
            if (r.exitCode() != 0) {
                failures.add(ns + ": " + r.output().strip());
            }
        }
        createdNamespaces.clear();
        assertEquals(List.of(), failures, "namespaces left behind");
    }

    private static Process startRank(String ns, String veth, int rank, Path log) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> command = List.of("ip", "netns", "exec", ns, java,
                "--enable-native-access=ALL-UNNAMED", "-Dio.netty.leakDetection.level=paranoid",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", classpath, NetnsRankMain.class.getName(),
                Integer.toString(rank), "2", IP_A + ":" + ROOT_PORT, Long.toString(RANK_DEADLINE.toSeconds() / 2));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("MSCCLPP_"));
        env.put("MSCCLPP_SOCKET_IFNAME", veth);
        env.put("MSCCLPP_HOSTID", "netns-host-" + ns);
        return pb.start();
    }

    @Test
    void twoRanksOnTwoHostsPassTheChecks(@TempDir Path logs) throws IOException, InterruptedException {
        Path logA = logs.resolve("rank0.log");
        Path logB = logs.resolve("rank1.log");
        List<Process> ranks = new ArrayList<>();
        try {
            ranks.add(startRank(nsA, vethA, 0, logA));
            ranks.add(startRank(nsB, vethB, 1, logB));
            long until = System.nanoTime() + RANK_DEADLINE.toNanos();
            for (int r = 0; r < ranks.size(); r++) {
                Process p = ranks.get(r);
                long left = Math.max(0, until - System.nanoTime());
                if (!p.waitFor(left, TimeUnit.NANOSECONDS)) {
                    fail("rank " + r + " did not finish within " + RANK_DEADLINE + "\n" + logs(logA, logB));
                }
                assertEquals(0, p.exitValue(), "rank " + r + " failed\n" + logs(logA, logB));
            }
        } finally {
            for (Process p : ranks) {
                if (p.isAlive()) {
                    p.destroyForcibly().waitFor(COMMAND_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
                }
            }
        }
        String book = "book=0@" + IP_A + ":";
        for (Path log : List.of(logA, logB)) {
            String line = Files.readAllLines(log).stream().filter(l -> l.startsWith("NETNS-RANK ")).findFirst()
                    .orElseThrow(() -> new AssertionError("no result line in " + log.getFileName() + "\n"
                            + logs(logA, logB)));
            System.out.println(NetnsBootstrapTest.class.getSimpleName() + ": " + line);
            int rank = log == logA ? 0 : 1;
            assertTrue(line.startsWith("NETNS-RANK rank=" + rank + " size=2 perNode=1 "),
                    "each namespace is a host of its own: " + line);
            assertTrue(line.contains(book) && line.contains(",1@" + IP_B + ":"),
                    "the ranks listen on their veth addresses: " + line);
        }
    }

    private static String logs(Path a, Path b) {
        StringBuilder sb = new StringBuilder();
        for (Path p : List.of(a, b)) {
            sb.append("---- ").append(p.getFileName()).append('\n');
            try {
                sb.append(Files.readString(p));
            } catch (IOException e) {
                sb.append("(unreadable: ").append(e).append(")\n");
            }
        }
        return sb.toString();
    }
}
