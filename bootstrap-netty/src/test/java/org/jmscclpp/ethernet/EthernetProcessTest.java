package org.jmscclpp.ethernet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
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

    private List<String> runJob(String name, List<List<String>> prefixes, String root, List<Map<String, String>> envs) {
        return runJob(name, prefixes, List.of(root, root), envs);
    }

    /** Runs the two ranks, rank r given {@code roots.get(r)}; returns each rank's connection line. */
    private List<String> runJob(String name, List<List<String>> prefixes, List<String> roots,
            List<Map<String, String>> envs) {
        RankProcesses job = jobs.open(name, EthernetRankMain.class);
        for (int r = 0; r < 2; r++) {
            job.start(r, prefixes.get(r), List.of(Integer.toString(r), roots.get(r)), envs.get(r));
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
        List<String> connections = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            connections.add(job.lines(r).stream().map(RankProcesses.Line::text)
                    .filter(l -> l.startsWith("ETHERNET-CONNECTION ")).findFirst()
                    .orElseThrow(() -> new AssertionError("no connection line\n" + job.allOutput())));
        }
        return connections;
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

    @Test
    void twoProcessesOverIpv6Loopback() {
        assumeTrue(ipv6LoopbackWorks(), "no IPv6 loopback (::1) on this machine");
        String root = "[::1]:" + LocalJob.freeFixedPort();
        List<String> connections = runJob("eth-ipv6-loopback", List.of(List.of(), List.of()), root,
                List.of(Map.of(), Map.of()));
        for (String c : connections) {
            // the bootstrap listens on ::1 for a root there, and ETHERNET follows the bootstrap's choice
            assertTrue(c.contains("local=/[0:0:0:0:0:0:0:1]") && c.contains("remote=/[0:0:0:0:0:0:0:1]"), c);
        }
    }

    /**
     * Two "hosts" that share only IPv6 link-local addresses: each rank names the root's address with
     * its own interface as the scope ({@code [fe80::a%vethB]} in the second namespace), and the
     * addresses peers publish are scoped by the interface that reaches them on each side.
     */
    @Test
    void twoHostsOverIpv6LinkLocalInNetworkNamespaces() throws IOException, InterruptedException {
        try (VethPair hosts = VethPair.create("EthernetProcessTest", "jmeth6", "j6", "fe80::a", "fe80::b")) {
            List<String> connections = runJob("eth-netns-ipv6", List.of(hosts.exec(0), hosts.exec(1)),
                    List.of("[fe80::a%" + hosts.vethA + "]:29413", "[fe80::a%" + hosts.vethB + "]:29413"),
                    List.of(Map.of("MSCCLPP_SOCKET_IFNAME", hosts.vethA, "MSCCLPP_HOSTID", "eth6-host-a"),
                            Map.of("MSCCLPP_SOCKET_IFNAME", hosts.vethB, "MSCCLPP_HOSTID", "eth6-host-b")));
            // Java prints the scope as the interface index: what matters is that there is one
            assertTrue(connections.get(0).contains("local=/[fe80:0:0:0:0:0:0:a%")
                    && connections.get(0).contains("remote=/[fe80:0:0:0:0:0:0:b%"), connections.get(0));
            assertTrue(connections.get(1).contains("local=/[fe80:0:0:0:0:0:0:b%")
                    && connections.get(1).contains("remote=/[fe80:0:0:0:0:0:0:a%"), connections.get(1));
        }
    }

    private static boolean ipv6LoopbackWorks() {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress(InetAddress.getByName("::1"), 0));
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
