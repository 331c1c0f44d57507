package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jmscclpp.bootstrap.RankProcesses;
import org.jmscclpp.bootstrap.VethPair;
import org.jmscclpp.core.collective.CollectiveKind;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A job that spans two hosts: two network namespaces joined by a veth pair, two rank processes in
 * each ({@link HostCollectiveRankMain}, the same program that checks the collectives on one host),
 * with a different {@code MSCCLPP_HOSTID} per namespace and {@code MSCCLPP_SOCKET_IFNAME} naming its
 * veth, ranks 0 and 2 on the first host and 1 and 3 on the second. The collective communicator sees
 * two hosts of two ranks and runs the hierarchical collectives (shared memory inside each host, the
 * network between them); every kind, on staged and registered buffers, in and out of place, every
 * element checked on every rank. Skipped with the reason where namespaces cannot be made.
 */
class HostCollectivesAcrossHostsTest {

    private static final String IP_A = "10.201.78.1";
    private static final String IP_B = "10.201.78.2";
    /** Any port: the namespace is this test's own. */
    private static final int ROOT_PORT = 29410;
    private static final Duration DEADLINE = Duration.ofSeconds(150);
    private static final List<String> KINDS = List.of("ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER", "BROADCAST",
            "REDUCE", "ALL_TO_ALL", "SEND");

    private static VethPair hosts;

    @RegisterExtension
    final RankProcesses.Tracker jobs = new RankProcesses.Tracker();

    @BeforeAll
    static void createHosts() throws IOException, InterruptedException {
        hosts = VethPair.create(HostCollectivesAcrossHostsTest.class.getSimpleName(), "jmscclpp", "jh", IP_A, IP_B);
    }

    @AfterAll
    static void deleteHosts() throws IOException, InterruptedException {
        if (hosts != null) {
            hosts.close();
            hosts = null;
        }
    }

    @Test
    @Timeout(240)
    void fourRanksOnTwoHostsAgreeOnEveryElementOfEveryKind() throws IOException {
        Path shm = Files.createTempDirectory("jmscclpp-hosts-");
        RankProcesses job = jobs.open("across-hosts", HostCollectiveRankMain.class);
        String root = IP_A + ":" + ROOT_PORT;
        int n = 4;
        for (int r = 0; r < n; r++) {
            int host = r % 2;
            job.start(r, hosts.exec(host), KINDS, Map.of(
                    "JMSCCLPP_RANK", Integer.toString(r),
                    "JMSCCLPP_WORLD_SIZE", Integer.toString(n),
                    "JMSCCLPP_LOCAL_RANK", Integer.toString(r / 2),
                    "MSCCLPP_COMM_ID", root,
                    "MSCCLPP_SOCKET_IFNAME", host == 0 ? hosts.vethA : hosts.vethB,
                    "MSCCLPP_HOSTID", "across-hosts-" + host,
                    // named, in any case: the rails' transport as a user would pin it
                    "MSCCLPP_RAIL_TRANSPORT", "ethernet",
                    "JMSCCLPP_SHM_DIR", shm.toString()));
        }
        long until = System.nanoTime() + DEADLINE.toNanos();
        for (int r = 0; r < n; r++) {
            int code = job.waitFor(r, Duration.ofNanos(Math.max(0, until - System.nanoTime())));
            assertEquals(0, code, "rank " + r + " failed\n" + job.allOutput());
        }
        int runs = KINDS.stream().mapToInt(k -> HostCollectiveRankMain.runs(CollectiveKind.valueOf(k))).sum();
        for (int r = 0; r < n; r++) {
            String want = "rank " + r + ": " + runs + " runs checked, 0 wrong";
            List<String> lines = job.lines(r).stream().map(RankProcesses.Line::text).toList();
            assertEquals(1, lines.stream().filter(want::equals).count(), want + "\n" + job.allOutput());
            // the tuning table's rows of topology hosts: 12 B flat, 20 KB two levels
            assertEquals(1, lines.stream().filter(("rank " + r + ": allReduce runs flat and hier")::equals).count(),
                    "the flat and the two-level algorithm\n" + job.allOutput());
        }
        System.out.println(HostCollectivesAcrossHostsTest.class.getSimpleName() + ": " + n + " ranks on 2 hosts, "
                + runs + " runs checked on each");
    }
}
