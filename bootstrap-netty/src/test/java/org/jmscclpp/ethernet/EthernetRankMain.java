package org.jmscclpp.ethernet;

import io.netty.util.ResourceLeakDetector;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.host.HostBackend;

/**
 * One rank of the two-process ETHERNET test, in a child JVM: arguments {@code rank}, the root's
 * {@code ip:port} (rank 0 hosts it). Joins with a {@link TcpBootstrap}, opens a host backend on a
 * directory of its own (the ranks share nothing but sockets), runs BasicWrite and the ping-pong
 * of {@link EthernetScenario}, and prints {@code ETHERNET-OK rank=R peerMapped=false} at the end.
 * Exits 0 on success, 1 on any failure (with the stack trace).
 */
final class EthernetRankMain {

    private EthernetRankMain() {
    }

    public static void main(String[] args) throws Exception {
        // Netty's leak detector at its strictest, as in the suite's own JVMs: a leak is logged here
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        int rank = Integer.parseInt(args[0]);
        Path dir = Files.createTempDirectory("jmscclpp-eth-" + rank);
        int code = 1;
        try (TcpBootstrap bs = TcpBootstrap.create(rank, 2, BootstrapOptions.builder()
                .initTimeout(Duration.ofSeconds(30)).operationTimeout(EthernetScenario.TIMEOUT).build());
             HostBackend backend = HostBackend.open(dir)) {
            bs.initialize(args[1]).block(Duration.ofSeconds(40));
            boolean mapped;
            try (EthernetScenario s = EthernetScenario.open(bs, backend)) {
                mapped = s.remote.isMapped();
                System.out.println("ETHERNET-CONNECTION " + s.connection);
                s.basicWrite();
                for (int ints : new int[] {1, 1 << 10, 1 << 20}) {
                    long t0 = System.nanoTime();
                    s.pingPong(ints, EthernetScenario.turns(ints));
                    System.out.println("PINGPONG ints=" + ints + " turns=" + EthernetScenario.turns(ints) + " ms="
                            + (System.nanoTime() - t0) / 1_000_000);
                }
            }
            System.out.println("ETHERNET-OK rank=" + rank + " peerMapped=" + mapped);
            code = 0;
        } catch (Throwable t) {
            t.printStackTrace(System.out);
        } finally {
            try (var files = Files.list(dir)) {
                files.forEach(f -> f.toFile().delete());
            }
            Files.deleteIfExists(dir);
        }
        System.out.flush();
        System.exit(code);
    }
}
