package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

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

    @RegisterExtension
    final RankProcesses.Tracker jobs = new RankProcesses.Tracker();

    @Test
    void twoRanksOnTwoHostsPassTheChecks() {
        RankProcesses job = jobs.open("netns", NetnsRankMain.class);
        for (int r = 0; r < 2; r++) {
            job.start(r, hosts.exec(r), List.of(Integer.toString(r), "2", IP_A + ":" + ROOT_PORT,
                            Long.toString(RANK_DEADLINE.toSeconds() / 2)),
                    Map.of("MSCCLPP_SOCKET_IFNAME", r == 0 ? hosts.vethA : hosts.vethB,
                            "MSCCLPP_HOSTID", "netns-host-" + r));
        }
        long until = System.nanoTime() + RANK_DEADLINE.toNanos();
        for (int r = 0; r < 2; r++) {
            int code = job.waitFor(r, Duration.ofNanos(Math.max(0, until - System.nanoTime())));
            assertEquals(0, code, "rank " + r + " failed\n" + job.allOutput());
        }
        String book = "book=0@" + IP_A + ":";
        for (int rank = 0; rank < 2; rank++) {
            String line = job.lines(rank).stream().map(RankProcesses.Line::text)
                    .filter(l -> l.startsWith("NETNS-RANK ")).findFirst()
                    .orElseThrow(() -> new AssertionError("no result line\n" + job.allOutput()));
            System.out.println(NetnsBootstrapTest.class.getSimpleName() + ": " + line);
            assertTrue(line.startsWith("NETNS-RANK rank=" + rank + " size=2 perNode=1 "),
                    "each namespace is a host of its own: " + line);
            assertTrue(line.contains(book) && line.contains(",1@" + IP_B + ":"),
                    "the ranks listen on their veth addresses: " + line);
        }
    }
}
