package org.jmscclpp.core.host;

import static org.jmscclpp.core.host.HostBackendTest.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.HostIdentity;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import reactor.test.StepVerifier;

/**
 * {@link HostIpcConnection} writing into a peer's memory. The "peer" is this process under
 * another pid hash: its registered memory, deserialized, is mapped a second time through
 * {@link HostBackend#importMemory}, as a process of the same host would map it.
 */
class HostIpcConnectionTest {

    private static final int SIZE = 4096;
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();
    private static final ConnectionContext CONTEXT = new ConnectionContext(0, 1, 7);

    @TempDir
    Path dir;
    private HostBackend backend;
    private Communicator comm;
    private DeviceBuffer peerBuffer;
    private DeviceBuffer srcBuffer;
    private RegisteredMemory dst;
    private RegisteredMemory src;
    private Connection connection;

    @BeforeEach
    void setUp() {
        backend = HostBackend.open(dir);
        comm = Communicator.create(InMemoryBootstrap.group(1).get(0), backend);
        peerBuffer = backend.allocate(SIZE);
        dst = mappedAsByAnotherProcess(comm.registerMemory(peerBuffer, TransportFlags.of(Transport.HOST_IPC)));
        srcBuffer = backend.allocate(SIZE);
        for (int i = 0; i < SIZE; i++) {
            srcBuffer.hostSegment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 3 + 1));
        }
        src = comm.registerMemory(srcBuffer, TransportFlags.of(Transport.HOST_IPC));
        connection = backend.ipcTransport().open(backend).connect(backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.HOST_IPC)),
                peerEndpoint(HostIdentity.hostHash()), CONTEXT);
    }

    @AfterEach
    void tearDown() {
        connection.close();
        dst.close();
        src.close();
        peerBuffer.close();
        srcBuffer.close();
        comm.close();
        backend.close();
    }

    /** The memory as another process of this host would receive it: same host hash, another pid hash. */
    private RegisteredMemory mappedAsByAnotherProcess(RegisteredMemory memory) {
        byte[] wire = memory.serialize();
        ByteBuffer b = ByteBuffer.wrap(wire).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(32, b.getLong(32) ^ 0x5A5A5A5AL);   // pidHash, per RegisteredMemory's wire form
        RegisteredMemory m = RegisteredMemory.deserialize(wire, backend);
        assertTrue(m.isMapped());
        assertFalse(m.isLocal());
        assertNotEquals(memory.address(), m.address(), "a second mapping, not the same buffer");
        return m;
    }

    private static Endpoint peerEndpoint(long hostHash) {
        return new Endpoint(Transport.HOST_IPC, Device.CPU, -1, hostHash, HostIdentity.pidHash() ^ 1, new byte[0]);
    }

    private MemorySegment peerView() {
        return peerBuffer.hostSegment();
    }

    @Test
    void writeLandsInThePeersMemory() {
        connection.write(dst, 128, src, 64, 1000);
        MemorySegment view = peerView();
        for (int i = 0; i < SIZE; i++) {
            byte expected = i >= 128 && i < 1128 ? (byte) ((i - 128 + 64) * 3 + 1) : 0;
            assertEquals(expected, view.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
        }
        // the whole region, and nothing at all
        connection.write(dst, 0, src, 0, SIZE);
        assertEquals(-1, view.mismatch(srcBuffer.hostSegment()));
        connection.write(dst, SIZE, src, SIZE, 0);
    }

    @Test
    void writesOutsideTheRegionsAreInvalidAndChangeNothing() {
        List<Executable> bad = List.of(
                () -> connection.write(dst, -1, src, 0, 8),
                () -> connection.write(dst, 0, src, -1, 8),
                () -> connection.write(dst, 0, src, 0, -1),
                () -> connection.write(dst, SIZE - 4, src, 0, 8),
                () -> connection.write(dst, 0, src, SIZE - 4, 8),
                () -> connection.write(dst, 0, src, 0, SIZE + 1),
                () -> connection.write(dst, Long.MAX_VALUE, src, 0, 8),
                () -> connection.write(dst, 8, src, 0, Long.MAX_VALUE));
        for (Executable e : bad) {
            JmscclppException ex = assertCode(ErrorCode.INVALID_USAGE, e);
            assertNamesTheConnection(ex, "write");
        }
        assertUntouched();
    }

    @Test
    void writesToMemoryWithoutHostIpcOrNotMappedHereAreInvalid() {
        try (RegisteredMemory ethernetOnly = comm.registerMemory(peerBuffer, TransportFlags.of(Transport.ETHERNET));
             RegisteredMemory otherHost = fromAnotherHost(comm.registerMemory(peerBuffer,
                     TransportFlags.of(Transport.HOST_IPC)))) {
            JmscclppException e = assertCode(ErrorCode.INVALID_USAGE, () -> connection.write(ethernetOnly, 0, src, 0, 8));
            assertNamesTheConnection(e, "write");
            assertTrue(e.getMessage().contains("HOST_IPC"), e.getMessage());
            assertCode(ErrorCode.INVALID_USAGE, () -> connection.updateAndSync(ethernetOnly, 0, new AtomicLong(), 1));
            assertFalse(otherHost.isMapped());
            e = assertCode(ErrorCode.INVALID_USAGE, () -> connection.write(otherHost, 0, src, 0, 8));
            assertNamesTheConnection(e, "write");
            // nor may the source be memory this process cannot reach
            e = assertCode(ErrorCode.INVALID_USAGE, () -> connection.write(dst, 0, otherHost, 0, 8));
            assertNamesTheConnection(e, "write");
        }
        assertUntouched();
    }

    @Test
    void closedMemoryIsInvalid() {
        RegisteredMemory closedSrc = comm.registerMemory(srcBuffer, TransportFlags.of(Transport.HOST_IPC));
        closedSrc.close();
        assertNamesTheConnection(assertCode(ErrorCode.INVALID_USAGE, () -> connection.write(dst, 0, closedSrc, 0, 8)),
                "write");
        RegisteredMemory closedDst = mappedAsByAnotherProcess(comm.registerMemory(peerBuffer,
                TransportFlags.of(Transport.HOST_IPC)));
        closedDst.close();
        assertNamesTheConnection(assertCode(ErrorCode.INVALID_USAGE, () -> connection.write(closedDst, 0, src, 0, 8)),
                "write");
        assertNamesTheConnection(assertCode(ErrorCode.INVALID_USAGE,
                () -> connection.updateAndSync(closedDst, 0, new AtomicLong(), 1)), "updateAndSync");
        assertUntouched();
    }

    @Test
    void updateAndSyncStoresTheTokenAndSetsTheLocalCopy() {
        AtomicLong token = new AtomicLong();
        connection.updateAndSync(dst, 8, token, 42);
        assertEquals(42, token.get());
        assertEquals(42L, (long) WORD.getAcquire(peerView(), 8L));
        connection.updateAndSync(dst, SIZE - 8, token, -3);
        assertEquals(-3, token.get());
        assertEquals(-3L, (long) WORD.getAcquire(peerView(), (long) SIZE - 8));
    }

    @Test
    void updateAndSyncOutsideOrMisalignedIsInvalidAndChangesNothing() {
        AtomicLong token = new AtomicLong(5);
        for (long offset : new long[]{-8, -1, 4, 12, SIZE - 4, SIZE, SIZE + 8, Long.MAX_VALUE, Long.MIN_VALUE}) {
            JmscclppException e = assertCode(ErrorCode.INVALID_USAGE,
                    () -> connection.updateAndSync(dst, offset, token, 99));
            assertNamesTheConnection(e, "updateAndSync");
            assertEquals(5, token.get(), "the local token is only set once the store happens");
        }
        assertUntouched();
    }

    @Test
    void tokensPublishTheWritesBeforeThem() throws Exception {
        // writer: block i at offset 64 + 8i, then token = i; reader (the peer's own view): token i => blocks 1..i
        int blocks = (SIZE - 64) / 8;
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread reader = Thread.ofPlatform().name("token-reader").start(() -> {
            MemorySegment view = peerView();
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            long seen = 0;
            try {
                while (seen < blocks) {
                    long t = (long) WORD.getAcquire(view, 0L);
                    for (long i = seen + 1; i <= t; i++) {
                        long v = view.get(ValueLayout.JAVA_LONG, 64 + 8 * (i - 1));
                        if (v != i * 0x0101L) {
                            throw new AssertionError("token " + t + " but block " + i + " holds " + v);
                        }
                    }
                    seen = t;
                    if (System.nanoTime() - deadline > 0) {
                        throw new AssertionError("token stuck at " + seen);
                    }
                    Thread.onSpinWait();
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        AtomicLong token = new AtomicLong();
        MemorySegment s = srcBuffer.hostSegment();
        for (int i = 1; i <= blocks; i++) {
            s.set(ValueLayout.JAVA_LONG, 0, i * 0x0101L);
            connection.write(dst, 64 + 8L * (i - 1), src, 0, 8);
            connection.updateAndSync(dst, 0, token, i);
        }
        assertTrue(reader.join(Duration.ofSeconds(60)), "the reader did not finish");
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
    }

    @Test
    void flushCompletesWhileOpenAndFailsOnceClosed() {
        StepVerifier.create(connection.flush(Duration.ofSeconds(1))).expectComplete().verify(Duration.ofSeconds(5));
        StepVerifier.create(connection.flush()).expectComplete().verify(Duration.ofSeconds(5));
        var lazy = connection.flush(Duration.ofSeconds(1));
        connection.close();
        StepVerifier.create(lazy).expectErrorSatisfies(e -> {
            JmscclppException ex = (JmscclppException) e;
            assertEquals(ErrorCode.INVALID_USAGE, ex.code());
            assertNamesTheConnection(ex, "flush");
        }).verify(Duration.ofSeconds(5));
    }

    @Test
    void everyOperationAfterCloseIsInvalid() {
        connection.close();
        connection.close();
        assertNamesTheConnection(assertCode(ErrorCode.INVALID_USAGE, () -> connection.write(dst, 0, src, 0, 8)), "write");
        assertNamesTheConnection(assertCode(ErrorCode.INVALID_USAGE,
                () -> connection.updateAndSync(dst, 0, new AtomicLong(), 1)), "updateAndSync");
        assertUntouched();
    }

    @Test
    void describesItself() {
        assertEquals(Transport.HOST_IPC, connection.transport());
        assertEquals(Transport.HOST_IPC, connection.remoteTransport());
        assertEquals(Device.CPU, connection.localDevice());
        assertSame(CONTEXT, connection.context());
        assertEquals(-1, connection.maxWriteQueueSize());
        try (Connection deep = backend.ipcTransport().open(backend).connect(backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.builder(Transport.HOST_IPC)
                .maxWriteQueueSize(16).build()), peerEndpoint(HostIdentity.hostHash()), CONTEXT)) {
            assertEquals(16, deep.maxWriteQueueSize());
        }
    }

    @Test
    void connectingToAnotherHostOrTransportIsInvalidNamingThePeer() {
        Endpoint local = backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.HOST_IPC));
        JmscclppException e = assertCode(ErrorCode.INVALID_USAGE, () -> backend.ipcTransport().open(backend).connect(local,
                peerEndpoint(HostIdentity.hostHash() ^ 0x1234), CONTEXT));
        assertTrue(e.getMessage().contains("HOST_IPC connects ranks of one host; rank 1 is on another host"),
                e.getMessage());
        assertNamesTheConnection(e, "connect");
        Endpoint ethernet = new Endpoint(Transport.ETHERNET, Device.CPU, -1, HostIdentity.hostHash(),
                HostIdentity.pidHash() ^ 1, new byte[6]);
        assertNamesTheConnection(assertCode(ErrorCode.INVALID_USAGE, () -> backend.ipcTransport().open(backend).connect(local, ethernet, CONTEXT)),
                "connect");
        assertNamesTheConnection(assertCode(ErrorCode.INVALID_USAGE, () -> backend.ipcTransport().open(backend).connect(ethernet, local, CONTEXT)),
                "connect");
        // an endpoint this process did not make is not a local endpoint
        assertNamesTheConnection(assertCode(ErrorCode.INVALID_USAGE, () -> backend.ipcTransport().open(backend).connect(
                peerEndpoint(HostIdentity.hostHash()), local, CONTEXT)), "connect");
        backend.close();
        assertNamesTheConnection(assertCode(ErrorCode.INVALID_USAGE, () -> backend.ipcTransport().open(backend).connect(local,
                peerEndpoint(HostIdentity.hostHash()), CONTEXT)), "connect");
    }

    private RegisteredMemory fromAnotherHost(RegisteredMemory memory) {
        try (memory) {
            byte[] wire = memory.serialize();
            ByteBuffer b = ByteBuffer.wrap(wire).order(ByteOrder.LITTLE_ENDIAN);
            b.putLong(24, b.getLong(24) ^ 0x77L);   // hostHash
            return RegisteredMemory.deserialize(wire, backend);
        }
    }

    private void assertUntouched() {
        assertEquals(-1, peerView().mismatch(MemorySegment.ofArray(new byte[SIZE])), "the peer's memory changed");
    }

    private static void assertNamesTheConnection(JmscclppException e, String phase) {
        assertEquals(0, e.rank(), e::getMessage);
        assertEquals(1, e.peer(), e::getMessage);
        assertEquals(7, e.tag(), e::getMessage);
        assertEquals(phase, e.phase(), e::getMessage);
    }
}
