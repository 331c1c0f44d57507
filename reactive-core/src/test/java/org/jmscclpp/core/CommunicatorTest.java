package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The communicator's setup pipeline on ranks of one JVM (in-memory bootstrap, host backend):
 * ports of MSCCL++'s LocalCommunicatorTest (RegisterMemory is in {@link RegisteredMemoryTest}),
 * matching and ordering rules, errors, and the one-Mono mesh.
 */
class CommunicatorTest {

    private static final EndpointConfig HOST_IPC = EndpointConfig.of(Transport.HOST_IPC);

    @TempDir
    Path dir;

    @Test
    void sendMemoryToSelfWithSetup() {
        try (CommunicatorGroup g = new CommunicatorGroup(1, dir); DeviceBuffer buf = g.backend.allocate(42 * 4)) {
            Communicator comm = g.comm(0);
            RegisteredMemory mine = comm.registerMemory(buf, TransportFlags.NONE);
            Mono<Void> sent = comm.sendMemoryOnSetup(mine, 0, 0);
            Mono<RegisteredMemory> received = comm.recvMemoryOnSetup(0, 0);
            comm.setup().block(CommunicatorGroup.WAIT);
            RegisteredMemory back = received.block(CommunicatorGroup.WAIT);
            sent.block(CommunicatorGroup.WAIT);
            assertEquals(mine.address(), back.address());
            assertEquals(mine.size(), back.size());
            assertEquals(mine.transports(), back.transports());
        }
    }

    @Test
    void sendMemoryToSelfImmediately() {
        try (CommunicatorGroup g = new CommunicatorGroup(1, dir); DeviceBuffer buf = g.backend.allocate(168)) {
            Communicator comm = g.comm(0);
            RegisteredMemory mine = comm.registerMemory(buf, TransportFlags.of(Transport.HOST_IPC));
            RegisteredMemory back = comm.sendMemory(mine, 0, 3).then(comm.recvMemory(0, 3)).block(CommunicatorGroup.WAIT);
            assertEquals(mine.address(), back.originalAddress());
            assertEquals(mine.size(), back.size());
            assertEquals(mine.transports(), back.transports());
        }
    }

    /** MSCCL++'s OnSetup: setup() runs every step's send before any step's receive, each in call order. */
    @Test
    void setupRunsEverySendBeforeAnyReceiveInCallOrder() {
        List<List<String>> logs = List.of(Collections.synchronizedList(new ArrayList<>()),
                Collections.synchronizedList(new ArrayList<>()));
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir, b -> new RecordingBootstrap(b, logs.get(b.rank())));
             DeviceBuffer b0 = g.backend.allocate(64); DeviceBuffer b1 = g.backend.allocate(64)) {
            List<DeviceBuffer> bufs = List.of(b0, b1);
            List<CompletableFuture<?>> steps = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Communicator c = g.comm(r);
                int peer = 1 - r;
                RegisteredMemory m = c.registerMemory(bufs.get(r), TransportFlags.of(Transport.HOST_IPC));
                steps.add(c.connectOnSetup(peer, 0, HOST_IPC).toFuture());
                steps.add(c.sendMemoryOnSetup(m, peer, 1).toFuture());
                steps.add(c.recvMemoryOnSetup(peer, 1).toFuture());
                steps.add(c.connectOnSetup(peer, 2, HOST_IPC).toFuture());
            }
            assertTrue(logs.get(0).isEmpty() && logs.get(1).isEmpty(), "queued steps wait for setup()");
            assertFalse(steps.stream().anyMatch(CompletableFuture::isDone), "no queued Mono completes before setup()");
            g.onEveryRank(r -> g.comm(r).setup().thenReturn(r));
            steps.forEach(f -> f.orTimeout(20, TimeUnit.SECONDS).join());
            for (int r = 0; r < 2; r++) {
                int peer = 1 - r;
                assertEquals(List.of("send " + peer + "/0", "send " + peer + "/1", "send " + peer + "/2",
                        "recv " + peer + "/0", "recv " + peer + "/1", "recv " + peer + "/2"), logs.get(r), "rank " + r);
            }
            Connection c = (Connection) steps.get(0).join();
            assertEquals(1, c.context().remoteRank());
            assertEquals(0, g.comm(0).tagOf(c));
            assertEquals(Transport.HOST_IPC, c.transport());
            assertEquals(Transport.HOST_IPC, c.remoteTransport());
        }
    }

    /**
     * Immediate steps are lazy: a receive takes its place on (peer, tag) when subscribed, not when
     * called, so the i-th subscribed receive gets the i-th message, whatever the call order.
     */
    @Test
    void immediateReceivesMatchInSubscriptionOrder() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            List<DeviceBuffer> bufs = new ArrayList<>();
            List<RegisteredMemory> sent = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                bufs.add(g.backend.allocate(64L * (i + 1)));
                sent.add(g.comm(0).registerMemory(bufs.get(i), TransportFlags.NONE));
            }
            // tags 1, 2, 1, 2: two interleaved streams
            for (int i = 0; i < 4; i++) {
                g.comm(0).sendMemory(sent.get(i), 1, 1 + i % 2).block(CommunicatorGroup.WAIT);
            }
            Mono<RegisteredMemory> calledFirstOn1 = g.comm(1).recvMemory(0, 1);
            Mono<RegisteredMemory> calledFirstOn2 = g.comm(1).recvMemory(0, 2);
            Mono<RegisteredMemory> calledSecondOn1 = g.comm(1).recvMemory(0, 1);
            Mono<RegisteredMemory> calledSecondOn2 = g.comm(1).recvMemory(0, 2);
            // subscribed backwards: the first subscribed on each tag gets that tag's first message
            assertEquals(sent.get(1).size(), calledSecondOn2.block(CommunicatorGroup.WAIT).size());
            assertEquals(sent.get(0).size(), calledSecondOn1.block(CommunicatorGroup.WAIT).size());
            assertEquals(sent.get(3).size(), calledFirstOn2.block(CommunicatorGroup.WAIT).size());
            assertEquals(sent.get(2).size(), calledFirstOn1.block(CommunicatorGroup.WAIT).size());
            assertSame(calledFirstOn1.block(CommunicatorGroup.WAIT), calledFirstOn1.block(CommunicatorGroup.WAIT),
                    "a step runs once and replays its outcome");
            bufs.forEach(DeviceBuffer::close);
        }
    }

    /** MSCCL++'s pattern "post receive, then send" on both ranks must not deadlock. */
    @Test
    void receiveThenSendOnBothRanksCompletes() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir); DeviceBuffer b0 = g.backend.allocate(8);
             DeviceBuffer b1 = g.backend.allocate(16)) {
            List<DeviceBuffer> bufs = List.of(b0, b1);
            List<Long> sizes = g.onEveryRank(r -> {
                Communicator c = g.comm(r);
                Mono<RegisteredMemory> in = c.recvMemory(1 - r, 0);
                Mono<Void> out = c.sendMemory(c.registerMemory(bufs.get(r), TransportFlags.NONE), 1 - r, 0);
                return in.zipWith(out.thenReturn(0), (m, x) -> m.size());
            });
            assertEquals(List.of(16L, 8L), sizes);
        }
    }

    @Test
    void aMessageOfAnotherKindIsInvalidUsageNamingPeerAndTag() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir); DeviceBuffer buf = g.backend.allocate(8)) {
            g.comm(0).sendMemory(g.comm(0).registerMemory(buf, TransportFlags.NONE), 1, 5).block(CommunicatorGroup.WAIT);
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> g.comm(1).connect(0, 5, HOST_IPC).block(CommunicatorGroup.WAIT));
            assertEquals(ErrorCode.INVALID_USAGE, e.code());
            assertEquals(0, e.peer());
            assertEquals(5, e.tag());
            assertEquals("connect", e.phase());
            assertTrue(e.getMessage().contains("registered memory"), e.getMessage());
        }
    }

    @Test
    void setupAgainstASilentPeerTimesOutNamingPeerAndTag() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            Mono<Connection> conn = g.comm(0).connectOnSetup(1, 9, HOST_IPC);
            long start = System.nanoTime();
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> g.comm(0).setup(Duration.ofMillis(300)).block(CommunicatorGroup.WAIT));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
            assertEquals(1, e.peer());
            assertEquals(9, e.tag());
            assertEquals(0, e.rank());
            assertTrue(ms >= 250 && ms < 5000, "took " + ms + " ms");
            JmscclppException same = assertThrows(JmscclppException.class, () -> conn.block(CommunicatorGroup.WAIT));
            assertEquals(ErrorCode.TIMEOUT, same.code());
        }
    }

    @Test
    void badPeerTagOrTransportIsInvalidUsageAtCallTime() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            Communicator c = g.comm(0);
            assertInvalid(() -> c.connect(2, 0, HOST_IPC));
            assertInvalid(() -> c.recvMemory(-1, 0));
            assertInvalid(() -> c.recvMemoryOnSetup(1, -1));
            assertInvalid(() -> c.recvMemoryOnSetup(1, Communicator.MAX_TAG + 1));
            assertInvalid(() -> c.connect(1, 0, EndpointConfig.of(Transport.CUDA_IPC)));
        }
    }

    /**
     * A missing argument is INVALID_USAGE naming the step, peer and tag at call time (a mesh's, at
     * subscription), and queues nothing: a setup afterwards runs as if the call never happened.
     */
    @Test
    void missingArgumentsAreInvalidUsageAndQueueNothing() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir); DeviceBuffer buf = g.backend.allocate(64);
             DeviceBuffer other = g.backend.allocate(64)) {
            Communicator c = g.comm(0);
            JmscclppException e = assertInvalid(() -> c.sendMemoryOnSetup(null, 1, 3));
            assertEquals(1, e.peer());
            assertEquals(3, e.tag());
            assertEquals("sendMemory", e.phase());
            assertInvalid(() -> c.sendMemory(null, 1, 3));
            assertInvalid(() -> c.connectOnSetup(1, 3, null));
            assertInvalid(() -> c.buildSemaphore(null));
            RegisteredMemory mine = c.registerMemory(buf, TransportFlags.of(Transport.HOST_IPC));
            assertInvalid(() -> c.mesh(null, HOST_IPC));
            assertInvalid(() -> c.mesh(mine, null, 0, CommunicatorGroup.WAIT));
            JmscclppException m = assertThrows(JmscclppException.class,
                    () -> c.mesh(mine, p -> null, 5, CommunicatorGroup.WAIT).block(CommunicatorGroup.WAIT));
            assertEquals(ErrorCode.INVALID_USAGE, m.code(), m.getMessage());
            assertEquals(1, m.peer());
            // nothing of the above was queued: the same peer and tag carry a memory both ways
            List<RegisteredMemory> got = new ArrayList<>();
            c.sendMemoryOnSetup(mine, 1, 3);
            c.recvMemoryOnSetup(1, 3).subscribe(got::add);
            Communicator peer = g.comm(1);
            peer.sendMemoryOnSetup(peer.registerMemory(other, TransportFlags.of(Transport.HOST_IPC)), 0, 3);
            peer.recvMemoryOnSetup(0, 3).subscribe(got::add);
            Mono.when(g.comm(0).setup(), g.comm(1).setup()).block(CommunicatorGroup.WAIT);
            assertEquals(2, got.size());
        }
    }

    @Test
    void closingFailsQueuedStepsAndRefusesNewOnes() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            Mono<RegisteredMemory> queued = g.comm(0).recvMemoryOnSetup(1, 0);
            g.comm(0).close();
            assertEquals(ErrorCode.ABORTED, assertThrows(JmscclppException.class,
                    () -> queued.block(CommunicatorGroup.WAIT)).code());
            assertInvalid(() -> g.comm(0).recvMemory(1, 0));
        }
    }

    /** A step waiting for a silent peer when its communicator closes ends then, not 30 s later at its deadline. */
    @Test
    void closingEndsRunningStepsAtOnce() throws Exception {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            CompletableFuture<Connection> immediate = g.comm(0).connect(1, 4, HOST_IPC, Duration.ofSeconds(30))
                    .toFuture();
            g.comm(1).connectOnSetup(0, 6, HOST_IPC);
            CompletableFuture<Void> setup = g.comm(1).setup(Duration.ofSeconds(30)).toFuture();
            Thread.sleep(200);
            long start = System.nanoTime();
            g.comm(0).close();
            g.comm(1).close();
            for (CompletableFuture<?> f : List.of(immediate, setup)) {
                java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                        () -> f.get(20, TimeUnit.SECONDS));
                JmscclppException je = assertInstanceOf(JmscclppException.class, e.getCause());
                assertEquals(ErrorCode.ABORTED, je.code(), je.getMessage());
                assertTrue(je.getMessage().contains("closed"), je.getMessage());
            }
            assertEquals(4, ((JmscclppException) assertThrows(java.util.concurrent.ExecutionException.class,
                    immediate::get).getCause()).tag());
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms < 5000, "the steps ended " + ms + " ms after close");
        }
    }

    /** Eight ranks build a mesh with one Mono, write into every peer, signal, wait, and check. */
    @Test
    void meshOfEightRanksMovesDataAndSignals() {
        int n = 8;
        int slot = 256;
        try (CommunicatorGroup g = new CommunicatorGroup(n, dir)) {
            List<DeviceBuffer> bufs = new ArrayList<>();
            List<RegisteredMemory> mems = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                bufs.add(g.backend.allocate((long) slot * n));
                mems.add(g.comm(r).registerMemory(bufs.get(r), TransportFlags.of(Transport.HOST_IPC)));
                bufs.get(r).hostSegment().asSlice((long) slot * r, slot).fill((byte) (r + 1));
            }
            List<Mesh> meshes = g.onEveryRank(r -> g.comm(r).mesh(mems.get(r), HOST_IPC));
            g.onEveryRank(r -> {
                Mesh mesh = meshes.get(r);
                List<Host2HostSemaphore> sems = new ArrayList<>();
                for (int p : mesh.peers()) {
                    mesh.connection(p).write(mesh.remoteMemory(p), (long) slot * r, mems.get(r), (long) slot * r, slot);
                    Host2HostSemaphore s = new Host2HostSemaphore(mesh.semaphore(p));
                    sems.add(s);
                }
                return Flux.fromIterable(mesh.peers()).concatMap(p -> mesh.connection(p).flush())
                        .thenMany(Flux.fromIterable(sems)).doOnNext(Host2HostSemaphore::signal)
                        .thenMany(Flux.fromIterable(sems)).concatMap(s -> s.nextSignal(CommunicatorGroup.WAIT)).then()
                        .thenReturn(r);
            });
            for (int r = 0; r < n; r++) {
                MemorySegment seg = bufs.get(r).hostSegment();
                for (int src = 0; src < n; src++) {
                    for (int i = 0; i < slot; i++) {
                        assertEquals((byte) (src + 1), seg.get(ValueLayout.JAVA_BYTE, (long) slot * src + i),
                                "rank " + r + " slot " + src + " byte " + i);
                    }
                }
                assertEquals(n - 1, meshes.get(r).peers().size());
            }
            g.comms.forEach(Communicator::close);
            bufs.forEach(DeviceBuffer::close);
        }
    }

    /** Host2Device: the host signals, a Java thread standing in for a kernel waits on the device handle. */
    @Test
    void deviceHandlesWaitForHostAndDeviceSignals() throws Exception {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            List<Connection> conns = g.onEveryRank(r -> g.comm(r).connect(1 - r, 0, HOST_IPC));
            List<Host2DeviceSemaphore> h2d = g.onEveryRank(r -> Host2DeviceSemaphore.build(g.comm(r), conns.get(r)));
            List<MemoryDevice2DeviceSemaphore> d2d = g.onEveryRank(
                    r -> MemoryDevice2DeviceSemaphore.build(g.comm(r), conns.get(r)));

            Host2DeviceSemaphore.DeviceHandle kernelSide = h2d.get(1).deviceHandle();
            assertFalse(kernelSide.poll());
            CompletableFuture<Void> kernel = CompletableFuture.runAsync(() -> {
                kernelSide.await(Duration.ofSeconds(10));
                kernelSide.await(Duration.ofSeconds(10));
            });
            h2d.get(0).signal();
            h2d.get(0).signal();
            kernel.get(20, TimeUnit.SECONDS);
            assertEquals(2, kernelSide.expectedValue());
            assertEquals(ErrorCode.TIMEOUT, assertThrows(JmscclppException.class,
                    () -> kernelSide.await(Duration.ofMillis(50))).code());

            MemoryDevice2DeviceSemaphore.DeviceHandle a = d2d.get(0).deviceHandle();
            MemoryDevice2DeviceSemaphore.DeviceHandle b = d2d.get(1).deviceHandle();
            CompletableFuture<Void> pong = CompletableFuture.runAsync(() -> {
                for (int i = 0; i < 1000; i++) {
                    b.await(Duration.ofSeconds(10));
                    b.signal();
                }
            });
            for (int i = 0; i < 1000; i++) {
                a.signal();
                a.await(Duration.ofSeconds(10));
            }
            pong.get(20, TimeUnit.SECONDS);
            assertEquals(1000, a.inboundValue());
            assertEquals(1000, b.expectedValue());
            java.nio.ByteBuffer handle = java.nio.ByteBuffer.allocate(MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES);
            a.encode(handle);
            assertEquals(0, handle.remaining());
            h2d.forEach(Host2DeviceSemaphore::close);
            d2d.forEach(MemoryDevice2DeviceSemaphore::close);
        }
    }

    @Test
    void hostSemaphoreWaitTimesOutNamingThePeerAndConsumesNothing() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            List<Connection> conns = g.onEveryRank(r -> g.comm(r).connect(1 - r, 4, HOST_IPC));
            List<Host2HostSemaphore> sems = g.onEveryRank(r -> Host2HostSemaphore.build(g.comm(r), conns.get(r)));
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> sems.get(1).nextSignal(Duration.ofMillis(100)).block(CommunicatorGroup.WAIT));
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertEquals(0, e.peer());
            assertEquals(4, e.tag());
            sems.get(0).signal();
            sems.get(1).nextSignal(Duration.ofSeconds(10)).block(CommunicatorGroup.WAIT);
            assertFalse(sems.get(1).poll());
            sems.get(0).signal();
            assertTrue(sems.get(1).poll());
        }
    }

    private static JmscclppException assertInvalid(org.junit.jupiter.api.function.Executable e) {
        JmscclppException ex = assertThrows(JmscclppException.class, e);
        assertEquals(ErrorCode.INVALID_USAGE, ex.code(), ex.getMessage());
        return ex;
    }
}
