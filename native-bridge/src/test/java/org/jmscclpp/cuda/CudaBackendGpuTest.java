package org.jmscclpp.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Random;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.core.Disposable;
import reactor.core.publisher.Sinks;

/**
 * The CUDA backend on one GPU: allocation of both kinds, copies, pinned memory, and MSCCL++'s
 * FifoTest with a real GPU producer (a kernel pushes, this thread polls). Aborted with the reason
 * where there is no driver or no GPU.
 */
@Tag("gpu")
class CudaBackendGpuTest {

    private static final Duration KERNEL_TIMEOUT = Duration.ofSeconds(60);
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

    @ParameterizedTest
    @EnumSource(CudaBackend.Allocation.class)
    void allocationsAreZeroedAndCopiesRoundTrip(CudaBackend.Allocation allocation) {
        long size = (3 << 20) + 12;
        Random random = new Random(size);
        try (DeviceBuffer a = backend.allocate(size, allocation); DeviceBuffer b = backend.allocate(size, allocation);
             Arena arena = Arena.ofConfined()) {
            assertEquals(size, a.size());
            MemorySegment zeros = arena.allocate(size);
            zeros.fill((byte) 1);
            backend.copyToHost(zeros, a, 0);
            assertEquals(-1, zeros.mismatch(arena.allocate(size)), "a new buffer is zeroed");
            byte[] data = new byte[(int) size];
            random.nextBytes(data);
            backend.copyFromHost(a, 0, MemorySegment.ofArray(data));
            backend.copy(b, 0, a, 0, size);
            byte[] back = new byte[(int) size];
            backend.copyToHost(MemorySegment.ofArray(back), b, 0);
            assertTrue(java.util.Arrays.equals(data, back), "device-to-device copy of " + allocation);
            byte[] slice = new byte[1000];
            backend.copyToHost(MemorySegment.ofArray(slice), b, 777);
            assertTrue(java.util.Arrays.equals(data, 777, 1777, slice, 0, 1000), "copy from an offset");
        }
    }

    @Test
    void pinnedMemoryIsSharedWithTheGpu() {
        try (DeviceBuffer pinned = backend.allocateHostVisible(4096); DeviceBuffer device = backend.allocate(4096)) {
            assertTrue(pinned.hostAccessible());
            for (int i = 0; i < 1024; i++) {
                pinned.hostSegment().setAtIndex(ValueLayout.JAVA_INT, i, i * 3);
            }
            backend.copy(device, 0, pinned, 0, 4096);
            pinned.hostSegment().fill((byte) 0);
            backend.copy(pinned, 0, device, 0, 4096);
            for (int i = 0; i < 1024; i++) {
                assertEquals(i * 3, pinned.hostSegment().getAtIndex(ValueLayout.JAVA_INT, i));
            }
        }
    }

    /** FifoTest.Fifo: a GPU thread pushes 10000 triggers fst = snd = i; the host polls each in order. */
    @Test
    void fifoOfTenThousandTriggersFromTheGpu() {
        long n = 10_000;
        double us = pushAndPoll(Fifo.DEFAULT_CAPACITY, n, 0, i -> i, i -> i);
        System.out.printf("FifoTest.Fifo on the GPU: %d triggers, %.3f us per trigger (push to poll)%n", n, us);
    }

    /** FifoTest.ZeroTrigger: all-zero triggers are triggers like any other. */
    @Test
    void zeroTriggersFromTheGpu() {
        pushAndPoll(Fifo.DEFAULT_CAPACITY, 32, 1, i -> 0, i -> 0);
    }

    /** FifoTest.WrapAtLapBoundary: four laps of a small ring, every position seen once. */
    @Test
    void wrapAtLapBoundaryFromTheGpu() {
        int capacity = 64;
        pushAndPoll(capacity, 4L * capacity, 2, i -> i, i -> ~i & Long.MAX_VALUE);
    }

    /** Runs fifoPush(mode) while this thread polls and checks every trigger; returns µs per trigger. */
    private static double pushAndPoll(int capacity, long n, int mode, java.util.function.LongUnaryOperator fst,
                                      java.util.function.LongUnaryOperator snd) {
        try (Fifo fifo = Fifo.create(backend, capacity)) {
            assertTrue(fifo.headInDeviceMemory(), "a GPU fifo keeps its head in device memory");
            Kernel push = DeviceKernels.load(backend, "fifo").function("fifoPush");
            Sinks.One<Throwable> kernelDone = Sinks.one();
            long start = System.nanoTime();
            Disposable run = push.run(LaunchConfig.of(1, 1), KernelArgs.builder()
                    .handle(Fifo.DEVICE_HANDLE_BYTES, fifo::encodeDeviceHandle).i64(n).i32(mode).build(), KERNEL_TIMEOUT)
                    .subscribe(v -> { }, kernelDone::tryEmitValue, () -> kernelDone.tryEmitValue(new Throwable("done")));
            long[] trigger = new long[2];
            try {
                for (long i = 0; i < n; i++) {
                    long pos = i;
                    boolean found = Waiting.await(() -> fifo.poll(trigger), System.nanoTime() + 5_000_000_000L);
                    assertTrue(found, () -> "no trigger at position " + pos + " within 5 s");
                    assertEquals(fst.applyAsLong(i), trigger[0], "fst at " + i);
                    assertEquals(snd.applyAsLong(i), trigger[1], "snd at " + i);
                    fifo.pop();
                }
                double us = (System.nanoTime() - start) / 1000.0 / n;
                Throwable end = kernelDone.asMono().block(KERNEL_TIMEOUT);
                assertEquals("done", end.getMessage(), () -> "the kernel failed: " + end);
                return us;
            } finally {
                run.dispose();
            }
        }
    }
}
