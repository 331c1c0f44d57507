package org.jmscclpp.ethernet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jmscclpp.bootstrap.LocalJob;
import org.jmscclpp.bootstrap.RankProcesses;
import org.jmscclpp.bootstrap.VethPair;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * ETHERNET between two rank JVMs ({@link EthernetRankMain}): on loopback everywhere, and across
 * two network namespaces joined by a veth pair (two "hosts": each its own {@code MSCCLPP_HOSTID},
 * {@code MSCCLPP_SOCKET_IFNAME} naming its veth) where {@code ip netns} works, skipped with the
 * reason where it does not. Namespaces are created under unique names and always deleted.
 */
class EthernetProcessTest {

    private static final Duration RANK_DEADLINE = Duration.ofSeconds(90);

    @RegisterExtension
    final RankProcesses.Tracker jobs = new RankProcesses.Tracker();

    private void runJob(String name, List<List<String>> prefixes, String root, List<Map<String, String>> envs) {
        RankProcesses job = jobs.open(name, EthernetRankMain.class);
        for (int r = 0; r < 2; r++) {
            job.start(r, prefixes.get(r), List.of(Integer.toString(r), root), envs.get(r));
        }
        long until = System.nanoTime() + RANK_DEADLINE.toNanos();
        for (int r = 0; r < 2; r++) {
            int code = job.waitFor(r, Duration.ofNanos(Math.max(0, until - System.nanoTime())));
            assertEquals(0, code, "rank " + r + " failed\n" + job.allOutput());
        }
        for (int r = 0; r < 2; r++) {
            List<String> out = job.lines(r).stream().map(RankProcesses.Line::text).toList();
            assertTrue(out.contains("ETHERNET-OK rank=" + r + " peerMapped=false"), job.allOutput());
            System.out.println(EthernetProcessTest.class.getSimpleName() + " rank " + r + ": "
                    + out.stream().filter(l -> l.startsWith("PINGPONG") || l.startsWith("ETHERNET-OK")).toList());
        }
    }

    @Test
    void twoProcessesOnLoopback() {
        String root = "127.0.0.1:" + LocalJob.freeFixedPort();
        runJob("eth-loopback", List.of(List.of(), List.of()), root, List.of(Map.of(), Map.of()));
    }

    @Test
    void twoHostsInNetworkNamespaces() throws IOException, InterruptedException {
        try (VethPair hosts = VethPair.create("EthernetProcessTest", "jmeth", "je", "10.202.78.1", "10.202.78.2")) {
            runJob("eth-netns", List.of(hosts.exec(0), hosts.exec(1)), "10.202.78.1:29411",
                    List.of(Map.of("MSCCLPP_SOCKET_IFNAME", hosts.vethA, "MSCCLPP_HOSTID", "eth-host-a"),
                            Map.of("MSCCLPP_SOCKET_IFNAME", hosts.vethB, "MSCCLPP_HOSTID", "eth-host-b")));
        }
    }
}
