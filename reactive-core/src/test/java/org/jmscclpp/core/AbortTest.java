package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.jmscclpp.testkit.ProxyFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.Disposable;

/**
 * The job's abort reaches every wait of a communicator: {@link Communicator#abort} on one rank ends
 * the semaphore, device-semaphore and port-channel waits of the other rank (which wait for 60 s)
 * within a fraction of that, with ABORTED naming the rank that aborted.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AbortTest {

    /** What each blocked wait would wait without the abort. */
    private static final Duration LONG = Duration.ofSeconds(60);
    /** The abort must end it far sooner: the wake-up is immediate, this bounds a busy host. */
    private static final long PROMPT_MS = 5_000;

    @TempDir
    Path dir;

    @Test
    void theSignalIsRaisedOnceTellsItsListenersAndGuardsWaits() {
        AbortSignal s = AbortSignal.create();
        AtomicInteger told = new AtomicInteger();
        Disposable removed = s.onRaise(e -> told.addAndGet(100));
        s.onRaise(e -> told.incrementAndGet());
        removed.dispose();
        assertFalse(s.isRaised());
        assertTrue(s.guard(() -> false, 0, 1, "test").getAsBoolean() == false);

        JmscclppException first = JmscclppException.builder(ErrorCode.REMOTE_ERROR, "rank 3 died").peer(3).build();
        assertTrue(s.raise(first));
        assertFalse(s.raise(JmscclppException.builder(ErrorCode.ABORTED, "later").build()));
        assertEquals(1, told.get());
        assertSame(first, s.cause().orElseThrow());
        assertSame(first, s.whenRaised().block(Duration.ofSeconds(1)));

        // a listener that comes late runs at once; a condition that holds still counts
        s.onRaise(e -> told.incrementAndGet());
        assertEquals(2, told.get());
        assertTrue(s.guard(() -> true, 0, 1, "test").getAsBoolean());
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> s.guard(() -> false, 0, 1, "semaphore wait").getAsBoolean());
        assertEquals(ErrorCode.REMOTE_ERROR, e.code());
        assertEquals(3, e.peer(), "the rank that failed first, not the peer waited for");
        assertEquals("semaphore wait", e.phase());

        assertThrows(UnsupportedOperationException.class, () -> AbortSignal.NEVER.raise(first));
    }

    @Test
    void anAbortOnOneRankEndsTheOtherRanksSemaphoreWaits() throws Exception {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            List<Connection> conns = g.onEveryRank(r -> g.comm(r).connect(1 - r, 0, ProxyFixture.HOST_IPC));
            List<Host2HostSemaphore> host = g.onEveryRank(r -> Host2HostSemaphore.build(g.comm(r), conns.get(r)));
            List<Host2DeviceSemaphore> toDevice = g.onEveryRank(r -> Host2DeviceSemaphore.build(g.comm(r), conns.get(r)));
            List<MemoryDevice2DeviceSemaphore> d2d = g.onEveryRank(
                    r -> MemoryDevice2DeviceSemaphore.build(g.comm(r), conns.get(r)));

            List<CompletableFuture<Void>> waits = new ArrayList<>();
            waits.add(host.get(0).nextSignal(LONG).toFuture());
            waits.add(CompletableFuture.runAsync(() -> toDevice.get(0).deviceHandle().await(LONG),
                    r -> Thread.ofPlatform().start(r)));
            waits.add(CompletableFuture.runAsync(() -> d2d.get(0).deviceHandle().await(LONG),
                    r -> Thread.ofPlatform().start(r)));

            long t0 = System.nanoTime();
            g.comm(1).abort("the test aborts");
            for (CompletableFuture<Void> w : waits) {
                JmscclppException e = failure(w);
                assertEquals(ErrorCode.ABORTED, e.code(), e.getMessage());
                assertEquals(0, e.rank(), e.getMessage());
                assertEquals(1, e.peer(), "names the rank that aborted: " + e.getMessage());
                assertTrue(e.getMessage().contains("the test aborts"), e.getMessage());
            }
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms < PROMPT_MS, "the waits ended " + ms + " ms after the abort");
            assertTrue(g.comm(0).abortSignal().isRaised());
            assertTrue(g.comm(1).abortSignal().isRaised());
        }
    }

    @Test
    void anAbortEndsPortChannelWaitsAndFlushesThroughTheProxy() throws Exception {
        try (ProxyFixture f = new ProxyFixture(dir, 2, 1 << 16)) {
            f.proxies.forEach(p -> p.start());
            PortChannel ch = f.channel(0);
            CompletableFuture<Void> wait = CompletableFuture.runAsync(() -> ch.await(LONG),
                    r -> Thread.ofPlatform().start(r));
            long t0 = System.nanoTime();
            f.group.comm(1).abort("stop everything");
            JmscclppException e = failure(wait);
            assertEquals(ErrorCode.ABORTED, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("stop everything"), e.getMessage());
            // the proxy failed with the abort: later verbs fail at once instead of waiting
            JmscclppException flush = assertThrows(JmscclppException.class, () -> ch.flush(LONG));
            assertEquals(ErrorCode.ABORTED, flush.code(), flush.getMessage());
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            assertTrue(ms < PROMPT_MS, "the port channel ended " + ms + " ms after the abort");
            assertEquals(ErrorCode.ABORTED, f.proxy(0).failure().code());
        }
    }

    private static JmscclppException failure(CompletableFuture<Void> f) throws InterruptedException {
        try {
            f.get(PROMPT_MS * 2, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof JmscclppException je) {
                return je;
            }
            throw new AssertionError("failed with " + c, c);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("the wait did not end after the abort");
        }
        throw new AssertionError("the wait succeeded although nothing signalled it");
    }
}
