package org.jmscclpp.core.channel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.proxy.FifoLayout;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.proxy.ProxyService.Poller;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.testkit.FifoTesting;
import org.jmscclpp.testkit.ProxyFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Port channels over the host backend, with Java threads standing in for kernels: MSCCL++'s
 * LocalChannelTest.PortChannel (one rank connected to itself), PortChannelOneToOneTest.PingPong
 * and PingPongWithPoll on both pollers, SameChanConcurrentFlush, and the device handle's bytes.
 */
class PortChannelTest {

    private static final Duration STEP = Duration.ofSeconds(10);
    private static final Duration JOIN = Duration.ofSeconds(40);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;

    @TempDir
    Path dir;

    /**
     * LocalChannelTest.PortChannel: a rank connected to itself over HOST_IPC, one proxy, 4 MiB:
     * one thread fills the source with 777 and puts it with a signal, another waits and checks
     * every value of the destination.
     */
    @Test
    void selfConnectionDeliversEveryValueBeforeTheSignal() throws Exception {
        int n = 1 << 20;
        try (ProxyFixture f = new ProxyFixture(dir, 1, 4L * n)) {
            f.proxy(0).start();
            PortChannel ch = f.channel(0);
            MemorySegment src = f.source(0);
            MemorySegment dst = f.destination(0);
            try (FifoTesting.Workers workers = new FifoTesting.Workers()) {
                workers.start("writer", () -> {
                    for (int j = 0; j < n; j++) {
                        src.setAtIndex(INT, j, 777);
                    }
                    ch.putWithSignal(0, 4L * n);
                    ch.flush(STEP);
                });
                workers.start("reader", () -> {
                    ch.await(STEP);
                    check(dst, n, j -> 777, "self put");
                });
                workers.join(JOIN);
            }
            assertFalse(ch.poll(), "exactly one signal");
        }
    }

    static Stream<Arguments> pingPongs() {
        List<Arguments> cases = new ArrayList<>();
        for (Poller poller : Poller.values()) {
            for (boolean withPoll : new boolean[] {false, true}) {
                for (int n : new int[] {1, 1 << 10, 1 << 20, 4 << 20}) {
                    cases.add(Arguments.of(poller, withPoll, n));
                }
            }
        }
        return cases.stream();
    }

    /**
     * PortChannelOneToOneTest.PingPong and PingPongWithPoll, over HOST_IPC between two ranks with a
     * proxy each: in-place buffers of {@code n} ints; each turn one rank waits for the other's
     * signal (or polls for it), checks every value, writes its own and puts them back with a
     * signal, then flushes. MSCCL++ runs 1000 turns per size; here 1000 for 1 and 1K ints, scaled
     * down to 64 and 16 turns for 1M and 4M ints so that each case takes well under a second on two
     * slow shared cores (a 4M-int turn fills, copies and checks 16 MiB on each rank).
     */
    @ParameterizedTest(name = "{0}, poll={1}, {2} ints")
    @MethodSource("pingPongs")
    void pingPong(Poller poller, boolean withPoll, int n) throws Exception {
        int turns = n <= 1 << 10 ? 1000 : n <= 1 << 20 ? 64 : 16;
        long bytes = 4L * n;
        try (ProxyFixture f = new ProxyFixture(dir, 2, bytes, b -> b.poller(poller))) {
            f.proxies.forEach(ProxyService::start);
            f.onEveryRankThread(rank -> () -> {
                PortChannel ch = f.channel(rank);
                MemorySegment buf = f.source(rank);
                int peer = 1 - rank;
                for (int i = 0; i < turns; i++) {
                    if (rank == 1 || i > 0) {
                        awaitSignal(ch, withPoll);
                        int turn = rank == 1 ? i : i - 1;
                        check(buf, n, j -> value(peer, turn, j), "rank " + rank + " turn " + i);
                    }
                    int turn = i;
                    for (int j = 0; j < n; j++) {
                        buf.setAtIndex(INT, j, value(rank, turn, j));
                    }
                    ch.putWithSignal(0, bytes);
                    ch.flush(STEP);
                }
                if (rank == 0) {
                    awaitSignal(ch, withPoll);
                    check(buf, n, j -> value(1, turns - 1, j), "rank 0 after the last turn");
                }
                assertFalse(ch.poll(), "no signal beyond the turns");
            }, JOIN);
        }
    }

    /**
     * SameChanConcurrentFlush: four threads share one channel, each putting its own slice with a
     * signal and a flush 500 times; every flush returns, the peer counts 2000 signals, and each
     * slice holds its thread's last values.
     */
    @Test
    void fourThreadsFlushingOneChannelAllReturnAndThePeerCountsEverySignal() throws Exception {
        int threads = 4;
        int each = 500;
        int slice = 256;
        try (ProxyFixture f = new ProxyFixture(dir, 2, (long) threads * slice)) {
            f.proxies.forEach(ProxyService::start);
            PortChannel ch = f.channel(0);
            PortChannel peer = f.channel(1);
            MemorySegment src = f.source(0);
            AtomicInteger flushes = new AtomicInteger();
            CountDownLatch go = new CountDownLatch(1);
            try (FifoTesting.Workers workers = new FifoTesting.Workers()) {
                for (int t = 0; t < threads; t++) {
                    int id = t;
                    workers.start("producer-" + t, () -> {
                        assertTrue(go.await(30, TimeUnit.SECONDS));
                        for (int i = 0; i < each; i++) {
                            src.asSlice((long) id * slice, slice).fill((byte) (id * 16 + i % 16));
                            ch.putWithSignalAndFlush((long) id * slice, slice, STEP);
                            flushes.incrementAndGet();
                        }
                    });
                }
                workers.start("peer", () -> {
                    for (int s = 0; s < threads * each; s++) {
                        peer.await(STEP);
                    }
                });
                go.countDown();
                workers.join(JOIN);
            }
            assertEquals(threads * each, flushes.get(), "every flush returned");
            assertFalse(peer.poll(), "no signal beyond 2000");
            assertEquals(threads * each, f.proxy(1).semaphore(f.semaphores.get(1)).deviceHandle().inboundValue());
            MemorySegment dst = f.destination(0);
            for (int t = 0; t < threads; t++) {
                byte last = (byte) (t * 16 + (each - 1) % 16);
                for (int k = 0; k < slice; k++) {
                    assertEquals(last, dst.get(ValueLayout.JAVA_BYTE, (long) t * slice + k), "thread " + t + " byte " + k);
                }
            }
        }
    }

    @Test
    void rangesOutsideTheMemoriesAreRefusedBeforeAnythingIsPushed() {
        try (ProxyFixture f = new ProxyFixture(dir, 2, 1024)) {
            PortChannel ch = f.channel(0);
            ProxyService p = f.proxy(0);
            for (Runnable bad : List.<Runnable>of(() -> ch.put(1000, 0, 25), () -> ch.put(0, 1020, 8),
                    () -> ch.putWithSignal(-1, 4), () -> ch.putWithSignalAndFlush(1024, 1, STEP),
                    () -> ch.put(0, 0, 1L << 33))) {
                JmscclppException e = assertThrows(JmscclppException.class, bad::run);
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
                assertEquals(1, e.peer());
            }
            assertEquals(0, ProxyFixture.head(p), "nothing was pushed");
            assertThrows(JmscclppException.class, () -> ch.flush(Duration.ofMillis(-1)));
        }
    }

    /** Without a running proxy a flush ends at its deadline with TIMEOUT naming the position. */
    @Test
    void flushWithoutARunningProxyTimesOutNamingThePosition() {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64)) {
            PortChannel ch = f.channel(0);
            ch.put(0, 8);
            long start = System.nanoTime();
            JmscclppException e = assertThrows(JmscclppException.class, () -> ch.flush(Duration.ofMillis(200)));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertTrue(e.getMessage().contains("position 1"), e.getMessage());
            assertEquals("port channel flush", e.phase());
            assertTrue(ms >= 190 && ms < 5000, "gave up after " + ms + " ms");
        }
    }

    @Test
    void deviceHandleHoldsTheSemaphoreTheFifoTheFlushedWordAndTheMemoryIds() {
        try (ProxyFixture f = new ProxyFixture(dir, 2, 64, b -> b.fifoCapacity(64))) {
            ProxyService p = f.proxy(0);
            // a second semaphore and memory, so that the channel's ids are not all zero
            SemaphoreId second = p.buildAndAddSemaphore(f.group.comm(0), f.connections.get(0))
                    .zipWith(f.proxy(1).buildAndAddSemaphore(f.group.comm(1), f.connections.get(1)), (a, b) -> a)
                    .block(ProxyFixture.WAIT);
            MemoryId extra = p.addMemory(f.memories.get(0));
            assertEquals(1, second.value());
            assertEquals(2, extra.value());
            PortChannel ch = p.portChannel(second, f.dstIds.get(0), extra);

            ByteBuffer out = ByteBuffer.allocate(4 + PortChannel.DEVICE_HANDLE_BYTES).order(ByteOrder.BIG_ENDIAN);
            out.putInt(0x11223344);
            ch.encodeDeviceHandle(out);
            assertEquals(0, out.remaining());
            assertEquals(ByteOrder.BIG_ENDIAN, out.order(), "the caller's byte order is restored");
            ByteBuffer in = ByteBuffer.wrap(out.array(), 4, 80).slice().order(ByteOrder.LITTLE_ENDIAN);

            Host2DeviceSemaphore semaphore = p.semaphore(second);
            ByteBuffer semaphoreHandle = ByteBuffer.allocate(16).order(ByteOrder.BIG_ENDIAN);
            semaphore.deviceHandle().encode(semaphoreHandle);
            assertEquals(ByteOrder.BIG_ENDIAN, semaphoreHandle.order());
            ByteBuffer fifoHandle = ByteBuffer.allocate(40);
            p.fifo().encodeDeviceHandle(fifoHandle);

            assertEquals(1, in.getInt(0), "semaphore id");
            assertEquals(0, in.getInt(4), "padding");
            assertEquals(semaphore.semaphore().localMemory().buffer().address(), in.getLong(8), "inbound token");
            assertTrue(Arrays.equals(semaphoreHandle.array(), 0, 16, out.array(), 4 + 8, 4 + 24), "semaphore handle");
            assertTrue(Arrays.equals(fifoHandle.array(), 0, 40, out.array(), 4 + 24, 4 + 64), "fifo handle");
            assertEquals(p.fifo().buffer().address() + FifoLayout.HEAD, in.getLong(32), "fifo head");
            assertEquals(p.fifo().buffer().address() + FifoLayout.TAIL_CACHE, in.getLong(48), "fifo tail cache");
            assertEquals(64, in.getInt(56), "fifo capacity");
            assertEquals(p.flushedWords().address() + 8, in.getLong(64), "flushed word of semaphore 1");
            assertEquals(f.dstIds.get(0).value(), in.getInt(72), "dst id");
            assertEquals(2, in.getInt(76), "src id");

            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> ch.encodeDeviceHandle(ByteBuffer.allocate(79)));
            assertEquals(ErrorCode.INVALID_USAGE, e.code());
            assertTrue(e.getMessage().contains("80 bytes, 79 remain"), e.getMessage());
            assertThrows(JmscclppException.class, () -> semaphore.deviceHandle().encode(ByteBuffer.allocate(15)));
        }
    }

    private static int value(int rank, int turn, int j) {
        return (rank << 30) + turn * 7 + j;
    }

    private static void awaitSignal(PortChannel ch, boolean withPoll) {
        if (!withPoll) {
            ch.await(STEP);
        } else if (!Waiting.await(ch::poll, System.nanoTime() + STEP.toNanos())) {
            throw new AssertionError("no signal polled within " + STEP.toMillis() + " ms on " + ch);
        }
    }

    private static void check(MemorySegment seg, int n, java.util.function.IntUnaryOperator expected, String what) {
        for (int j = 0; j < n; j++) {
            int got = seg.getAtIndex(INT, j);
            int want = expected.applyAsInt(j);
            if (got != want) {
                throw new AssertionError(what + ": element " + j + " of " + n + " is " + got + ", expected " + want);
            }
        }
    }
}
