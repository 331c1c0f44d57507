package org.jmscclpp.cuda.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The copy proxy's host logic on the CPU (on GPUs the ce algorithms run it for real: the
 * collective matrix of {@code CudaCollectivesGpuTest}): requests written into the ring as the
 * kernels write them (sequence number last, with release) become a copy and two writes on their
 * lane (fewer where a word's address is 0), in ring order; a request it cannot serve fails it once,
 * with a typed error; close stops its thread and waits for the lanes.
 */
class CopyProxyTest {

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private final Arena arena = Arena.ofShared();
    private final MemorySegment ring = arena.allocate((long) CopyProxy.SLOTS * CopyProxy.REQUEST_BYTES, 64);
    private final AtomicInteger failures = new AtomicInteger();

    /** A lane that records what it is asked, counting down one latch per operation. */
    private static final class FakeLane implements CopyProxy.Lane {
        final ConcurrentLinkedQueue<String> ops = new ConcurrentLinkedQueue<>();
        volatile CountDownLatch latch = new CountDownLatch(0);
        volatile boolean idle = true;
        volatile int synchronizations;
        volatile RuntimeException refuse;

        @Override
        public void copyAsync(long dst, long src, long bytes) {
            if (refuse != null) {
                throw refuse;
            }
            ops.add("copy " + dst + " " + src + " " + bytes);
            latch.countDown();
        }

        @Override
        public void writeValueAsync(long address, long value) {
            ops.add("write " + address + " " + value);
            latch.countDown();
        }

        @Override
        public boolean isIdle() {
            return idle;
        }

        @Override
        public void synchronize(Duration timeout, String what) {
            synchronizations++;
        }
    }

    @AfterEach
    void free() {
        arena.close();
    }

    private void post(long position, long dst, long src, long bytes, long in, long out, long value, long lane) {
        long at = (position % CopyProxy.SLOTS) * CopyProxy.REQUEST_BYTES;
        long[] fields = {dst, src, bytes, in, out, value, lane};
        for (int k = 0; k < fields.length; k++) {
            ring.set(LONG, at + 8L * k, fields[k]);
        }
        WORD.setRelease(ring, at + 56, position + 1);
    }

    private CopyProxy proxy(FakeLane... lanes) {
        return new CopyProxy(3, ring, lanes, failures::incrementAndGet, TIMEOUT);
    }

    @Test
    void requestsBecomeACopyAndTwoWritesOnTheirLaneInRingOrderPastTheRingsEnd() throws InterruptedException {
        FakeLane a = new FakeLane();
        FakeLane b = new FakeLane();
        try (CopyProxy p = proxy(a, b)) {
            p.arm();
            List<String> expectA = new ArrayList<>();
            List<String> expectB = new ArrayList<>();
            // 3 rounds of 40: the ring's 64 slots are reused, each after the proxy read it
            for (int round = 0; round < 3; round++) {
                a.latch = new CountDownLatch(3 * 20);
                b.latch = new CountDownLatch(3 * 20);
                for (int k = 0; k < 40; k++) {
                    long n = round * 40L + k;
                    FakeLane lane = n % 2 == 0 ? a : b;
                    post(n, 1000 + n, 2000 + n, 16 * n, 3000 + n, 4000 + n, 5000 + n, n % 2);
                    List<String> expect = lane == a ? expectA : expectB;
                    expect.add("copy " + (1000 + n) + " " + (2000 + n) + " " + 16 * n);
                    expect.add("write " + (3000 + n) + " " + (5000 + n));
                    expect.add("write " + (4000 + n) + " " + (5000 + n));
                }
                assertTrue(a.latch.await(10, TimeUnit.SECONDS), "lane 0 got " + a.ops.size() + " operations");
                assertTrue(b.latch.await(10, TimeUnit.SECONDS), "lane 1 got " + b.ops.size() + " operations");
            }
            assertEquals(expectA, List.copyOf(a.ops));
            assertEquals(expectB, List.copyOf(b.ops));
            assertNull(p.failure());
            assertEquals(0, failures.get());
            assertTrue(p.idle());
            b.idle = false;
            assertFalse(p.idle(), "a lane with copies in flight");
        }
        assertEquals(1, a.synchronizations, "close waits for every lane");
        assertEquals(1, b.synchronizations);
    }

    @Test
    void aRequestWithoutAWordWritesOnlyTheOthers() throws InterruptedException {
        FakeLane a = new FakeLane();
        try (CopyProxy p = proxy(a)) {
            p.arm();
            a.latch = new CountDownLatch(1 + 2 + 1 + 1);
            post(0, 10, 20, 64, 0, 0, 7, 0);    // a ce allReduce's result that is not its last
            post(1, 11, 21, 64, 31, 0, 8, 0);   // a share's chunk: "arrived" only
            post(2, 12, 22, 64, 0, 42, 9, 0);
            assertTrue(a.latch.await(10, TimeUnit.SECONDS), "the lane got " + a.ops);
            assertEquals(List.of("copy 10 20 64", "copy 11 21 64", "write 31 8", "copy 12 22 64", "write 42 9"),
                    List.copyOf(a.ops));
            assertNull(p.failure());
        }
    }

    @Test
    void aRequestForALaneItLacksFailsItOnceWithAnInternalError() throws InterruptedException {
        FakeLane a = new FakeLane();
        try (CopyProxy p = proxy(a)) {
            p.arm();
            post(0, 1, 2, 3, 4, 5, 6, 5);
            JmscclppException e = awaitFailure(p);
            assertEquals(ErrorCode.INTERNAL_ERROR, e.code());
            assertTrue(e.getMessage().contains("lane 5 of 1"), e.getMessage());
            assertEquals(1, failures.get());
            assertTrue(a.ops.isEmpty());
        }
    }

    @Test
    void aRequestOverwrittenBeforeItWasReadFailsIt() throws InterruptedException {
        try (CopyProxy p = proxy(new FakeLane())) {
            // slot 0 holds request 64 while the proxy waits for request 0
            post(CopyProxy.SLOTS, 1, 2, 3, 4, 5, 6, 0);
            p.arm();
            JmscclppException e = awaitFailure(p);
            assertEquals(ErrorCode.INTERNAL_ERROR, e.code());
            assertTrue(e.getMessage().contains("copy request 0 was overwritten by request 64"), e.getMessage());
            assertEquals(1, failures.get());
        }
    }

    @Test
    void aCopyTheDriverRefusesFailsTheProxyWithThatError() throws InterruptedException {
        FakeLane a = new FakeLane();
        JmscclppException refused = JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cuMemcpyAsync: invalid value")
                .build();
        a.refuse = refused;
        try (CopyProxy p = proxy(a)) {
            p.arm();
            post(0, 1, 2, 3, 4, 5, 6, 0);
            assertSame(refused, awaitFailure(p));
            assertEquals(1, failures.get());
            // nothing after the failure is served
            post(1, 1, 2, 3, 4, 5, 6, 0);
            a.refuse = null;
            p.arm();
            assertTrue(a.ops.isEmpty());
        }
    }

    @Test
    void closeBeforeAnyCallStartsNoThreadAndStillWaitsForTheLanes() {
        FakeLane a = new FakeLane();
        CopyProxy p = proxy(a);
        p.close();
        p.arm();
        post(0, 1, 2, 3, 4, 5, 6, 0);
        assertEquals(1, a.synchronizations);
        assertTrue(a.ops.isEmpty());
        assertNull(p.failure());
    }

    @Test
    void aRingSmallerThanItsSlotsIsAnInternalError() {
        JmscclppException e = org.junit.jupiter.api.Assertions.assertThrows(JmscclppException.class,
                () -> new CopyProxy(0, ring.asSlice(0, 64), new CopyProxy.Lane[0], () -> { }, TIMEOUT));
        assertEquals(ErrorCode.INTERNAL_ERROR, e.code());
    }

    /** The proxy's failure, once it recorded one (its thread sets it before running the failure action). */
    private JmscclppException awaitFailure(CopyProxy p) throws InterruptedException {
        long end = System.nanoTime() + TIMEOUT.toNanos();
        while (failures.get() == 0 && System.nanoTime() < end) {
            Thread.onSpinWait();
        }
        JmscclppException e = p.failure();
        assertNotNull(e, "no failure within " + TIMEOUT);
        return e;
    }
}
