package org.jmscclpp.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.LongStream;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.proxy.Fifo;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.cuda.kernel.DeviceKernels;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Sinks;

/**
 * Device pushes that give up leave the fifo usable: the kernel {@code fifoTryPush} (kernels/fifo.cu)
 * pushes with {@code FifoDeviceHandle::tryPush} into a GPU fifo whose consumer, this thread, does
 * not poll, so the ring fills and pushes time out, from one thread and from 256 threads of four
 * blocks at once; the kernel ends normally. Then this thread polls: it finds exactly the triggers
 * the kernel reports pushed, nothing at the next position, and a second launch's pushes all
 * arrive after them. Also pushes that give their fetch-and-add position back on a full ring while
 * the host drains it: nothing lost, nothing twice. Aborted with the reason where there is no
 * driver or no GPU.
 */
@Tag("gpu")
class FifoAfterTimeoutGpuTest {

    private static final Duration KERNEL_TIMEOUT = Duration.ofSeconds(60);
    private static final long GIVE_UP_NS = 300_000_000L;
    private static final long PATIENT_NS = 20_000_000_000L;
    /** FifoPushStatus: FifoPushed, FifoPushTimedOut. */
    private static final long PUSHED = 0;
    private static final long TIMED_OUT = 1;

    private static CudaBackend backend;

    @BeforeAll
    static void open() {
        new CudaBackendProvider().unavailableReason().ifPresent(reason -> Assumptions.abort("no GPU here: " + reason));
        backend = CudaBackend.open(0, CudaBackend.Allocation.MEM_ALLOC);
        System.out.println("GPU test on " + backend);
    }

    @AfterAll
    static void close() {
        if (backend != null) {
            backend.close();
        }
    }

    /**
     * One GPU thread pushes 12 triggers into a ring of 8 nobody consumes: 8 go in, the ninth gives
     * up at its deadline and the kernel ends. The host finds those 8 and nothing at position 8;
     * a second kernel's 20 pushes then take positions 8 to 27, in order.
     */
    @Test
    void aDevicePushThatTimedOutLeavesTheRingUsableForTheNextKernel() {
        int capacity = 8;
        try (Fifo fifo = Fifo.create(backend, capacity); DeviceBuffer out = backend.allocateHostVisible(16)) {
            assertTrue(fifo.headInDeviceMemory(), "a GPU fifo keeps its head in device memory");
            launch(fifo, 1, 1, 0, 12, GIVE_UP_NS, out, false);
            assertEquals(capacity, word(out, 0), "pushes that went in");
            assertEquals(TIMED_OUT, word(out, 1), "the ninth push timed out");

            long[] trigger = new long[2];
            for (long i = 0; i < capacity; i++) {
                assertEquals(List.of(i), pollIds(fifo, 1, trigger), "position " + i);
            }
            assertFalse(fifo.poll(trigger), "nothing at position 8: the push that gave up claimed nothing");

            List<Long> second = launch(fifo, 1, 1, 100, 20, PATIENT_NS, out, true);
            assertEquals(20, word(out, 0));
            assertEquals(PUSHED, word(out, 1));
            assertEquals(LongStream.range(100, 120).boxed().toList(), second, "the second kernel's triggers, in order");
            assertEquals(capacity + 20, fifo.tail());
            assertFalse(fifo.poll(trigger), "nothing beyond the triggers pushed");
        }
    }

    /**
     * 256 GPU threads (4 blocks of 64) push one trigger each into a ring of 64 nobody consumes:
     * exactly 64 go in and 192 time out. The host finds exactly the 64 that went in; then 256
     * threads of a second launch, which this thread consumes as they push, all get through.
     */
    @Test
    void concurrentDevicePushesOfWhichSomeTimeOutLeaveExactlyTheSuccessfulTriggers() {
        int capacity = 64;
        int blocks = 4;
        int threads = 64;
        int n = blocks * threads;
        try (Fifo fifo = Fifo.create(backend, capacity); DeviceBuffer out = backend.allocateHostVisible(16L * n)) {
            launch(fifo, blocks, threads, 0, 1, GIVE_UP_NS, out, false);
            Set<Long> pushed = new HashSet<>();
            int timedOut = 0;
            for (int g = 0; g < n; g++) {
                long count = word(out, 2 * g);
                long status = word(out, 2 * g + 1);
                if (count == 1) {
                    assertEquals(PUSHED, status, "thread " + g);
                    pushed.add((long) g);
                } else {
                    assertEquals(0, count, "thread " + g);
                    assertEquals(TIMED_OUT, status, "thread " + g);
                    timedOut++;
                }
            }
            assertEquals(capacity, pushed.size(), "as many pushes went in as the ring holds");
            assertEquals(n - capacity, timedOut);

            long[] trigger = new long[2];
            assertEquals(pushed, new HashSet<>(pollIds(fifo, capacity, trigger)), "the host got exactly those pushed");
            assertFalse(fifo.poll(trigger), "nothing at position " + capacity + ": no push that gave up claimed one");

            List<Long> second = launch(fifo, blocks, threads, 1000, 1, PATIENT_NS, out, true);
            for (int g = 0; g < n; g++) {
                assertEquals(1, word(out, 2 * g), "thread " + g + " of the second launch");
            }
            assertEquals(LongStream.range(1000, 1000 + n).boxed().toList(), second.stream().sorted().toList());
            assertEquals(capacity + n, fifo.tail());
            assertFalse(fifo.poll(trigger), "nothing beyond the triggers pushed");
        }
    }

    /**
     * 256 GPU threads push 20 triggers each into a ring of 8 that this thread drains as they
     * come: nearly every push finds the ring full after its fetch-and-add and gives the position
     * back, while others keep theirs as slots free up. Every trigger arrives exactly once, each
     * thread's in the order it pushed them, and no position is left unwritten.
     */
    @Test
    void pushesThatGiveTheirPositionBackOnAFullRingLoseNothing() {
        int capacity = 8;
        int blocks = 4;
        int threads = 64;
        int perThread = 20;
        int n = blocks * threads;
        try (Fifo fifo = Fifo.create(backend, capacity); DeviceBuffer out = backend.allocateHostVisible(16L * n)) {
            List<Long> ids = launch(fifo, blocks, threads, 0, perThread, PATIENT_NS, out, true);
            for (int g = 0; g < n; g++) {
                assertEquals(perThread, word(out, 2 * g), "thread " + g + " pushed all");
                assertEquals(PUSHED, word(out, 2 * g + 1), "thread " + g);
            }
            assertEquals(LongStream.range(0, (long) n * perThread).boxed().toList(), ids.stream().sorted().toList(),
                    "every trigger once");
            long[] last = new long[n];
            Arrays.fill(last, -1);
            for (long id : ids) {
                int g = (int) (id / perThread);
                assertTrue(id > last[g], "thread " + g + "'s trigger " + id + " came after " + last[g]);
                last[g] = id;
            }
            assertEquals((long) n * perThread, fifo.tail(), "no position skipped");
            assertFalse(fifo.poll(new long[2]), "nothing beyond the triggers pushed");
        }
    }

    /**
     * Runs fifoTryPush on {@code blocks x threads} and waits for it to end. With {@code consume},
     * this thread meanwhile polls and pops every trigger the launch is to push and returns their
     * fst in position order; without, it polls nothing (the ring fills and pushes give up) and
     * returns an empty list.
     */
    private static List<Long> launch(Fifo fifo, int blocks, int threads, long first, long perThread, long timeoutNs,
                                     DeviceBuffer out, boolean consume) {
        Kernel push = DeviceKernels.load(backend, "fifo").function("fifoTryPush");
        Sinks.One<Throwable> done = Sinks.one();
        Disposable run = push.run(LaunchConfig.of(blocks, threads), KernelArgs.builder()
                        .handle(Fifo.DEVICE_HANDLE_BYTES, fifo::encodeDeviceHandle).i64(first).i64(perThread)
                        .i64(timeoutNs).pointer(out.address()).build(), KERNEL_TIMEOUT)
                .subscribe(v -> { }, done::tryEmitValue, () -> done.tryEmitValue(new Throwable("done")));
        try {
            List<Long> consumed = consume ? pollIds(fifo, (long) blocks * threads * perThread, new long[2]) : List.of();
            Throwable end = done.asMono().block(KERNEL_TIMEOUT);
            assertEquals("done", end.getMessage(), () -> "the kernel failed: " + end);
            return consumed;
        } finally {
            run.dispose();
        }
    }

    /** Polls and pops {@code n} triggers, each within 5 s, checking fst = snd; returns their fst. */
    private static List<Long> pollIds(Fifo fifo, long n, long[] trigger) {
        List<Long> ids = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            long pos = fifo.tail();
            boolean found = Waiting.await(() -> fifo.poll(trigger), System.nanoTime() + 5_000_000_000L);
            assertTrue(found, () -> "no trigger at position " + pos + " within 5 s");
            assertEquals(trigger[0], trigger[1], "fst = snd at position " + pos);
            fifo.pop();
            ids.add(trigger[0]);
        }
        return ids;
    }

    private static long word(DeviceBuffer buffer, long index) {
        MemorySegment host = buffer.hostSegment();
        return host.getAtIndex(ValueLayout.JAVA_LONG, index);
    }
}
