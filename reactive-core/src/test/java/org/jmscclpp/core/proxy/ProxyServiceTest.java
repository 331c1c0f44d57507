package org.jmscclpp.core.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.stream.Stream;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.proxy.ProxyService.Poller;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Semaphore;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.testkit.FifoTesting;
import org.jmscclpp.testkit.DelegatingConnection;
import org.jmscclpp.testkit.ProxyFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * The proxy service: the flush Flux (order, positions, bytes, backpressure, cancellation, stop),
 * flushes of a slow connection, failing triggers, the lifecycle and the registry's limits.
 */
class ProxyServiceTest {

    private static final Duration STEP = Duration.ofSeconds(10);
    private static final Duration JOIN = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    /** Completions of one connection come in fifo order, with exact positions and DATA bytes since the previous SYNC. */
    @Test
    void completionsComeInFifoOrderWithPositionsAndBytes() {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 4096)) {
            ProxyService p = f.proxy(0);
            PortChannel ch = f.channel(0);
            ConnectionContext ctx = f.connections.get(0).context();
            SemaphoreId sem = f.semaphores.get(0);
            StepVerifier.create(p.flushes())
                    .then(() -> {
                        p.start();
                        assertEquals(0, ch.put(0, 100));                    // 0
                        assertEquals(1, ch.put(100, 200, 28));              // 1
                        ch.flush(STEP);                                     // 2: 128 bytes
                        assertEquals(3, ch.signal());                       // 3
                        assertEquals(4, ch.putWithSignal(7, 7));            // 4
                        ch.flush(STEP);                                     // 5: 7 bytes
                        ch.flush(STEP);                                     // 6: nothing since
                        ch.putWithSignalAndFlush(0, 1000, STEP);            // 7: 1000 bytes
                    })
                    .assertNext(c -> assertCompletion(c, ctx, sem, 2, 128))
                    .assertNext(c -> assertCompletion(c, ctx, sem, 5, 7))
                    .assertNext(c -> assertCompletion(c, ctx, sem, 6, 0))
                    .assertNext(c -> assertCompletion(c, ctx, sem, 7, 1000))
                    .then(() -> assertEquals(8, ProxyFixture.flushedWord(p, sem), "flushed word = last SYNC + 1"))
                    .then(() -> p.stop(STEP).block(STEP))
                    .expectComplete()
                    .verify(STEP);
            for (int k = 0; k < 3; k++) {
                assertTrue(ch.poll(), "signal " + k + " of the self-connection");
            }
            assertFalse(ch.poll());
        }
    }

    /**
     * A subscriber that requests one completion at a time, slowly: the loop takes SYNC triggers
     * only while the buffer (2) has room, so the ring (4) fills and the producer waits; then every
     * completion arrives, in order, none lost.
     */
    @Test
    void aSlowSubscriberHoldsProducersBackAndLosesNothing() throws Exception {
        int count = 40;
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64, b -> b.fifoCapacity(4).flushBuffer(2));
             FifoTesting.Workers workers = new FifoTesting.Workers()) {
            ProxyService p = f.proxy(0);
            ProxyTrigger sync = ProxyTrigger.of(ProxyTrigger.SYNC, 0, 0, 0, 0, 0, f.semaphores.get(0).value());
            FifoProducer raw = p.producer();
            AtomicLong slowestPushNanos = new AtomicLong();
            StepVerifier.Step<FlushCompletion> step = StepVerifier.create(p.flushes(), 0)
                    .then(() -> {
                        p.start();
                        workers.start("producer", () -> {
                            for (int i = 0; i < count; i++) {
                                long start = System.nanoTime();
                                assertEquals(i, raw.push(sync, STEP));
                                slowestPushNanos.accumulateAndGet(System.nanoTime() - start, Math::max);
                            }
                        });
                        // two SYNCs taken and buffered, four in the ring, the seventh push waits for room
                        // (claiming no position while it waits)
                        long deadline = System.nanoTime() + STEP.toNanos();
                        assertTrue(Waiting.await(() -> ProxyFixture.head(p) == 6, deadline), "head "
                                + ProxyFixture.head(p));
                        assertEquals(2, ProxyFixture.tail(p), "the loop stopped taking SYNC triggers");
                        assertTrue(Waiting.await(() -> ProxyFixture.flushedWord(p, f.semaphores.get(0)) == 2, deadline),
                                "the two taken were flushed");
                    });
            for (int i = 0; i < count; i++) {
                long pos = i;
                step = step.thenRequest(1)
                        .assertNext(c -> assertEquals(pos, c.fifoPosition()))
                        .thenAwait(Duration.ofMillis(i < 4 ? 40 : 2));
            }
            step.then(() -> assertTrue(ProxyFixture.tail(p) == count))
                    .then(() -> p.stop(STEP).subscribe())
                    .expectComplete()
                    .verify(JOIN);
            workers.join(JOIN);
            assertTrue(slowestPushNanos.get() >= TimeUnit.MILLISECONDS.toNanos(15),
                    "a push waited for the subscriber: " + slowestPushNanos.get() + " ns");
        }
    }

    /** Without a subscriber completions are not kept and never hold producers back; a later subscriber sees later ones. */
    @Test
    void withoutASubscriberCompletionsAreDroppedAndNothingIsHeldBack() {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64, b -> b.flushBuffer(2))) {
            ProxyService p = f.proxy(0);
            PortChannel ch = f.channel(0);
            p.start();
            for (int i = 0; i < 10; i++) {
                ch.flush(STEP);
            }
            StepVerifier.create(p.flushes())
                    .then(() -> ch.put(0, 5))
                    .then(() -> ch.flush(STEP))
                    .assertNext(c -> assertEquals(11, c.fifoPosition()))
                    .thenCancel()
                    .verify(STEP);
        }
    }

    /** Cancelling the flush Flux stops the loop: its thread ends, producers then get ABORTED, start is refused. */
    @ParameterizedTest
    @EnumSource(Poller.class)
    void cancellingTheFluxStopsThePoller(Poller poller) throws Exception {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64, b -> b.poller(poller))) {
            ProxyService p = f.proxy(0);
            PortChannel ch = f.channel(0);
            List<FlushCompletion> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
            Disposable subscription = p.flushes().subscribe(seen::add);
            p.start();
            p.start();   // idempotent while running
            Thread loop = p.thread();
            assertNotNull(loop);
            assertEquals(poller == Poller.VIRTUAL_THREAD, loop.isVirtual());
            assertTrue(loop.getName().startsWith("jmscclpp-proxy-"), loop.getName());
            assertTrue(poller == Poller.VIRTUAL_THREAD || loop.isDaemon());
            ch.flush(STEP);
            assertTrue(Waiting.await(() -> seen.size() == 1, System.nanoTime() + STEP.toNanos()), "one completion");
            subscription.dispose();
            assertTrue(loop.join(JOIN), "the loop thread ended");
            assertFalse(loop.isAlive());
            assertEquals(1, seen.size());
            JmscclppException e = assertThrows(JmscclppException.class, () -> ch.flush(STEP));
            assertEquals(ErrorCode.ABORTED, e.code(), e.getMessage());
            assertEquals(0, e.peer());
            assertInvalid("does not start again", p::start);
        }
    }

    /** The loop does not wait for a slow connection's flush: another connection's flush completes first. */
    @Test
    void aSlowConnectionHoldsBackNeitherTheLoopNorOtherConnections() throws Exception {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64);
             SlowChannel slow = new SlowChannel(f);
             FifoTesting.Workers workers = new FifoTesting.Workers()) {
            ProxyService p = f.proxy(0);
            PortChannel fast = f.channel(0);
            long[] heldSince = new long[1];
            long[] gateOpenedAt = new long[1];
            StepVerifier.create(p.flushes())
                    .then(() -> {
                        p.start();
                        workers.start("slow", () -> {
                            slow.channel.put(0, 16);            // 0
                            slow.channel.flush(STEP);           // 1: held at the gate
                        });
                        assertTrue(Waiting.await(() -> ProxyFixture.tail(p) == 2, System.nanoTime() + STEP.toNanos()));
                        heldSince[0] = System.nanoTime();   // the slow SYNC was taken before this
                        fast.put(0, 3);                         // 2
                        fast.flush(STEP);                       // 3: returns while the slow flush waits
                        assertEquals(0, ProxyFixture.flushedWord(p, slow.id), "the slow flush is still in flight");
                    })
                    .assertNext(c -> assertEquals(List.of(3L, 3L), List.of(c.fifoPosition(), c.bytes())))
                    .then(() -> {
                        gateOpenedAt[0] = System.nanoTime();
                        slow.gate.tryEmitEmpty();
                    })
                    .assertNext(c -> {
                        assertEquals(List.of(1L, 16L), List.of(c.fifoPosition(), c.bytes()));
                        assertEquals(slow.id, c.semaphoreId());
                        assertEquals(17, c.connection().tag());
                        assertTrue(c.latency().toNanos() >= gateOpenedAt[0] - heldSince[0],
                                "the latency covers the time at the gate: " + c.latency());
                    })
                    .thenCancel()
                    .verify(STEP);
            workers.join(JOIN);
            assertEquals(2, ProxyFixture.flushedWord(p, slow.id));
        }
    }

    /** stop lets a flush in flight finish (its completion is emitted), then completes the Flux and the Mono. */
    @Test
    void stopLetsFlushesInFlightFinishThenCompletesTheFlux() throws Exception {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64);
             SlowChannel slow = new SlowChannel(f);
             FifoTesting.Workers workers = new FifoTesting.Workers()) {
            ProxyService p = f.proxy(0);
            AtomicReference<CompletableFuture<Void>> stopped = new AtomicReference<>();
            StepVerifier.create(p.flushes())
                    .then(() -> {
                        p.start();
                        workers.start("slow", () -> slow.channel.flush(STEP));
                        assertTrue(Waiting.await(() -> ProxyFixture.tail(p) == 1, System.nanoTime() + STEP.toNanos()));
                        stopped.set(p.stop(STEP).toFuture());
                        assertFalse(stopped.get().isDone(), "stop waits for the flush in flight");
                        slow.gate.tryEmitEmpty();
                    })
                    .assertNext(c -> assertEquals(0, c.fifoPosition()))
                    .expectComplete()
                    .verify(STEP);
            stopped.get().get(STEP.toSeconds(), TimeUnit.SECONDS);
            workers.join(JOIN);
            JmscclppException e = assertThrows(JmscclppException.class, () -> f.channel(0).put(0, 1));
            assertEquals(ErrorCode.ABORTED, e.code());
            StepVerifier.create(p.stop()).expectComplete().verify(STEP);
        }
    }

    /** A flush still in flight at stop's deadline is cancelled: the Flux and the stop Mono error with TIMEOUT. */
    @Test
    void stopThatRunsOutOfTimeErrorsWithTimeoutAndReleasesTheWaitingProducer() throws Exception {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64);
             SlowChannel slow = new SlowChannel(f);
             FifoTesting.Workers workers = new FifoTesting.Workers()) {
            ProxyService p = f.proxy(0);
            AtomicReference<JmscclppException> flushError = new AtomicReference<>();
            StepVerifier.create(p.flushes())
                    .then(() -> {
                        p.start();
                        workers.start("slow", () -> flushError.set(assertThrows(JmscclppException.class,
                                () -> slow.channel.flush(JOIN))));
                        assertTrue(Waiting.await(() -> ProxyFixture.tail(p) == 1, System.nanoTime() + STEP.toNanos()));
                        JmscclppException e = assertThrows(JmscclppException.class,
                                () -> p.stop(Duration.ofMillis(100)).block(STEP));
                        assertEquals(ErrorCode.TIMEOUT, e.code());
                        assertTrue(e.getMessage().contains("tag 17 at fifo positions [0]"), e.getMessage());
                    })
                    .expectErrorSatisfies(e -> assertEquals(ErrorCode.TIMEOUT, ((JmscclppException) e).code()))
                    .verify(STEP);
            workers.join(JOIN);
            assertEquals(ErrorCode.ABORTED, flushError.get().code());
        }
    }

    static Stream<Arguments> badTriggers() {
        return Stream.of(
                Arguments.of("a put beyond the destination", "outside registered memory",
                        (Function<ProxyFixture, ProxyTrigger>) f -> ProxyTrigger.of(ProxyTrigger.DATA,
                                f.dstIds.get(0).value(), 1000, f.srcIds.get(0).value(), 0, 64,
                                f.semaphores.get(0).value())),
                Arguments.of("an unknown semaphore", "no semaphore 9",
                        (Function<ProxyFixture, ProxyTrigger>) f -> ProxyTrigger.of(ProxyTrigger.FLAG, 0, 0, 0, 0, 0, 9)),
                Arguments.of("an unknown memory", "no memory 300 (the source)",
                        (Function<ProxyFixture, ProxyTrigger>) f -> ProxyTrigger.of(ProxyTrigger.DATA,
                                f.dstIds.get(0).value(), 0, 300, 0, 8, f.semaphores.get(0).value())),
                Arguments.of("no type", "no type",
                        (Function<ProxyFixture, ProxyTrigger>) f -> ProxyTrigger.decode(0, 0)),
                Arguments.of("a closed connection", "connection is closed",
                        (Function<ProxyFixture, ProxyTrigger>) f -> {
                            f.connections.get(0).close();
                            return ProxyTrigger.of(ProxyTrigger.DATA, f.dstIds.get(0).value(), 0,
                                    f.srcIds.get(0).value(), 0, 8, f.semaphores.get(0).value());
                        }));
    }

    /**
     * A trigger the proxy cannot handle errors the Flux with INVALID_USAGE naming it; producers
     * blocked in a flush and in a push on a full ring get REMOTE_ERROR (the failure attached) at
     * once, long before their 30 s deadlines; later calls fail the same way.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("badTriggers")
    void aFailingTriggerErrorsTheFluxAndReleasesWaitingProducers(String name, String why,
                                                                  Function<ProxyFixture, ProxyTrigger> bad)
            throws Exception {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 1024, b -> b.fifoCapacity(4));
             FifoTesting.Workers workers = new FifoTesting.Workers()) {
            ProxyService p = f.proxy(0);
            PortChannel ch = f.channel(0);
            FifoProducer raw = p.producer();
            Duration patient = Duration.ofSeconds(30);
            assertEquals(0, raw.push(bad.apply(f), STEP));
            AtomicReference<JmscclppException> flusher = new AtomicReference<>();
            AtomicReference<JmscclppException> pusher = new AtomicReference<>();
            long[] releasedAfter = new long[2];
            workers.start("flusher", () -> {
                long start = System.nanoTime();
                flusher.set(assertThrows(JmscclppException.class, () -> ch.flush(patient)));
                releasedAfter[0] = System.nanoTime() - start;
            });
            assertTrue(Waiting.await(() -> ProxyFixture.head(p) == 2, System.nanoTime() + STEP.toNanos()));
            Thread pushing = workers.start("pusher", () -> {
                raw.push(ProxyTrigger.of(ProxyTrigger.FLAG, 0, 0, 0, 0, 0, 0), patient);
                raw.push(ProxyTrigger.of(ProxyTrigger.FLAG, 0, 0, 0, 0, 0, 0), patient);
                long start = System.nanoTime();
                pusher.set(assertThrows(JmscclppException.class,
                        () -> raw.push(ProxyTrigger.of(ProxyTrigger.FLAG, 0, 0, 0, 0, 0, 0), patient)));
                releasedAfter[1] = System.nanoTime() - start;
            });
            // a push that finds the ring full claims nothing: it parks in its wait for room
            assertTrue(Waiting.await(() -> ProxyFixture.head(p) == 4 && pushing.getState() == Thread.State.TIMED_WAITING,
                    System.nanoTime() + STEP.toNanos()), "the ring is full and a push waits");
            StepVerifier.create(p.flushes())
                    .then(p::start)
                    .expectErrorSatisfies(e -> {
                        JmscclppException je = assertInstanceOf(JmscclppException.class, e);
                        assertEquals(ErrorCode.INVALID_USAGE, je.code(), je.getMessage());
                        assertEquals("proxy", je.phase());
                        assertTrue(je.getMessage().contains("fifo position 0"), je.getMessage());
                        assertTrue(je.getMessage().contains(why), je.getMessage());
                    })
                    .verify(STEP);
            workers.join(JOIN);
            for (JmscclppException e : List.of(flusher.get(), pusher.get())) {
                assertEquals(ErrorCode.REMOTE_ERROR, e.code(), e.getMessage());
                assertTrue(e.getMessage().contains("failed with INVALID_USAGE") && e.getMessage().contains("position 0"),
                        e.getMessage());
            }
            assertSame(p.failure(), flusher.get().getCause(), "the channel names the proxy's failure");
            assertEquals(0, flusher.get().peer());
            for (long nanos : releasedAfter) {
                assertTrue(nanos < TimeUnit.SECONDS.toNanos(10), "released after " + nanos + " ns");
            }
            assertEquals(ErrorCode.REMOTE_ERROR, assertThrows(JmscclppException.class, () -> ch.put(0, 8)).code());
            assertEquals(ErrorCode.REMOTE_ERROR, assertThrows(JmscclppException.class, () -> ch.await(STEP)).code());
            StepVerifier.create(p.stop()).expectComplete().verify(STEP);
        }
    }

    /**
     * A producer in another mapping of the fifo (another process, in real use) reaches the loop
     * and sees the stop in the fifo's memory; the public buffer is the fifo's.
     */
    @Test
    void aProducerOnAnotherMappingSeesTheStop() {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64)) {
            ProxyService p = f.proxy(0);
            DeviceBuffer fifo = p.fifoBuffer();
            assertSame(p.fifo().buffer(), fifo);
            assertEquals(FifoLayout.bytes(p.fifoCapacity()), fifo.size());
            byte[] handle = f.group.backend.exportMemory(fifo, Transport.HOST_IPC);
            try (DeviceBuffer mapping = f.group.backend.importMemory(Transport.HOST_IPC, handle, fifo.size())) {
                FifoProducer other = Fifo.producer(mapping, p.fifoCapacity());
                p.start();
                long pos = other.push(ProxyTrigger.of(ProxyTrigger.FLAG, 0, 0, 0, 0, 0, 0), STEP);
                other.sync(pos, STEP);
                p.stop(STEP).block(STEP);
                other.sync(pos, STEP);   // consumed before the stop: still fine
                JmscclppException e = assertThrows(JmscclppException.class,
                        () -> other.push(ProxyTrigger.of(ProxyTrigger.FLAG, 0, 0, 0, 0, 0, 0), STEP));
                assertEquals(ErrorCode.ABORTED, e.code());
                assertTrue(e.getMessage().contains("stopped at fifo position 1"), e.getMessage());
                long start = System.nanoTime();
                JmscclppException s = assertThrows(JmscclppException.class, () -> other.sync(pos + 1, STEP));
                assertEquals(ErrorCode.ABORTED, s.code(), s.getMessage());
                assertEquals("fifo sync", s.phase());
                assertTrue(System.nanoTime() - start < STEP.toNanos() / 2, "sync gave up at once, not at its deadline");
            }
        }
    }

    /** close() from the flush subscriber (the loop's own thread) does not deadlock; the loop frees the memory as it ends. */
    @Test
    void closingFromTheSubscriberFreesTheMemoryWhenTheLoopEnds() {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64)) {
            ProxyService p = f.proxy(0);
            p.flushes().subscribe(c -> p.close());
            p.start();
            // a raw push: a channel's flush could find the memory gone before it looks at its word
            p.producer().push(ProxyTrigger.of(ProxyTrigger.SYNC, 0, 0, 0, 0, 0, f.semaphores.get(0).value()), STEP);
            assertTrue(Waiting.await(() -> p.fifo().isClosed() && p.flushedWords().isClosed(),
                    System.nanoTime() + STEP.toNanos()), "the loop freed the fifo and the words");
            assertInvalid("closed", () -> p.addMemory(f.memories.get(0)));
            assertInvalid("closed", p::fifoBuffer);
            p.close();
        }
    }

    /**
     * The flush Flux takes one subscriber at a time: a second one while the first is subscribed gets
     * INVALID_USAGE saying so (not Reactor's IllegalStateException), and the first keeps its completions.
     */
    @Test
    void aSecondSubscriberOfTheFluxIsInvalidUsageAndTheFirstKeepsItsCompletions() {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64)) {
            ProxyService p = f.proxy(0);
            PortChannel ch = f.channel(0);
            p.start();
            StepVerifier.create(p.flushes())
                    .then(() -> StepVerifier.create(p.flushes())
                            .expectErrorSatisfies(e -> {
                                assertTrue(e instanceof JmscclppException, "a JmscclppException, not " + e);
                                assertEquals(ErrorCode.INVALID_USAGE, ((JmscclppException) e).code(), e.getMessage());
                                assertTrue(e.getMessage().contains("one subscriber"), e.getMessage());
                            })
                            .verify(STEP))
                    .then(() -> ch.flush(STEP))
                    .assertNext(c -> assertEquals(0, c.fifoPosition()))
                    .thenCancel()
                    .verify(STEP);
        }
    }

    @Test
    void stopOfAServiceNeverStartedCompletesTheFluxAndAbortsProducers() {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64)) {
            ProxyService p = f.proxy(0);
            StepVerifier.create(p.flushes()).then(() -> p.stop(STEP).block(STEP)).expectComplete().verify(STEP);
            assertEquals(ErrorCode.ABORTED, assertThrows(JmscclppException.class, () -> f.channel(0).signal()).code());
            assertInvalid("does not start again", p::start);
        }
    }

    @Test
    void registryLimitsAndUnknownIdsAreInvalidUsage() {
        try (ProxyFixture f = new ProxyFixture(dir, 1, 64)) {
            ProxyService p = f.proxy(0);
            RegisteredMemory m = f.memories.get(0);
            for (int i = 2; i <= ProxyTrigger.MAX_MEMORY_ID; i++) {
                assertEquals(i, p.addMemory(m).value());
            }
            assertInvalid("at most 512 memories", () -> p.addMemory(m));
            Semaphore s = p.semaphore(f.semaphores.get(0)).semaphore();
            List<Host2DeviceSemaphore> extra = new ArrayList<>();
            try {
                for (int i = 1; i <= ProxyTrigger.MAX_SEMAPHORE_ID; i++) {
                    Host2DeviceSemaphore h = new Host2DeviceSemaphore(s, f.group.backend);
                    extra.add(h);
                    assertEquals(i, p.addSemaphore(h).value());
                }
                Host2DeviceSemaphore h = new Host2DeviceSemaphore(s, f.group.backend);
                extra.add(h);
                assertInvalid("at most 1024 semaphores", () -> p.addSemaphore(h));
            } finally {
                extra.forEach(Host2DeviceSemaphore::close);
            }
            assertInvalid("semaphore id is 0 to 1023", () -> new SemaphoreId(1024));
            assertInvalid("memory id is 0 to 511", () -> new MemoryId(-1));
            try (ProxyService other = ProxyService.builder(f.group.backend).build()) {
                assertInvalid("semaphore 0 was not added", () -> other.portChannel(new SemaphoreId(0), new MemoryId(0),
                        new MemoryId(0)));
                other.addSemaphore(p.semaphore(f.semaphores.get(0)));
                assertInvalid("memory 0 was not added", () -> other.portChannel(new SemaphoreId(0), new MemoryId(0),
                        new MemoryId(0)));
            }
            ProxyService.Builder b = ProxyService.builder(f.group.backend);
            assertInvalid("power of two", () -> b.fifoCapacity(3));
            assertInvalid("1 to 65536", () -> b.flushBuffer(0));
            assertInvalid("positive", () -> b.flushTimeout(Duration.ZERO));
        }
    }

    private static void assertCompletion(FlushCompletion c, ConnectionContext ctx, SemaphoreId sem, long pos,
                                         long bytes) {
        assertEquals(ctx, c.connection());
        assertEquals(sem, c.semaphoreId());
        assertEquals(pos, c.fifoPosition(), "position");
        assertEquals(bytes, c.bytes(), "bytes of position " + pos);
        assertFalse(c.latency().isNegative());
        assertTrue(c.latency().compareTo(STEP) < 0, c.latency()::toString);
    }

    private static void assertInvalid(String fragment, Executable call) {
        JmscclppException e = assertThrows(JmscclppException.class, call);
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e::getMessage);
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
    }

    /**
     * A second semaphore of the fixture's rank 0, over a self-connection on tag 17 whose flushes
     * wait for {@link #gate} (once open, flushes complete at once), added to the rank's proxy with
     * a channel of its own.
     */
    private static final class SlowChannel implements AutoCloseable {
        final Sinks.Empty<Void> gate = Sinks.empty();
        final Host2DeviceSemaphore semaphore;
        final SemaphoreId id;
        final PortChannel channel;

        SlowChannel(ProxyFixture f) {
            Communicator comm = f.group.comm(0);
            Connection real = comm.connect(0, 17, ProxyFixture.HOST_IPC).block(ProxyFixture.WAIT);
            Semaphore built = comm.buildSemaphore(real).block(ProxyFixture.WAIT);
            Connection gated = new GatedConnection(real, gate.asMono());
            Semaphore over = new Semaphore(gated, built.localMemory().buffer(), built.localMemory(), built.remoteMemory());
            semaphore = new Host2DeviceSemaphore(over, f.group.backend);
            id = f.proxy(0).addSemaphore(semaphore);
            channel = f.proxy(0).portChannel(id, f.dstIds.get(0), f.srcIds.get(0));
        }

        @Override
        public void close() {
            gate.tryEmitEmpty();
            semaphore.close();
        }
    }

    /** A connection whose flushes complete only once {@code gate} completes; everything else is the real one's. */
    private static final class GatedConnection extends DelegatingConnection {
        private final Mono<Void> gate;

        GatedConnection(Connection real, Mono<Void> gate) {
            super(real);
            this.gate = gate;
        }

        @Override
        public Mono<Void> flush(Duration timeout) {
            return gate.then(real.flush(timeout));
        }
    }
}
