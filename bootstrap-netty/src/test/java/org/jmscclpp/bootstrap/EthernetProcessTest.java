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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ETHERNET between two rank JVMs ({@link EthernetRankMain}): on loopback everywhere, and across
 * two network namespaces joined by a veth pair (two "hosts": each its own {@code MSCCLPP_HOSTID},
 * {@code MSCCLPP_SOCKET_IFNAME} naming its veth) where {@code ip netns} works, skipped with the
 * reason where it does not. Namespaces are created under unique names and always deleted.
 */
class EthernetProcessTest {

    private static final Duration RANK_DEADLINE = Duration.ofSeconds(90);

    private static Process start(List<String> prefix, int rank, String root, Map<String, String> env, Path log)
            throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Dio.netty.leakDetection.level=paranoid",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath, EthernetRankMain.class.getName(),
                Integer.toString(rank), root));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("MSCCLPP_"));
        pb.environment().putAll(env);
        return pb.start();
    }

    private static void runJob(List<List<String>> prefixes, String root, List<Map<String, String>> envs, Path logs)
            throws IOException, InterruptedException {
        List<Process> ranks = new ArrayList<>();
        List<Path> logFiles = List.of(logs.resolve("rank0.log"), logs.resolve("rank1.log"));
        try {
            for (int r = 0; r < 2; r++) {
                ranks.add(start(prefixes.get(r), r, root, envs.get(r), logFiles.get(r)));
            }
            long until = System.nanoTime() + RANK_DEADLINE.toNanos();
            for (int r = 0; r < 2; r++) {
                if (!ranks.get(r).waitFor(Math.max(0, until - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    fail("rank " + r + " did not finish within " + RANK_DEADLINE + "\n" + VethPair.logs(logFiles));
                }
                assertEquals(0, ranks.get(r).exitValue(), "rank " + r + " failed\n" + VethPair.logs(logFiles));
            }
        } finally {
            for (Process p : ranks) {
                if (p.isAlive()) {
                    p.destroyForcibly().waitFor(VethPair.COMMAND_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
                }
            }
        }
        for (int r = 0; r < 2; r++) {
            String out = Files.readString(logFiles.get(r));
            assertTrue(out.contains("ETHERNET-OK rank=" + r + " peerMapped=false"), VethPair.logs(logFiles));
            System.out.println(EthernetProcessTest.class.getSimpleName() + " rank " + r + ": "
                    + out.lines().filter(l -> l.startsWith("PINGPONG") || l.startsWith("ETHERNET-OK")).toList());
        }
    }

    @Test
    void twoProcessesOnLoopback(@TempDir Path logs) throws IOException, InterruptedException {
        String root = "127.0.0.1:" + LocalJob.freeFixedPort();
        runJob(List.of(List.of(), List.of()), root, List.of(Map.of(), Map.of()), logs);
    }

    @Test
    void twoHostsInNetworkNamespaces(@TempDir Path logs) throws IOException, InterruptedException {
        try (VethPair hosts = VethPair.create("EthernetProcessTest", "jmeth", "je", "10.202.78.1", "10.202.78.2")) {
            runJob(List.of(hosts.exec(0), hosts.exec(1)), "10.202.78.1:29411",
                    List.of(Map.of("MSCCLPP_SOCKET_IFNAME", hosts.vethA, "MSCCLPP_HOSTID", "eth-host-a"),
                            Map.of("MSCCLPP_SOCKET_IFNAME", hosts.vethB, "MSCCLPP_HOSTID", "eth-host-b")), logs);
        }
    }
}
