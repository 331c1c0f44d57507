package org.jmscclpp.core.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Semaphore;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.testkit.DelegatingConnection;
import org.jmscclpp.testkit.FifoTesting;
import org.jmscclpp.testkit.ProxyFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * A connection with a {@linkplain Connection#pollableFlush() polled flush}: the proxy loop looks at
 * it between triggers (no subscription, no callback), completes the SYNCs it covers once it is
 * done, fails them when it throws, and keeps the deadline itself.
 */
class PolledFlushTest {

    private static final Duration STEP = Duration.ofSeconds(10);
    private static final Duration JOIN = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    /** SYNCs complete when the polled flush reports done, and only then; the subscribed flush is never used. */
    @Test
    void syncsCompleteWhenThePolledFlushIsDoneAndNoSubscriptionIsMade() throws Exception {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64);
             Polled polled = new Polled(f, Duration.ofSeconds(30));
             FifoTesting.Workers workers = new FifoTesting.Workers()) {
            ProxyService p = f.proxy(0);
            StepVerifier.create(p.flushes())
                    .then(() -> {
                        p.start();
                        workers.start("producer", () -> {
                            polled.channel.put(0, 16);          // 0
                            polled.channel.flush(STEP);         // 1: done once the gate opens
                        });
                        assertTrue(Waiting.await(() -> polled.connection.polls.get() > 100,
                                System.nanoTime() + STEP.toNanos()), "the loop polls the flush");
                        assertEquals(0, ProxyFixture.flushedWord(p, polled.id), "not done while the gate is shut");
                        polled.connection.state.set(DONE);
                    })
                    .assertNext(c -> {
                        assertEquals(1, c.fifoPosition());
                        assertEquals(16, c.bytes());
                        assertEquals(polled.id, c.semaphoreId());
                    })
                    .thenCancel()
                    .verify(STEP);
            workers.join(JOIN);
            assertEquals(2, ProxyFixture.flushedWord(p, polled.id));
            assertEquals(1, polled.connection.started.get(), "one polled flush");
            assertEquals(0, polled.connection.subscribed.get(), "flush(Duration) was never subscribed");
        }
    }

    /** A polled flush that throws fails the proxy with its code, naming the fifo positions; the producer is released. */
    @Test
    void aPolledFlushThatThrowsFailsTheProxyAndReleasesTheProducer() throws Exception {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64);
             Polled polled = new Polled(f, Duration.ofSeconds(30));
             FifoTesting.Workers workers = new FifoTesting.Workers()) {
            ProxyService p = f.proxy(0);
            AtomicReference<JmscclppException> producer = new AtomicReference<>();
            StepVerifier.create(p.flushes())
                    .then(() -> {
                        p.start();
                        workers.start("producer", () -> producer.set(assertThrows(JmscclppException.class,
                                () -> polled.channel.flush(JOIN))));
                        assertTrue(Waiting.await(() -> polled.connection.polls.get() > 0,
                                System.nanoTime() + STEP.toNanos()));
                        polled.connection.state.set(FAILS);
                    })
                    .expectErrorSatisfies(e -> {
                        JmscclppException je = (JmscclppException) e;
                        assertEquals(ErrorCode.SYSTEM_ERROR, je.code());
                        assertTrue(je.getMessage().contains("fifo positions [0]"), je.getMessage());
                        assertTrue(je.getMessage().contains("the stream failed"), je.getMessage());
                        assertEquals(17, je.tag());
                    })
                    .verify(STEP);
            workers.join(JOIN);
            assertEquals(ErrorCode.REMOTE_ERROR, producer.get().code());
        }
    }

    /** A polled flush that never finishes errors with TIMEOUT at the proxy's flush timeout. */
    @Test
    void aPolledFlushThatNeverFinishesTimesOut() throws Exception {
        Duration timeout = Duration.ofMillis(200);
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64, b -> b.flushTimeout(timeout));
             Polled polled = new Polled(f, timeout);
             FifoTesting.Workers workers = new FifoTesting.Workers()) {
            ProxyService p = f.proxy(0);
            long[] started = new long[1];
            StepVerifier.create(p.flushes())
                    .then(() -> {
                        started[0] = System.nanoTime();
                        p.start();
                        workers.start("producer", () -> assertThrows(JmscclppException.class,
                                () -> polled.channel.flush(JOIN)));
                    })
                    .expectErrorSatisfies(e -> {
                        JmscclppException je = (JmscclppException) e;
                        assertEquals(ErrorCode.TIMEOUT, je.code());
                        assertTrue(je.getMessage().contains("did not finish within PT0.2S"), je.getMessage());
                        assertTrue(System.nanoTime() - started[0] >= timeout.toNanos(), "not before the deadline");
                    })
                    .verify(STEP);
            workers.join(JOIN);
        }
    }

    static final int PENDING = 0;
    static final int DONE = 1;
    static final int FAILS = 2;

    /** A semaphore of the fixture's rank 0 over a self-connection on tag 17 whose flushes are polled, with a channel. */
    private static final class Polled implements AutoCloseable {
        final PolledConnection connection;
        final Host2DeviceSemaphore semaphore;
        final SemaphoreId id;
        final PortChannel channel;

        Polled(ProxyFixture f, Duration timeout) {
            Communicator comm = f.group.comm(0);
            Connection real = comm.connect(0, 17, ProxyFixture.HOST_IPC).block(ProxyFixture.WAIT);
            Semaphore built = comm.buildSemaphore(real).block(ProxyFixture.WAIT);
            connection = new PolledConnection(real);
            Semaphore over = new Semaphore(connection, built.localMemory().buffer(), built.localMemory(),
                    built.remoteMemory());
            semaphore = new Host2DeviceSemaphore(over, f.group.backend);
            id = f.proxy(0).addSemaphore(semaphore);
            channel = f.proxy(0).portChannel(id, f.dstIds.get(0), f.srcIds.get(0));
        }

        @Override
        public void close() {
            connection.state.set(DONE);
            semaphore.close();
        }
    }

    /** The real connection, except that its flushes are polled and finish when {@link #state} says. */
    private static final class PolledConnection extends DelegatingConnection {
        final AtomicInteger state = new AtomicInteger(PENDING);
        final AtomicLong polls = new AtomicLong();
        final AtomicInteger started = new AtomicInteger();
        final AtomicInteger subscribed = new AtomicInteger();

        PolledConnection(Connection real) {
            super(real);
        }

        @Override
        public @Nullable PolledFlush pollableFlush() {
            started.incrementAndGet();
            return () -> {
                polls.incrementAndGet();
                return switch (state.get()) {
                    case DONE -> true;
                    case FAILS -> throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the stream failed")
                            .rank(0).peer(0).tag(17).phase("flush").build();
                    default -> false;
                };
            };
        }

        @Override
        public Mono<Void> flush(Duration timeout) {
            return Mono.defer(() -> {
                subscribed.incrementAndGet();
                return real.flush(timeout);
            });
        }
    }
}
