package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
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
    private static final int ROOT_PORT = 29400;
    private static final Duration RANK_DEADLINE = Duration.ofSeconds(60);

    private static VethPair hosts;

    @BeforeAll
    static void createHosts() throws IOException, InterruptedException {
        hosts = VethPair.create(NetnsBootstrapTest.class.getSimpleName(), "jmscclpp", "jv", IP_A, IP_B);
    }

    @AfterAll
    static void deleteHosts() throws IOException, InterruptedException {
        if (hosts != null) {
            hosts.close();
            hosts = null;
        }
    }

    private static Process startRank(int host, int rank, Path log) throws IOException {
        String veth = host == 0 ? hosts.vethA : hosts.vethB;
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> command = new ArrayList<>(hosts.exec(host));
        command.addAll(List.of(java,
                "--enable-native-access=ALL-UNNAMED", "-Dio.netty.leakDetection.level=paranoid",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", classpath, NetnsRankMain.class.getName(),
                Integer.toString(rank), "2", IP_A + ":" + ROOT_PORT, Long.toString(RANK_DEADLINE.toSeconds() / 2)));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("MSCCLPP_"));
        env.put("MSCCLPP_SOCKET_IFNAME", veth);
        env.put("MSCCLPP_HOSTID", "netns-host-" + host);
        return pb.start();
    }

    @Test
    void twoRanksOnTwoHostsPassTheChecks(@TempDir Path logs) throws IOException, InterruptedException {
        Path logA = logs.resolve("rank0.log");
        Path logB = logs.resolve("rank1.log");
        List<Process> ranks = new ArrayList<>();
        try {
            ranks.add(startRank(0, 0, logA));
            ranks.add(startRank(1, 1, logB));
            long until = System.nanoTime() + RANK_DEADLINE.toNanos();
            for (int r = 0; r < ranks.size(); r++) {
                Process p = ranks.get(r);
                long left = Math.max(0, until - System.nanoTime());
                if (!p.waitFor(left, TimeUnit.NANOSECONDS)) {
                    fail("rank " + r + " did not finish within " + RANK_DEADLINE + "\n" + VethPair.logs(List.of(logA, logB)));
                }
                assertEquals(0, p.exitValue(), "rank " + r + " failed\n" + VethPair.logs(List.of(logA, logB)));
            }
        } finally {
            for (Process p : ranks) {
                if (p.isAlive()) {
                    p.destroyForcibly().waitFor(VethPair.COMMAND_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
                }
            }
        }
        String book = "book=0@" + IP_A + ":";
        for (Path log : List.of(logA, logB)) {
            String line = Files.readAllLines(log).stream().filter(l -> l.startsWith("NETNS-RANK ")).findFirst()
                    .orElseThrow(() -> new AssertionError("no result line in " + log.getFileName() + "\n"
                            + VethPair.logs(List.of(logA, logB))));
            System.out.println(NetnsBootstrapTest.class.getSimpleName() + ": " + line);
            int rank = log == logA ? 0 : 1;
            assertTrue(line.startsWith("NETNS-RANK rank=" + rank + " size=2 perNode=1 "),
                    "each namespace is a host of its own: " + line);
            assertTrue(line.contains(book) && line.contains(",1@" + IP_B + ":"),
                    "the ranks listen on their veth addresses: " + line);
        }
    }
}
