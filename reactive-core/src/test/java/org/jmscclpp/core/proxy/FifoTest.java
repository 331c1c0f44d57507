package org.jmscclpp.core.proxy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.testkit.FifoTesting;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The fifo in one process: MSCCL++'s FifoTest cases, many producer threads, full rings, misuse. */
class FifoTest {

    private static final Duration STEP = Duration.ofSeconds(5);
    private static final Duration JOIN = Duration.ofSeconds(30);

    @TempDir
    Path dir;
    private HostBackend backend;

    @BeforeEach
    void open() {
        backend = HostBackend.open(dir);
    }

    @AfterEach
    void close() throws Exception {
        backend.close();
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(0, left.count(), "every fifo closed its buffer");
        }
    }

    /** FifoTest.Fifo: 10000 triggers fst = snd = i from one producer, syncing once a lap, consumed in order. */
    @Test
    void fifo() throws Exception {
        int count = 10_000;
        try (Fifo fifo = Fifo.create(backend); FifoTesting.Workers workers = new FifoTesting.Workers()) {
            assertEquals(Fifo.DEFAULT_CAPACITY, fifo.capacity());
            FifoProducer producer = fifo.producer();
            workers.start("producer", () -> {
                for (long i = 0; i < count; i++) {
                    long pos = producer.push(ProxyTrigger.decode(i, i), STEP);
                    assertEquals(i, pos);
                    if (i % fifo.capacity() == 0) {
                        producer.sync(pos, STEP);
                    }
                }
            });
            long[] out = new long[2];
            for (long i = 0; i < count; i++) {
                assertEquals(i, FifoTesting.take(fifo, out, STEP));
                assertEquals(i, out[0], "fst at " + i);
                assertEquals(i, out[1], "snd at " + i);
            }
            workers.join(JOIN);
            assertEquals(count, fifo.tail());
            assertFalse(fifo.poll(out), "nothing after the last trigger");
        }
    }

    /** FifoTest.ZeroTrigger: triggers whose words are all zero are triggers like any other. */
    @Test
    void zeroTrigger() {
        try (Fifo fifo = Fifo.create(backend)) {
            long[] out = {7, 7};
            assertFalse(fifo.poll(out), "a new fifo reads empty");
            assertArrayEquals(new long[] {7, 7}, out, "an empty poll leaves the array alone");
            assertNull(fifo.poll());
            FifoProducer producer = fifo.producer();
            for (int i = 0; i < 32; i++) {
                assertEquals(i, producer.push(ProxyTrigger.decode(0, 0)));
            }
            for (int i = 0; i < 32; i++) {
                assertEquals(ProxyTrigger.decode(0, 0), fifo.poll(), "trigger " + i);
                fifo.pop();
            }
            assertNull(fifo.poll());
            assertEquals(32, fifo.tail());
        }
    }

    /** FifoTest.WrapAtLapBoundary: exactly four laps, every position once with exact words. */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 8, 512})
    void wrapAtLapBoundary(int capacity) throws Exception {
        int count = 4 * capacity;
        try (Fifo fifo = Fifo.create(backend, capacity); FifoTesting.Workers workers = new FifoTesting.Workers()) {
            FifoProducer producer = fifo.producer();
            workers.start("producer", () -> {
                for (long i = 0; i < count; i++) {
                    long pos = producer.push(ProxyTrigger.decode(i, ~i & Long.MAX_VALUE), STEP);
                    assertEquals(i, pos);
                    if (i % capacity == capacity - 1) {
                        producer.sync(pos, STEP);
                    }
                }
            });
            long[] out = new long[2];
            long[] again = new long[2];
            for (long i = 0; i < count; i++) {
                long deadline = System.nanoTime() + STEP.toNanos();
                assertTrue(Waiting.await(() -> fifo.poll(out), deadline), "position " + i);
                assertTrue(fifo.poll(again), "a found trigger stays until popped");
                assertArrayEquals(out, again);
                assertEquals(i, fifo.tail());
                assertEquals(i, out[0], "fst at " + i);
                assertEquals(~i & Long.MAX_VALUE, out[1], "snd at " + i);
                fifo.pop();
            }
            workers.join(JOIN);
            assertFalse(fifo.poll(out), "the stale slots of the last lap do not read as triggers");
            assertEquals(count, fifo.tail());
        }
    }

    /** FifoTest.RejectsNonPowerOfTwoSize, plus the other capacities outside [1, 2^26]. */
    @ParameterizedTest
    @ValueSource(ints = {500, 0, -4, 3, 6, Integer.MIN_VALUE, 1 << 27})
    void rejectsNonPowerOfTwoSize(int capacity) {
        invalid("capacity must be a power of two", () -> Fifo.create(backend, capacity));
    }

    @Test
    void fourProducerThreadsKeepTheirOrderAndLoseNothing() throws Exception {
        int producers = 4;
        int each = 100_000;
        try (Fifo fifo = Fifo.create(backend); FifoTesting.Workers workers = new FifoTesting.Workers()) {
            CountDownLatch go = new CountDownLatch(1);
            for (int p = 0; p < producers; p++) {
                long id = p;
                FifoProducer producer = fifo.producer();
                workers.start("producer-" + p, () -> {
                    assertTrue(go.await(30, TimeUnit.SECONDS));
                    for (long seq = 0; seq < each; seq++) {
                        producer.push(ProxyTrigger.decode(id, seq), STEP);
                    }
                });
            }
            go.countDown();
            long[] next = new long[producers];
            long[] out = new long[2];
            for (long i = 0; i < (long) producers * each; i++) {
                FifoTesting.take(fifo, out, STEP);
                int id = (int) out[0];
                assertTrue(out[0] >= 0 && out[0] < producers, "producer id " + out[0] + " at position " + i);
                assertEquals(next[id]++, out[1], "sequence of producer " + id + " at position " + i);
            }
            workers.join(JOIN);
            for (int p = 0; p < producers; p++) {
                assertEquals(each, next[p], "triggers of producer " + p);
            }
            assertFalse(fifo.poll(out));
        }
    }

    @Test
    void producerOnASecondMappingOfTheBufferPushesIntoTheSameRing() {
        try (Fifo fifo = Fifo.create(backend, 4)) {
            byte[] handle = backend.exportMemory(fifo.buffer(), Transport.HOST_IPC);
            try (DeviceBuffer mapping = backend.importMemory(Transport.HOST_IPC, handle, fifo.buffer().size())) {
                assertTrue(mapping.address() != fifo.buffer().address(), "a second mapping");
                FifoProducer remote = Fifo.producer(mapping, 4);
                FifoProducer local = fifo.producer();
                long[] out = new long[2];
                for (long i = 0; i < 40; i++) {
                    FifoProducer p = i % 3 == 0 ? local : remote;
                    assertEquals(i, p.push(ProxyTrigger.decode(i, i << 20), STEP));
                    assertEquals(i, FifoTesting.take(fifo, out, STEP));
                    assertArrayEquals(new long[] {i, i << 20}, out);
                    p.sync(i, STEP);
                }
                assertEquals(40L, (long) mapping.hostSegment().get(ValueLayout.JAVA_LONG, FifoLayout.HEAD));
                assertEquals(40L, (long) mapping.hostSegment().get(ValueLayout.JAVA_LONG, FifoLayout.TAIL));
            }
        }
    }

    @Test
    void producerOnAFullRingWhoseConsumerNeverComesTimesOut() throws Exception {
        try (Fifo fifo = Fifo.create(backend, 4)) {
            FifoProducer producer = fifo.producer();
            for (int i = 0; i < 4; i++) {
                producer.push(ProxyTrigger.decode(i, i), Duration.ZERO);
            }
            Duration timeout = Duration.ofMillis(300);
            long start = System.nanoTime();
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> producer.push(ProxyTrigger.decode(4, 4), timeout));
            long elapsed = System.nanoTime() - start;
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertEquals("fifo push", e.phase());
            assertTrue(e.getMessage().contains("full") && e.getMessage().contains("position 4"), e.getMessage());
            assertTrue(elapsed >= timeout.toNanos(), "gave up after " + elapsed + " ns");
            assertTrue(elapsed < timeout.toNanos() + TimeUnit.SECONDS.toNanos(5), "gave up after " + elapsed + " ns");

            // two more producers waiting at once both give up by their deadlines
            try (FifoTesting.Workers workers = new FifoTesting.Workers()) {
                for (int w = 0; w < 2; w++) {
                    FifoProducer p = fifo.producer();
                    workers.start("waiter-" + w, () -> {
                        JmscclppException t = assertThrows(JmscclppException.class,
                                () -> p.push(ProxyTrigger.decode(9, 9), Duration.ofMillis(200)));
                        assertEquals(ErrorCode.TIMEOUT, t.code());
                    });
                }
                workers.join(JOIN);
            }

            // the triggers pushed before are still there; sync on one never consumed times out
            long[] out = new long[2];
            assertEquals(0, FifoTesting.take(fifo, out, STEP));
            producer.sync(0, Duration.ZERO);
            JmscclppException s = assertThrows(JmscclppException.class, () -> producer.sync(1, Duration.ofMillis(100)));
            assertEquals(ErrorCode.TIMEOUT, s.code());
            assertEquals("fifo sync", s.phase());
            assertTrue(s.getMessage().contains("position 1") && s.getMessage().contains("tail is 1"), s.getMessage());
        }
    }

    @Test
    void syncReturnsOnceTheProxyPassedThePosition() throws Exception {
        try (Fifo fifo = Fifo.create(backend, 8); FifoTesting.Workers workers = new FifoTesting.Workers()) {
            FifoProducer producer = fifo.producer();
            long pos = -1;
            for (int i = 0; i < 5; i++) {
                pos = producer.push(ProxyTrigger.decode(i, i));
            }
            long last = pos;
            CountDownLatch synced = new CountDownLatch(1);
            workers.start("sync", () -> {
                // a timeout beyond any deadline arithmetic; close() interrupts the wait should the test fail
                producer.sync(last, Duration.ofSeconds(Long.MAX_VALUE));
                synced.countDown();
            });
            long[] out = new long[2];
            for (int i = 0; i < 4; i++) {
                FifoTesting.take(fifo, out, STEP);
                assertEquals(1, synced.getCount(), "sync returned before position " + last + " was consumed");
            }
            FifoTesting.take(fifo, out, STEP);
            assertTrue(synced.await(30, TimeUnit.SECONDS));
            workers.join(JOIN);
        }
    }

    @Test
    void misuseIsInvalidUsage() {
        try (Fifo fifo = Fifo.create(backend, 4)) {
            FifoProducer producer = fifo.producer();
            invalid("without a poll", fifo::pop);
            invalid("two words", () -> fifo.poll(new long[1]));
            invalid("negative", () -> producer.push(ProxyTrigger.decode(1, 1), Duration.ofMillis(-1)));
            invalid("negative", () -> producer.sync(0, Duration.ofMillis(-1)));
            invalid("has " + FifoLayout.bytes(8) + " bytes", () -> Fifo.producer(fifo.buffer(), 8));
            invalid("power of two", () -> Fifo.producer(fifo.buffer(), 3));
            producer.push(ProxyTrigger.decode(1, 1));
            assertTrue(fifo.poll(new long[2]));
            fifo.pop();
            invalid("without a poll", fifo::pop);
            assertEquals(1, fifo.tail());
            invalid("39 remain", () -> fifo.encodeDeviceHandle(ByteBuffer.allocate(39)));

            fifo.close();
            fifo.close();
            assertTrue(fifo.isClosed());
            invalid("closed", () -> fifo.poll(new long[2]));
            invalid("closed", fifo::pop);
            invalid("closed", fifo::producer);
            invalid("closed", () -> producer.push(ProxyTrigger.decode(1, 1)));
            invalid("closed", () -> producer.sync(5, Duration.ZERO));
            invalid("closed", () -> Fifo.producer(fifo.buffer(), 4));
        }
    }

    @Test
    void deviceHandleIsLittleEndianAddressesAndCapacity() {
        try (Fifo fifo = Fifo.create(backend, 64)) {
            ByteBuffer out = ByteBuffer.allocate(48).order(ByteOrder.BIG_ENDIAN);
            out.putInt(0x11223344);
            fifo.encodeDeviceHandle(out);
            assertEquals(44, out.position());
            assertEquals(ByteOrder.BIG_ENDIAN, out.order(), "the caller's byte order is restored");
            ByteBuffer in = ByteBuffer.wrap(out.array(), 4, 40).order(ByteOrder.LITTLE_ENDIAN);
            long base = fifo.buffer().address();
            assertFalse(fifo.headInDeviceMemory(), "a host fifo's head is in its buffer");
            assertEquals(base + 128, in.getLong());
            assertEquals(base, in.getLong());
            assertEquals(base + 64, in.getLong());
            assertEquals(base + 24, in.getLong(), "tail cache");
            assertEquals(64, in.getInt());
            assertEquals(0, in.getInt());
            assertEquals(FifoLayout.bytes(64), fifo.buffer().size());
            assertEquals(128 + 64 * 16, fifo.buffer().size());
        }
    }

    @Test
    void gpuFifoKeepsHeadAndTailCacheInDeviceMemoryAndRefusesHostPushes() {
        java.util.List<DeviceBuffer> allocated = new java.util.ArrayList<>();
        Backend gpu = (Backend) java.lang.reflect.Proxy.newProxyInstance(Backend.class.getClassLoader(),
                new Class<?>[] {Backend.class}, (proxy, method, args) -> {
                    if (method.getName().equals("device")) {
                        return Device.gpu(0);
                    }
                    Object result = method.invoke(backend, args);
                    if (method.getName().equals("allocate")) {
                        allocated.add((DeviceBuffer) result);
                    }
                    return result;
                });
        Fifo fifo = Fifo.create(gpu, 8);
        try {
            assertTrue(fifo.headInDeviceMemory());
            assertEquals(1, allocated.size(), "one block of device words");
            DeviceBuffer words = allocated.get(0);
            assertEquals(64, words.size());
            ByteBuffer in = ByteBuffer.allocate(40);
            fifo.encodeDeviceHandle(in);
            in.flip().order(ByteOrder.LITTLE_ENDIAN);
            long base = fifo.buffer().address();
            assertEquals(base + 128, in.getLong(0), "ring");
            assertEquals(words.address(), in.getLong(8), "head in device memory");
            assertEquals(base + 64, in.getLong(16), "tail in the host-visible buffer");
            assertEquals(words.address() + 8, in.getLong(24), "tail cache in device memory");
            assertEquals(8, in.getInt(32));

            FifoProducer producer = fifo.producer();
            invalid("only device code pushes", () -> producer.push(ProxyTrigger.decode(1, 1)));
            producer.sync(-1, Duration.ZERO);
        } finally {
            fifo.close();
        }
        assertTrue(allocated.get(0).isClosed(), "closing the fifo frees its device words");
    }

    private static void invalid(String fragment, Executable call) {
        JmscclppException e = assertThrows(JmscclppException.class, call);
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
    }
}
