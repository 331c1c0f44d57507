package org.jmscclpp.core.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceType;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.metrics.probe.Probes;
import org.junit.jupiter.api.Test;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * The communicator's measuring wrapper keeps a transport's own blocking flush: {@code awaitFlush}
 * goes to the transport's (ETHERNET reads its acks on the caller's thread there), never to the
 * default that blocks on the flush Mono, and is counted as a flush.
 */
class MeteredConnectionTest {

    /** A transport whose Mono flush never ends, and whose own awaitFlush returns at once (or fails). */
    private static final class OwnAwait implements Connection {
        final AtomicInteger awaited = new AtomicInteger();
        volatile boolean fail;
        volatile boolean polled;
        volatile int pollsToDone = 3;
        private final ConnectionContext context;

        OwnAwait(int peer) {
            this.context = new ConnectionContext(90, peer, 0);
        }

        @Override
        public void write(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        }

        @Override
        public void updateAndSync(RegisteredMemory dst, long dstOffset, AtomicLong localToken, long newValue) {
        }

        @Override
        public Mono<Void> flush(Duration timeout) {
            return Mono.never();
        }

        @Override
        public void awaitFlush(Duration timeout) {
            awaited.incrementAndGet();
            if (fail) {
                throw JmscclppException.builder(ErrorCode.TIMEOUT, "late").phase("flush").build();
            }
        }

        @Override
        public @Nullable PolledFlush pollableFlush() {
            if (!polled) {
                return null;
            }
            int n = pollsToDone;
            AtomicInteger polls = new AtomicInteger();
            return () -> {
                if (fail) {
                    throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "failed").phase("flush").build();
                }
                return polls.incrementAndGet() >= n;
            };
        }

        @Override
        public Transport transport() {
            return Transport.ETHERNET;
        }

        @Override
        public Transport remoteTransport() {
            return Transport.ETHERNET;
        }

        @Override
        public Device localDevice() {
            return new Device(DeviceType.CPU, -1);
        }

        @Override
        public ConnectionContext context() {
            return context;
        }

        @Override
        public int maxWriteQueueSize() {
            return 1;
        }

        @Override
        public void close() {
        }
    }

    @Test
    void awaitFlushReachesTheTransportsOwnAndCountsAsAFlush() {
        OwnAwait transport = new OwnAwait(7001);
        Connection metered = Probes.instrument(transport);
        assertSame(transport, Probes.unwrap(metered), "measured by the wrapper");
        metered.awaitFlush(Duration.ofSeconds(1));
        transport.fail = true;
        assertEquals(ErrorCode.TIMEOUT, assertThrows(JmscclppException.class,
                () -> metered.awaitFlush(Duration.ofSeconds(1))).code());
        assertEquals(2, transport.awaited.get());
        ConnectionMetrics m = JmscclppMetrics.connections().stream()
                .filter(c -> c.rank() == 90 && c.peer() == 7001 && c.transport() == Transport.ETHERNET)
                .findFirst().orElseThrow();
        assertEquals(1, m.flushes());
        assertEquals(1, m.flushErrors());
        metered.close();
    }

    /**
     * A transport's polled flush reaches the caller through the wrapper, counted once as a flush
     * when a poll finds it done (not per poll), as an error when a poll throws; a transport without
     * one gives null and nothing is counted.
     */
    @Test
    void aPolledFlushIsTheTransportsAndCountsOnceWhenDone() {
        OwnAwait transport = new OwnAwait(7002);
        Connection metered = Probes.instrument(transport);
        assertNull(metered.pollableFlush(), "the transport has none");
        transport.polled = true;
        Connection.PolledFlush flush = metered.pollableFlush();
        assertFalse(flush.done());
        assertFalse(flush.done());
        assertTrue(flush.done());
        Connection.PolledFlush failing = metered.pollableFlush();
        transport.fail = true;
        assertEquals(ErrorCode.SYSTEM_ERROR, assertThrows(JmscclppException.class, failing::done).code());
        ConnectionMetrics m = JmscclppMetrics.connections().stream()
                .filter(c -> c.rank() == 90 && c.peer() == 7002 && c.transport() == Transport.ETHERNET)
                .findFirst().orElseThrow();
        assertEquals(1, m.flushes());
        assertEquals(1, m.flushErrors());
        metered.close();
    }
}
