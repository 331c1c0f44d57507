package org.jmscclpp.bootstrap;

import io.netty.util.ResourceLeakDetector;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.StringJoiner;
import org.jmscclpp.testkit.BootstrapChecks;

/**
 * One rank of {@link NetnsBootstrapTest}, run in its own JVM inside a network namespace:
 * {@code NetnsRankMain <rank> <nRanks> <root ip:port> <deadline seconds>}. Options come from the
 * environment ({@code MSCCLPP_SOCKET_IFNAME}, {@code MSCCLPP_HOSTID}); rank 0 hosts the root at
 * the address. Initializes, runs the conformance checks, meets the other ranks at a barrier so
 * none closes while another still checks, and prints one line the test parses:
 * <pre>NETNS-RANK rank=R size=N perNode=P book=0@ip:port,1@ip:port,...</pre>
 * Exit status 0 on success, 1 with the stack trace on stderr otherwise.
 */
public final class NetnsRankMain {

    private NetnsRankMain() {
    }

    public static void main(String[] args) {
        // Netty's leak detector at its strictest, as in the suite's own JVMs: a leak is logged here
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        int rank = Integer.parseInt(args[0]);
        int size = Integer.parseInt(args[1]);
        String root = args[2];
        Duration deadline = Duration.ofSeconds(Long.parseLong(args[3]));
        int status = 1;
        TcpBootstrap b = TcpBootstrap.create(rank, size);
        try {
            b.initialize(root).block(deadline);
            BootstrapChecks.runAll(List.of(b), deadline);
            b.barrier(deadline).block(deadline.plusSeconds(1));
            AddressBook book = b.addressBook();
            StringJoiner entries = new StringJoiner(",");
            for (int r = 0; r < size; r++) {
                InetSocketAddress a = book.address(r);
                entries.add(r + "@" + a.getAddress().getHostAddress() + ":" + a.getPort());
            }
            System.out.println("NETNS-RANK rank=" + rank + " size=" + size + " perNode=" + b.nRanksPerNode()
                    + " book=" + entries);
            status = 0;
        } catch (Throwable t) {
            t.printStackTrace();
        } finally {
            b.close();
        }
        System.out.flush();
        System.exit(status);
    }
}
