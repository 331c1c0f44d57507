package org.jmscclpp.core.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.proxy.ProxyService.Poller;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.testkit.FifoTesting;
import org.jmscclpp.testkit.ProxyFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;

/**
 * A push that times out on a full ring claims nothing, so the fifo stays usable: on a real
 * {@link ProxyService} of the host backend (its fifo in shared memory, a HOST_IPC connection to
 * itself), stuck because its flush subscriber requests nothing, then resumed. Each pushed trigger
 * is a DATA | FLAG of its own 8 bytes, so what the proxy executed is read back from the
 * destination and the semaphore: the pushes that returned a position, and no other.
 */
class FifoAfterTimeoutTest {

    private static final Duration STEP = Duration.ofSeconds(10);
    private static final Duration JOIN = Duration.ofSeconds(60);
    private static final int WORD = 8;

    @TempDir
    Path dir;

    /**
     * The ring fills while the proxy is stuck, a push gives up with TIMEOUT; once the proxy
     * resumes, the next push takes the position the failed one did not, and is delivered and
     * executed; the failed one never is.
     */
    @ParameterizedTest
    @EnumSource(Poller.class)
    void aPushThatTimedOutLeavesTheRingUsableForTheNextPush(Poller poller) {
        int capacity = 4;
        try (ProxyFixture f = new ProxyFixture(dir, 1, 4096, b -> b.fifoCapacity(capacity).flushBuffer(1).poller(poller))) {
            ProxyService p = f.proxy(0);
            FifoProducer producer = p.producer();
            HeldBack subscriber = stick(f, producer);
            // positions 1 (the SYNC the proxy cannot take) to 4 fill the ring
            for (int k = 2; k <= capacity; k++) {
                assertEquals(k, producer.push(data(f, k), STEP));
            }

            long start = System.nanoTime();
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> producer.push(data(f, 9), Duration.ofMillis(200)));
            long elapsed = System.nanoTime() - start;
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertEquals("fifo push", e.phase());
            assertTrue(e.getMessage().contains("position 5") && e.getMessage().contains("claimed no position"),
                    e.getMessage());
            assertTrue(elapsed >= TimeUnit.MILLISECONDS.toNanos(200), "gave up after " + elapsed + " ns");
            assertEquals(5, ProxyFixture.head(p), "the push that gave up claimed nothing");
            assertEquals(1, ProxyFixture.tail(p), "the proxy is still stuck at the SYNC");

            subscriber.request(Long.MAX_VALUE);
            long pos = producer.push(data(f, 5), STEP);
            assertEquals(5, pos, "the next push takes the position the failed one did not");
            producer.sync(pos, STEP);

            assertExecuted(f, Set.of(2L, 3L, 4L, 5L), Set.of(9L));
            p.stop(STEP).block(STEP);
            assertNull(p.failure());
            assertEquals(6, ProxyFixture.tail(p));
            assertEquals(List.of(0L, 1L), subscriber.positions(), "the two SYNCs completed, nothing else");
        }
    }

    /**
     * Ten producer threads race for the seven free slots of a stuck ring (exactly three give up),
     * then, with the ring full, four patient producers and three impatient ones push together: the
     * impatient ones give up, the proxy resumes, the patient ones get through. The proxy executes
     * exactly the eleven pushes that returned a position, which are the positions from 2 to 12
     * with no gap.
     */
    @Test
    void concurrentProducersOfWhichSomeTimeOutLeaveExactlyTheSuccessfulTriggers() throws Exception {
        int capacity = 8;
        Duration impatient = Duration.ofMillis(300);
        try (ProxyFixture f = new ProxyFixture(dir, 1, 4096, b -> b.fifoCapacity(capacity).flushBuffer(1))) {
            ProxyService p = f.proxy(0);
            HeldBack subscriber = stick(f, p.producer());
            ConcurrentMap<Long, Long> pushedAt = new ConcurrentHashMap<>();   // k -> position
            Set<Long> gaveUp = ConcurrentHashMap.newKeySet();

            // phase 1: ten impatient producers, seven slots (positions 2 to 8)
            try (FifoTesting.Workers workers = new FifoTesting.Workers()) {
                CountDownLatch go = new CountDownLatch(1);
                for (long k = 10; k < 20; k++) {
                    startPusher(workers, f, p, k, impatient, go, pushedAt, gaveUp);
                }
                go.countDown();
                workers.join(JOIN);
            }
            assertEquals(7, pushedAt.size(), "pushed " + pushedAt + ", gave up " + gaveUp);
            assertEquals(3, gaveUp.size(), "pushed " + pushedAt + ", gave up " + gaveUp);
            assertEquals(1 + capacity, ProxyFixture.head(p), "the producers that gave up claimed nothing");

            // phase 2: the ring is full; four patient and three impatient producers at once
            try (FifoTesting.Workers patient = new FifoTesting.Workers();
                 FifoTesting.Workers hasty = new FifoTesting.Workers()) {
                CountDownLatch go = new CountDownLatch(1);
                for (long k = 20; k < 24; k++) {
                    startPusher(patient, f, p, k, JOIN, go, pushedAt, gaveUp);
                }
                for (long k = 24; k < 27; k++) {
                    startPusher(hasty, f, p, k, impatient, go, pushedAt, gaveUp);
                }
                go.countDown();
                hasty.join(JOIN);
                assertEquals(6, gaveUp.size(), "the three impatient ones gave up on the full ring: " + gaveUp);
                assertEquals(1 + capacity, ProxyFixture.head(p), "nobody claimed while the ring was full");
                subscriber.request(Long.MAX_VALUE);
                patient.join(JOIN);
            }
            assertEquals(11, pushedAt.size(), "pushed " + pushedAt + ", gave up " + gaveUp);
            assertTrue(LongStream.range(20, 24).allMatch(pushedAt::containsKey), "every patient producer pushed");
            assertEquals(LongStream.rangeClosed(2, 12).boxed().toList(), new TreeSet<>(pushedAt.values()).stream().toList(),
                    "the positions taken, in order, with no gap");

            long last = pushedAt.values().stream().mapToLong(Long::longValue).max().orElseThrow();
            p.producer().sync(last, STEP);
            assertExecuted(f, pushedAt.keySet(), gaveUp);
            p.stop(STEP).block(STEP);
            assertNull(p.failure());
            assertEquals(13, ProxyFixture.tail(p));
            assertEquals(List.of(0L, 1L), subscriber.positions(), "the two SYNCs completed, nothing else");
        }
    }

    /**
     * Subscribes a subscriber that requests nothing and starts the proxy, then pushes two SYNCs:
     * with a flush buffer of one, the proxy takes the first (its completion waits for demand) and
     * cannot take the second, at position 1, so it consumes nothing more until the subscriber
     * requests. Fills the source with a distinct non-zero byte pattern per 8-byte word.
     */
    private static HeldBack stick(ProxyFixture f, FifoProducer producer) {
        MemorySegment src = f.source(0);
        for (long i = 0; i < src.byteSize(); i++) {
            src.set(ValueLayout.JAVA_BYTE, i, (byte) (i % 251 + 1));
        }
        ProxyService p = f.proxy(0);
        HeldBack subscriber = new HeldBack();
        p.flushes().subscribe(subscriber);
        p.start();
        ProxyTrigger sync = ProxyTrigger.of(ProxyTrigger.SYNC, 0, 0, 0, 0, 0, f.semaphores.get(0).value());
        assertEquals(0, producer.push(sync, STEP));
        assertEquals(1, producer.push(sync, STEP));
        long deadline = System.nanoTime() + STEP.toNanos();
        assertTrue(Waiting.await(() -> ProxyFixture.tail(p) == 1, deadline), "the proxy took the first SYNC");
        return subscriber;
    }

    private static void startPusher(FifoTesting.Workers workers, ProxyFixture f, ProxyService p, long k,
                                    Duration timeout, CountDownLatch go, ConcurrentMap<Long, Long> pushedAt,
                                    Set<Long> gaveUp) {
        FifoProducer producer = p.producer();
        workers.start("producer-" + k, () -> {
            go.await();
            try {
                pushedAt.put(k, producer.push(data(f, k), timeout));
            } catch (JmscclppException e) {
                assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
                assertEquals("fifo push", e.phase());
                gaveUp.add(k);
            }
        });
    }

    /** A DATA | FLAG trigger copying the 8 bytes of word {@code k} of the source to word {@code k} of the destination. */
    private static ProxyTrigger data(ProxyFixture f, long k) {
        return ProxyTrigger.of(ProxyTrigger.DATA | ProxyTrigger.FLAG, f.dstIds.get(0).value(), k * WORD,
                f.srcIds.get(0).value(), k * WORD, WORD, f.semaphores.get(0).value());
    }

    /** The words {@code done} arrived, the words {@code never} did not, and there was one signal per word done. */
    private static void assertExecuted(ProxyFixture f, Set<Long> done, Set<Long> never) {
        MemorySegment src = f.source(0);
        MemorySegment dst = f.destination(0);
        for (long k : done) {
            assertEquals(src.get(ValueLayout.JAVA_LONG_UNALIGNED, k * WORD), dst.get(ValueLayout.JAVA_LONG_UNALIGNED,
                    k * WORD), "word " + k + " was pushed and arrived");
        }
        for (long k : never) {
            assertEquals(0, dst.get(ValueLayout.JAVA_LONG_UNALIGNED, k * WORD), "word " + k + " gave up, yet arrived");
        }
        PortChannel ch = f.channel(0);
        for (int i = 0; i < done.size(); i++) {
            assertTrue(ch.poll(), "signal " + i + " of " + done.size());
        }
        assertFalse(ch.poll(), "more signals than pushes that returned a position");
    }

    /** A flush subscriber that requests nothing until told, and keeps the positions it received. */
    private static final class HeldBack extends BaseSubscriber<FlushCompletion> {
        private final List<Long> positions = new CopyOnWriteArrayList<>();

        @Override
        protected void hookOnSubscribe(Subscription subscription) {
            // no demand: the proxy's flush buffer fills and it stops taking SYNC triggers
        }

        @Override
        protected void hookOnNext(FlushCompletion completion) {
            positions.add(completion.fifoPosition());
        }

        List<Long> positions() {
            return List.copyOf(positions);
        }
    }
}
