package org.jmscclpp.ethernet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jmscclpp.bootstrap.EventLoops;
import org.jmscclpp.bootstrap.ResourceSnapshot;
import org.jmscclpp.bootstrap.wire.Proofs;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.TransportProviders;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.util.RaceTestUtils;

/**
 * ETHERNET between two ranks of this JVM (a thread each, an in-memory bootstrap, the host
 * backend): BasicWrite, PortChannel ping-pong, writes above the chunk size on both the direct and
 * the staged path, bad input on a rank's port while the job goes on, a dead peer, a flush
 * deadline; and after each test no event-loop user, thread or socket is left.
 */
class EthernetConnectionTest {

    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    private HostBackend backend;
    private ResourceSnapshot before;

    /**
     * One session opened and closed first: the JDK and Netty open a few descriptors once per JVM
     * (interface enumeration, native transport), which are not this test's to count.
     */
    @org.junit.jupiter.api.BeforeAll
    static void warmUp(@TempDir Path warm) {
        try (HostBackend b = HostBackend.open(warm); EthernetSession s = new EthernetSession(b)) {
            assertTrue(s.listening().getPort() > 0);
            try (Socket probe = new Socket()) {
                probe.connect(s.listening(), 5000);
            }
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    @BeforeEach
    void open() {
        before = ResourceSnapshot.quiescent(Duration.ofSeconds(10));
        backend = HostBackend.open(dir);
    }

    @AfterEach
    void leaks() {
        backend.close();
        assertEquals(0, EventLoops.users(), "every session gave the event loops back");
        ResourceSnapshot after = ResourceSnapshot.quiescent(Duration.ofSeconds(10));
        assertEquals(sockets(before), sockets(after), () -> "sockets left open: " + netTcp());
    }

    private static String netTcp() {
        try {
            return java.nio.file.Files.readString(Path.of("/proc/net/tcp")) + java.nio.file.Files.readString(Path.of("/proc/net/tcp6"));
        } catch (IOException e) {
            return e.toString();
        }
    }

    private static List<String> sockets(ResourceSnapshot s) {
        return s.fds().values().stream().filter(v -> v.startsWith("socket:")).sorted().toList();
    }

    /** Runs {@code body} on both ranks at once, each with its scenario, and closes them. */
    private void onBothRanks(Consumer<EthernetScenario> body) throws Exception {
        List<InMemoryBootstrap> boots = InMemoryBootstrap.group(2);
        List<CompletableFuture<Void>> ranks = new ArrayList<>();
        for (InMemoryBootstrap b : boots) {
            ranks.add(CompletableFuture.runAsync(() -> {
                try (EthernetScenario s = EthernetScenario.open(b, backend)) {
                    body.accept(s);
                }
            }, r -> Thread.ofPlatform().name("rank-" + b.rank()).start(r)));
        }
        try {
            Exception first = null;
            for (CompletableFuture<Void> f : ranks) {
                try {
                    f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                } catch (Exception e) {
                    if (first == null) {
                        first = e;
                    } else {
                        first.addSuppressed(e);
                    }
                }
            }
            if (first != null) {
                throw first;
            }
        } finally {
            boots.forEach(InMemoryBootstrap::close);
        }
    }

    @Test
    void writeAndUpdateStoresTheBytesBeforeTheTokenAndRefusesAMisalignedToken() throws Exception {
        onBothRanks(EthernetScenario::writeAndUpdate);
    }

    @Test
    void basicWriteAndPingPong() throws Exception {
        onBothRanks(s -> {
            assertEquals(org.jmscclpp.core.Transport.ETHERNET, s.connection.transport());
            s.basicWrite();
            for (int ints : new int[] {1, 1 << 10, 1 << 20}) {
                s.pingPong(ints, EthernetScenario.turns(ints));
            }
        });
    }

    /**
     * Several threads write and flush one connection at once, half the rounds with
     * {@link EthernetConnection#awaitFlush} (one caller at a time reads the acks on its own thread,
     * the others wait as subscribers) and half by blocking on the flush Mono; every flush completes
     * and every byte lands.
     */
    @Test
    void concurrentBlockingFlushesAllComplete() throws Exception {
        int threads = 4;
        int rounds = 200;
        int bytes = 4096;
        onBothRanks(s -> {
            MemorySegment src = s.source.hostSegment();
            for (int i = 0; i < threads * bytes; i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (s.rank * 7 + i));
            }
            List<CompletableFuture<Void>> writers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long at = (long) t * bytes;
                writers.add(CompletableFuture.runAsync(() -> {
                    for (int r = 0; r < rounds; r++) {
                        s.connection.write(s.remote, at, s.localSource, at, bytes);
                        if (r % 2 == 0) {
                            s.connection.awaitFlush(EthernetScenario.TIMEOUT);
                        } else {
                            s.connection.flush(EthernetScenario.TIMEOUT).then().block(EthernetScenario.TIMEOUT);
                        }
                    }
                }, r -> Thread.ofPlatform().name("writer-" + s.rank).start(r)));
            }
            writers.forEach(w -> w.orTimeout(60, TimeUnit.SECONDS).join());
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
            MemorySegment got = s.buffer.hostSegment();
            for (int i = 0; i < threads * bytes; i++) {
                assertEquals((byte) (s.peer * 7 + i), got.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
        });
    }

    /**
     * While a caller waits in {@link EthernetConnection#awaitFlush}, the connection's ack thread
     * stays off the socket and the caller reads its acks itself: both watching the socket woke both
     * for every ack, and the ack thread took it (and then had to wake the caller) in 46% of 8000
     * flushes traced on the 2-core VM. A few may still land on the ack thread: one that arrives
     * between a write and its flush, when the thread looks in. A flusher that read its ack itself
     * is not woken for it. A subscribed flush afterwards wakes the thread, and completes.
     */
    @Test
    void aBlockingFlushReadsItsAcksItselfWhileTheAckThreadStaysOffTheSocket() throws Exception {
        int rounds = 1000;
        onBothRanks(s -> {
            EthernetConnection c = (EthernetConnection) TransportProviders.unwrap(s.connection);
            s.connection.write(s.remote, 0, s.localSource, 0, 4096);
            s.connection.awaitFlush(EthernetScenario.TIMEOUT);
            long before = c.acksReadByTheAckThread();
            long wakeupsBefore = c.flusherWakeups();
            for (int r = 0; r < rounds; r++) {
                s.connection.write(s.remote, 0, s.localSource, 0, 4096);
                s.connection.awaitFlush(EthernetScenario.TIMEOUT);
            }
            long onAckThread = c.acksReadByTheAckThread() - before;
            assertTrue(onAckThread < rounds / 20, "the ack thread read " + onAckThread + " of " + rounds
                    + " acks that a blocking flush waited for");
            // the flusher read (nearly) every ack itself: nobody had to wake it, and it did not wake
            // itself (which cost four system calls per flush: the wake-up, the next wait it ended, the
            // drain of the wake-up, an empty read)
            long wakeups = c.flusherWakeups() - wakeupsBefore;
            assertTrue(wakeups <= onAckThread + rounds / 100, wakeups + " wake-ups of " + rounds + " blocking flushes");
            s.connection.write(s.remote, 0, s.localSource, 0, 4096);
            s.connection.flush(EthernetScenario.TIMEOUT).block(EthernetScenario.TIMEOUT.plusSeconds(5));
            assertTrue(c.acksReadByTheAckThread() > before + onAckThread, "the subscribed flush's ack");
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
        });
    }

    /**
     * A subscribed flush cancelled while a blocking flush of the same connection reads the ack
     * (raced with {@link RaceTestUtils}): the blocking one completes, and the cancelled one leaves
     * no waiter behind on the connection.
     */
    @Test
    void aFlushCancelledWhileItsAckArrivesLeavesNoWaiterBehind() throws Exception {
        onBothRanks(s -> {
            EthernetConnection c = (EthernetConnection) TransportProviders.unwrap(s.connection);
            for (int round = 0; round < 200; round++) {
                s.connection.write(s.remote, 0, s.localSource, 0, 256);
                RaceTestUtils.race(() -> s.connection.flush(EthernetScenario.TIMEOUT).subscribe().dispose(),
                        () -> s.connection.awaitFlush(EthernetScenario.TIMEOUT));
            }
            s.connection.awaitFlush(EthernetScenario.TIMEOUT);
            assertEquals(0, c.waitingFlushes(), "cancelled flushes left waiters behind");
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
        });
    }

    /**
     * Staged path: the source is copied into staging chunks, the bodies gathered and applied off
     * the event loop, as for device memory.
     */
    @Test
    void writesAboveTheChunkSizeOnTheStagedPath() throws Exception {
        writeAboveTheChunkSize(true);
    }

    /**
     * Direct path: bodies go out from the source and are read by the socket straight into the
     * destination ({@link EthernetReceiveBuffers}), from an odd offset, with a tail below
     * {@link EthernetReceiver#LEND_MIN}; the bytes around the range stay as they were.
     */
    @Test
    void writesAboveTheChunkSizeOnTheDirectPath() throws Exception {
        writeAboveTheChunkSize(false);
    }

    private void writeAboveTheChunkSize(boolean devicePaths) throws Exception {
        onBothRanks(s -> {
            ((EthernetConnection) TransportProviders.unwrap(s.connection)).session().forceDevicePaths(devicePaths);
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
            MemorySegment src = s.source.hostSegment();
            long n = 5L * EthernetWire.MAX_CHUNK + 3;   // > every staging chunk, odd tail
            for (long i = 0; i < n; i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + s.rank));
            }
            s.connection.write(s.remote, 1, s.localSource, 0, n);
            s.connection.awaitFlush(EthernetScenario.TIMEOUT);
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
            MemorySegment got = s.buffer.hostSegment();
            assertEquals(0, got.get(ValueLayout.JAVA_BYTE, 0), "byte before the range");
            for (long i = 0; i < n; i++) {
                if (got.get(ValueLayout.JAVA_BYTE, i + 1) != (byte) (i * 31 + s.peer)) {
                    throw new AssertionError("rank " + s.rank + ": byte " + i + " differs");
                }
            }
            assertEquals(0, got.get(ValueLayout.JAVA_BYTE, n + 1), "byte after the range");
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
            ((EthernetConnection) TransportProviders.unwrap(s.connection)).session().forceDevicePaths(false);
        });
    }

    private static byte[] frame(byte type, int length, long seq, long region, long offset, int bodyBytes) {
        ByteBuffer b = ByteBuffer.allocate(EthernetWire.HEADER_BYTES + bodyBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.put(type).put((byte) 0).putShort((short) 0).putInt(length).putLong(seq).putLong(region).putLong(offset);
        while (b.hasRemaining()) {
            b.put((byte) 0x66);
        }
        return b.array();
    }

    /**
     * Sends {@code parts} to the listener, after a handshake with a proof of {@code secret} when it
     * is not null, and returns the ERROR reason it answers with before closing.
     */
    private static String attack(InetSocketAddress at, byte @Nullable [] secret, byte[]... parts) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(at, 5000);
            s.setSoTimeout(15_000);
            if (secret != null) {
                EthernetHandshakes.dial(s, secret);
            }
            OutputStream out = s.getOutputStream();
            for (byte[] p : parts) {
                out.write(p);
            }
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            String reason = null;
            byte[] header = new byte[EthernetWire.HEADER_BYTES];
            while (reason == null) {
                in.readFully(header);
                ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
                if (h.get(0) == EthernetWire.ERROR) {
                    byte[] text = new byte[h.getInt(4)];
                    in.readFully(text);
                    reason = new String(text, StandardCharsets.UTF_8);
                } else {
                    in.skipNBytes(h.getInt(4));   // the CHALLENGE's body
                }
            }
            InputStream raw = s.getInputStream();
            assertEquals(-1, raw.read(), "the listener closes after the ERROR frame");
            return reason;
        }
    }

    @Test
    void badInputIsRejectedWithoutCorruptionAndTheJobGoesOn() throws Exception {
        onBothRanks(s -> {
            EthernetSession mine = ((EthernetConnection) TransportProviders.unwrap(s.connection)).session();
            long region = EthernetWire.region(s.local.handle(org.jmscclpp.core.Transport.ETHERNET));
            MemorySegment b = s.buffer.hostSegment();
            b.fill((byte) 0x11);
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
            if (s.rank == 1) {
                try {
                    InetSocketAddress at = mine.listening();
                    byte[] wrong = mine.secret().clone();
                    wrong[0] ^= 0x40;
                    byte[] secret = mine.secret();
                    Map<String, Object[]> attacks = new java.util.LinkedHashMap<>();
                    List.<Object[]>of(
                            new Object[] {"not a jmscclpp ETHERNET connection", null, new byte[][] {new byte[200]}},
                            // nothing after the wrong proof: the listener closes at once, and bytes it
                            // never read would reset the connection before its ERROR frame is read
                            new Object[] {"wrong proof of the endpoint secret", wrong, new byte[0][]},
                            new Object[] {"a WRITE body is 1 to", secret,
                                    new byte[][] {frame(EthernetWire.WRITE, Integer.MAX_VALUE, 1, region, 0, 1024)}},
                            new Object[] {"outside the region", secret, new byte[][] {
                                    frame(EthernetWire.WRITE, 4096, 1, region, EthernetScenario.BUFFER_BYTES - 100, 4096)}},
                            new Object[] {"no buffer of this process", secret, new byte[][] {
                                    frame(EthernetWire.WRITE, 16, 1, region ^ 0x5555, 0, 16)}})
                            .forEach(x -> attacks.put((String) x[0], new Object[] {x[1], x[2]}));
                    for (var e : attacks.entrySet()) {
                        System.out.println("attack: " + e.getKey());
                        String reason = attack(at, (byte[]) e.getValue()[0], (byte[][]) e.getValue()[1]);
                        assertTrue(reason.contains(e.getKey()), "expected '" + e.getKey() + "' in: " + reason);
                    }
                    // an honest handshake's bytes, recorded and replayed on another connection
                    byte[] recorded;
                    try (Socket honest = new Socket()) {
                        honest.connect(at, 5000);
                        recorded = EthernetHandshakes.dial(honest, secret);
                    }
                    String reason = attack(at, null, recorded);
                    assertTrue(reason.contains("wrong proof of the endpoint secret"), "replay: " + reason);
                } catch (IOException e) {
                    throw new AssertionError(e);
                }
                for (long i = 0; i < EthernetScenario.BUFFER_BYTES; i++) {
                    if (b.get(ValueLayout.JAVA_BYTE, i) != 0x11) {
                        throw new AssertionError("byte " + i + " of rank 1's buffer was changed by an attack");
                    }
                }
            }
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
            // the real connections were not disturbed
            s.basicWrite();
            s.pingPong(1 << 10, 20);
        });
    }

    @Test
    void aDeadPeerIsARemoteErrorOnFlush() throws Exception {
        onBothRanks(s -> {
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
            if (s.rank == 1) {
                s.comm.close();   // its session closes the receiving end of rank 0's connection
            }
            s.bootstrap.barrier(EthernetScenario.TIMEOUT).block();
            if (s.rank == 0) {
                JmscclppException e = assertThrows(JmscclppException.class, () -> {
                    long until = System.nanoTime() + EthernetScenario.TIMEOUT.toNanos();
                    // the close reaches this side asynchronously; until it has, writes are still taken
                    while (System.nanoTime() < until) {
                        s.connection.write(s.remote, 0, s.localSource, 0, 4096);
                        s.connection.awaitFlush(EthernetScenario.TIMEOUT);
                    }
                });
                assertEquals(ErrorCode.REMOTE_ERROR, e.code(), e.getMessage());
                assertEquals(1, e.peer());
                assertEquals(0, e.rank());
            }
        });
    }

    @Test
    void aPeerThatNeverAcknowledgesMakesFlushTimeOut() throws Exception {
        try (ServerSocket fake = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
             EthernetSession session = new EthernetSession(backend, java.net.InetAddress.getLoopbackAddress())) {
            CompletableFuture<Socket> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    Socket peer = fake.accept();
                    byte[] hello = peer.getInputStream().readNBytes(EthernetWire.HELLO_BYTES);
                    byte[] challenge = EthernetHandshakes.challenge(new byte[EthernetWire.SECRET_BYTES], hello);
                    peer.getOutputStream().write(challenge);
                    byte[] proof = peer.getInputStream().readNBytes(Proofs.BYTES);
                    assertArrayEquals(EthernetHandshakes.proof(new byte[EthernetWire.SECRET_BYTES], hello, challenge),
                            proof, "the dialler proves the secret of the endpoint it dialled");
                    return peer;
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            byte[] secret = new byte[EthernetWire.SECRET_BYTES];
            Endpoint remote = new Endpoint(org.jmscclpp.core.Transport.ETHERNET, backend.device(), -1, 1, 2,
                    EthernetWire.endpointInfo(secret, (InetSocketAddress) fake.getLocalSocketAddress()));
            Endpoint local = session.createEndpoint(EthernetScenario.ETHERNET);
            try (var buffer = backend.allocate(64);
                 EthernetConnection c = (EthernetConnection) session.connect(local, remote, new ConnectionContext(3, 4, 5));
                 Socket peer = accepted.get(10, TimeUnit.SECONDS)) {
                var mem = org.jmscclpp.core.Communicator.create(InMemoryBootstrap.group(1).getFirst(), backend);
                try (mem) {
                    var reg = mem.registerMemory(buffer, org.jmscclpp.core.TransportFlags.of(
                            org.jmscclpp.core.Transport.ETHERNET));
                    c.write(reg, 0, reg, 0, 64);
                    // awaitFlush: the caller waits in its own selector; the Mono: the ack thread keeps the deadline
                    List<org.junit.jupiter.api.function.Executable> waits = List.of(
                            () -> c.awaitFlush(Duration.ofMillis(300)),
                            () -> c.flush(Duration.ofMillis(300)).block(),
                            () -> c.flush(Duration.ofMillis(300)).block(Duration.ofSeconds(10)));
                    for (var wait : waits) {
                        long t0 = System.nanoTime();
                        JmscclppException e = assertThrows(JmscclppException.class, wait);
                        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                        assertTrue(ms >= 290, "failed after " + ms + " ms, before its deadline");
                        assertEquals(ErrorCode.TIMEOUT, e.code());
                        assertEquals(3, e.rank());
                        assertEquals(4, e.peer());
                        assertEquals(5, e.tag());
                        assertEquals("flush", e.phase());
                    }
                    // Mono.block(limit) shorter than the flush's own deadline: Reactor's exception
                    IllegalStateException limit = assertThrows(IllegalStateException.class,
                            () -> c.flush(Duration.ofSeconds(30)).block(Duration.ofMillis(100)));
                    assertTrue(limit.getMessage().startsWith("Timeout on blocking read"), limit.getMessage());
                    // on a non-blocking thread awaitFlush is refused, as block() is
                    Throwable onParallel = Mono.fromRunnable(() -> c.awaitFlush(Duration.ofSeconds(10)))
                            .subscribeOn(Schedulers.parallel()).then(Mono.<Throwable>empty())
                            .onErrorResume(Mono::just).block(Duration.ofSeconds(10));
                    assertTrue(onParallel instanceof IllegalStateException, String.valueOf(onParallel));
                    // what the peer got: the WRITE, then one SYNC that every flush above waited for
                    // (the later flushes found the last frame sent already a SYNC and sent none)
                    var in = peer.getInputStream();
                    var write = EthernetWire.readHeader(io.netty.buffer.Unpooled.wrappedBuffer(
                            in.readNBytes(EthernetWire.HEADER_BYTES)));
                    assertEquals(EthernetWire.WRITE, write.type());
                    assertEquals(64, in.readNBytes(64).length);
                    var sync = EthernetWire.readHeader(io.netty.buffer.Unpooled.wrappedBuffer(
                            in.readNBytes(EthernetWire.HEADER_BYTES)));
                    assertEquals(EthernetWire.SYNC, sync.type());
                    assertEquals(2, sync.sequence());
                    assertEquals(0, in.available(), "nothing after the SYNC");
                    // an ack of the WRITE alone completes no flush: it waits for its SYNC
                    peer.getOutputStream().write(frame(EthernetWire.ACK, 0, 1, 0, 0, 0));
                    assertEquals(ErrorCode.TIMEOUT, assertThrows(JmscclppException.class,
                            () -> c.awaitFlush(Duration.ofMillis(200))).code());
                    // the peer acknowledges the SYNC now: awaitFlush completes on the ack it reads itself
                    peer.getOutputStream().write(frame(EthernetWire.ACK, 0, 2, 0, 0, 0));
                    c.awaitFlush(Duration.ofSeconds(10));
                    c.flush(Duration.ofSeconds(10)).block(Duration.ofSeconds(10));
                    // a write soon after a flush asks for its ack itself, so the next flush sends no SYNC
                    c.write(reg, 0, reg, 0, 64);
                    var asking = EthernetWire.readHeader(io.netty.buffer.Unpooled.wrappedBuffer(
                            in.readNBytes(EthernetWire.HEADER_BYTES)));
                    assertEquals(EthernetWire.WRITE, asking.type());
                    assertEquals(3, asking.sequence());
                    assertEquals(EthernetWire.ACK_WANTED, asking.reserved());
                    assertEquals(64, in.readNBytes(64).length);
                    peer.getOutputStream().write(frame(EthernetWire.ACK, 0, 3, 0, 0, 0));
                    c.awaitFlush(Duration.ofSeconds(10));
                    assertEquals(0, in.available(), "no SYNC after a write that asked");
                    reg.close();
                }
            }
        }
    }
}
