package org.jmscclpp.core.spi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Mono;

/** The communicator's use of a {@link TransportProvider} for a transport its backend lacks. */
class TransportProviderTest {

    @TempDir
    Path dir;

    @AfterEach
    void reset() {
        LoopbackTransportProvider.unavailable = null;
        LoopbackTransportProvider.CONNECTED_REMOTES.clear();
    }

    @Test
    void providersAreFoundByTransport() {
        assertSame(LoopbackTransportProvider.class, TransportProviders.find(Transport.IB7).getClass());
        assertNull(TransportProviders.find(Transport.IB6));
    }

    @Test
    void connectsAndWritesOverTheProvidersTransport() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir);
             DeviceBuffer b0 = g.backend.allocate(64); DeviceBuffer b1 = g.backend.allocate(64);
             Arena arena = Arena.ofConfined()) {
            TransportFlags flags = TransportFlags.of(Transport.HOST_IPC, LoopbackTransportProvider.TRANSPORT);
            RegisteredMemory m0 = g.comm(0).registerMemory(b0, flags);
            RegisteredMemory m1 = g.comm(1).registerMemory(b1, flags);
            assertEquals(2, LoopbackTransportProvider.REGISTRATIONS_OPEN.get());
            assertEquals(2, LoopbackTransportProvider.SESSIONS_OPEN.get());
            assertArrayEquals(new byte[] {(byte) Transport.IB7.ordinal(), 42}, m0.handle(Transport.IB7));

            List<Connection> connections = g.onEveryRank(r -> g.comm(r).connect(1 - r, 5,
                    EndpointConfig.of(LoopbackTransportProvider.TRANSPORT)));
            assertEquals(2, LoopbackTransportProvider.CONNECTED_REMOTES.size());
            assertTrue(LoopbackTransportProvider.CONNECTED_REMOTES.stream()
                    .allMatch(e -> e.transport() == Transport.IB7));
            RegisteredMemory peerOf0 = g.onEveryRank(r -> r == 0 ? g.comm(0).recvMemory(1, 6)
                    : g.comm(1).sendMemory(m1, 0, 6).then(Mono.just(m1))).getFirst();
            assertEquals(Transport.IB7.ordinal(), peerOf0.handle(Transport.IB7)[0]);

            MemorySegment src = arena.allocate(64);
            for (int i = 0; i < 16; i++) {
                src.setAtIndex(ValueLayout.JAVA_INT, i, 1000 + i);
            }
            g.backend.copyFromHost(b0, 0, src);
            connections.getFirst().write(peerOf0, 0, m0, 0, 64);
            connections.getFirst().flush().block(CommunicatorGroup.WAIT);
            MemorySegment back = arena.allocate(64);
            g.backend.copyToHost(back, b1, 0);
            assertEquals(-1, back.mismatch(src));

            m0.close();
            m1.close();
            assertEquals(0, LoopbackTransportProvider.REGISTRATIONS_OPEN.get());
        }
        assertEquals(0, LoopbackTransportProvider.SESSIONS_OPEN.get(), "sessions close with their communicators");
    }

    @Test
    void anUnavailableProviderIsAnErrorNamingItsReason() {
        LoopbackTransportProvider.unavailable = "no RDMA device in this test";
        try (CommunicatorGroup g = new CommunicatorGroup(1, dir); DeviceBuffer b = g.backend.allocate(64)) {
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> g.comm(0).registerMemory(b, TransportFlags.of(Transport.IB7)));
            assertEquals(ErrorCode.INVALID_USAGE, e.code());
            assertTrue(e.getMessage().contains("no RDMA device in this test"), e.getMessage());
            JmscclppException c = assertThrows(JmscclppException.class,
                    () -> g.comm(0).connect(0, 1, EndpointConfig.of(Transport.IB7)).block(CommunicatorGroup.WAIT));
            assertEquals(ErrorCode.INVALID_USAGE, c.code());
            assertTrue(c.getMessage().contains("no RDMA device in this test"), c.getMessage());
        }
        assertEquals(0, LoopbackTransportProvider.SESSIONS_OPEN.get());
    }

    @Test
    void aTransportNobodyOffersIsAnError() {
        try (CommunicatorGroup g = new CommunicatorGroup(1, dir)) {
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> g.comm(0).connect(0, 1, EndpointConfig.of(Transport.IB6)).block(CommunicatorGroup.WAIT));
            assertEquals(ErrorCode.INVALID_USAGE, e.code());
            assertNotNull(e.getMessage());
            assertTrue(e.getMessage().contains("IB6"), e.getMessage());
        }
    }
}
