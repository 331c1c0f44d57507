package org.jmscclpp.ethernet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.bootstrap.EventLoops;
import org.jmscclpp.core.host.HostBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An ETHERNET session given the service's event-loop group listens and receives on it, and leaves it running. */
class EthernetSessionGroupTest {

    @TempDir
    Path dir;

    @Test
    void aSessionOnASuppliedGroupAcceptsOnItAndLeavesItRunning() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("svc-io", true),
                NioIoHandler.newFactory());
        try (HostBackend backend = HostBackend.open(dir)) {
            try (EthernetSession session = new EthernetSession(backend, InetAddress.getLoopbackAddress(), group);
                 Socket peer = new Socket(session.listening().getAddress(), session.listening().getPort())) {
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (session.inboundCount() == 0 && System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
                List<Channel> inbound = session.inboundChannels();
                assertEquals(1, inbound.size(), "the peer's connection was accepted");
                assertSame(group, inbound.getFirst().eventLoop().parent(), "it runs on the service's group");
                assertEquals(0, EventLoops.users(), "the shared event loops were never started");
            }
            assertFalse(group.isShuttingDown(), "closing the session leaves the service's group running");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }
}
