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
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ETHERNET between two rank JVMs ({@link EthernetRankMain}): on loopback everywhere, and across
 * two network namespaces joined by a veth pair (two "hosts": each its own {@code MSCCLPP_HOSTID},
 * {@code MSCCLPP_SOCKET_IFNAME} naming its veth) where {@code ip netns} works, skipped with the
 * reason where it does not. Namespaces are created under unique names and always deleted.
 */
class EthernetProcessTest {

    private static final Duration COMMAND_DEADLINE = Duration.ofSeconds(10);
    private static final Duration RANK_DEADLINE = Duration.ofSeconds(90);

    private record Result(int exitCode, String output) {
    }

    private static Result run(String... command) throws IOException, InterruptedException {
        File out = File.createTempFile("eth-cmd", ".txt");
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
                    fail("rank " + r + " did not finish within " + RANK_DEADLINE + "\n" + logs(logFiles));
                }
                assertEquals(0, ranks.get(r).exitValue(), "rank " + r + " failed\n" + logs(logFiles));
            }
        } finally {
            for (Process p : ranks) {
                if (p.isAlive()) {
                    p.destroyForcibly().waitFor(COMMAND_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
                }
            }
        }
        for (int r = 0; r < 2; r++) {
            String out = Files.readString(logFiles.get(r));
            assertTrue(out.contains("ETHERNET-OK rank=" + r + " peerMapped=false"), logs(logFiles));
            System.out.println(EthernetProcessTest.class.getSimpleName() + " rank " + r + ": "
                    + out.lines().filter(l -> l.startsWith("PINGPONG") || l.startsWith("ETHERNET-OK")).toList());
        }
    }

    private static String logs(List<Path> files) {
        StringBuilder sb = new StringBuilder();
        for (Path p : files) {
            sb.append("---- ").append(p.getFileName()).append('\n');
            try {
                sb.append(Files.readString(p));
            } catch (IOException e) {
                sb.append(e).append('\n');
            }
        }
        return sb.toString();
    }

    @Test
    void twoProcessesOnLoopback(@TempDir Path logs) throws IOException, InterruptedException {
        String root = "127.0.0.1:" + LocalJob.freeFixedPort();
        runJob(List.of(List.of(), List.of()), root, List.of(Map.of(), Map.of()), logs);
    }

    @Test
    void twoHostsInNetworkNamespaces(@TempDir Path logs) throws IOException, InterruptedException {
        Assumptions.assumeTrue(System.getProperty("os.name").startsWith("Linux"), "network namespaces are Linux only");
        String tag = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
        String nsA = "jmeth-" + tag + "-a";
        String nsB = "jmeth-" + tag + "-b";
        String vethA = "je" + tag + "a";
        String vethB = "je" + tag + "b";
        List<String> created = new ArrayList<>();
        try {
            Result probe;
            try {
                probe = run("ip", "netns", "add", nsA);
            } catch (IOException e) {
                System.out.println("EthernetProcessTest skipped: cannot run `ip` (" + e.getMessage() + ")");
                Assumptions.abort("cannot run `ip`: " + e.getMessage());
                return;
            }
            if (probe.exitCode() != 0) {
                String why = "`ip netns add` is not permitted here: " + probe.output().strip();
                System.out.println("EthernetProcessTest skipped: " + why);
                Assumptions.abort(why);
            }
            created.add(nsA);
            mustRun("ip", "netns", "add", nsB);
            created.add(nsB);
            mustRun("ip", "link", "add", vethA, "netns", nsA, "type", "veth", "peer", "name", vethB, "netns", nsB);
            mustRun("ip", "-n", nsA, "addr", "add", "10.202.78.1/30", "dev", vethA);
            mustRun("ip", "-n", nsB, "addr", "add", "10.202.78.2/30", "dev", vethB);
            for (String[] d : new String[][] {{nsA, vethA}, {nsB, vethB}}) {
                mustRun("ip", "-n", d[0], "link", "set", "lo", "up");
                mustRun("ip", "-n", d[0], "link", "set", d[1], "up");
            }
            awaitCarrier(nsA, vethA);
            awaitCarrier(nsB, vethB);
            runJob(List.of(List.of("ip", "netns", "exec", nsA), List.of("ip", "netns", "exec", nsB)),
                    "10.202.78.1:29411",
                    List.of(Map.of("MSCCLPP_SOCKET_IFNAME", vethA, "MSCCLPP_HOSTID", "eth-host-a"),
                            Map.of("MSCCLPP_SOCKET_IFNAME", vethB, "MSCCLPP_HOSTID", "eth-host-b")), logs);
        } finally {
            List<String> failures = new ArrayList<>();
            for (String ns : created) {
                Result r = run("ip", "netns", "del", ns);
                if (r.exitCode() != 0) {
                    failures.add(ns + ": " + r.output().strip());
                }
            }
            assertEquals(List.of(), failures, "namespaces left behind");
        }
    }

    /** The veth carrier comes up asynchronously, with no event to wait on from outside: poll, bounded. */
    private static void awaitCarrier(String ns, String dev) throws IOException, InterruptedException {
        long until = System.nanoTime() + COMMAND_DEADLINE.toNanos();
        while (true) {
            Result r = run("ip", "-n", ns, "-o", "link", "show", "dev", dev);
            if (r.exitCode() == 0 && r.output().contains("LOWER_UP") && r.output().contains("state UP")) {
                return;
            }
            if (System.nanoTime() > until) {
                fail(dev + " in " + ns + " is not up: " + r.output());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
    }
}
