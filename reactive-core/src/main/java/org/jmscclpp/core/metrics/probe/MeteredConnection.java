package org.jmscclpp.core.metrics.probe;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A connection that counts what it is asked to do, then does it through the transport's own: a
 * write or signal that the transport rejected (it throws) is not counted; a flush is timed from
 * subscription to completion and, while a recording wants it, emitted as a {@link FlushEvent}.
 * The communicator wraps every connection it makes in one, so every transport is measured in
 * this one place.
 */
final class MeteredConnection implements Connection, TimedMono.Timing {

    private final Connection delegate;
    private final ConnectionProbe probe;
    private final ConnectionContext context;
    private final AtomicBoolean closed = new AtomicBoolean();
    final LongAdder bytes = new LongAdder();
    final LongAdder writes = new LongAdder();
    final LongAdder signals = new LongAdder();
    final LongAdder flushes = new LongAdder();
    final LongAdder flushErrors = new LongAdder();
    final LongAdder flushNanos = new LongAdder();
    /** {@link #bytes} when the last flush was subscribed: a flush event's bytes are the difference. */
    private final AtomicLong bytesAtLastFlush = new AtomicLong();

    MeteredConnection(Connection delegate, ConnectionProbe probe) {
        this.delegate = delegate;
        this.probe = probe;
        this.context = delegate.context();
        probe.opened(this);
    }

    Connection delegate() {
        return delegate;
    }

    @Override
    public void write(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        delegate.write(dst, dstOffset, src, srcOffset, size);
        bytes.add(size);
        writes.increment();
    }

    @Override
    public void updateAndSync(RegisteredMemory dst, long dstOffset, AtomicLong localToken, long newValue) {
        delegate.updateAndSync(dst, dstOffset, localToken, newValue);
        signals.increment();
    }

    /** The transport's own combined operation (one socket write on ETHERNET), counted as a write and a signal. */
    @Override
    public void writeAndUpdate(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size,
                               RegisteredMemory tokenDst, long tokenOffset, AtomicLong localToken, long newValue) {
        delegate.writeAndUpdate(dst, dstOffset, src, srcOffset, size, tokenDst, tokenOffset, localToken, newValue);
        bytes.add(size);
        writes.increment();
        signals.increment();
    }

    @Override
    public Mono<Void> flush(Duration timeout) {
        return new TimedMono(delegate.flush(timeout), this);
    }

    /** The transport's polled flush, timed from its start to the poll that found it done (or failed). */
    @Override
    public @Nullable PolledFlush pollableFlush() {
        long t0 = System.nanoTime();
        PolledFlush flush;
        try {
            flush = delegate.pollableFlush();
        } catch (RuntimeException | Error e) {
            end(start(), System.nanoTime() - t0, e);
            throw e;
        }
        if (flush == null) {
            return null;   // nothing started: the caller's flush(Duration) is the one measured
        }
        Object started = start();
        return () -> {
            boolean done;
            try {
                done = flush.done();
            } catch (RuntimeException | Error e) {
                end(started, System.nanoTime() - t0, e);
                throw e;
            }
            if (done) {
                end(started, System.nanoTime() - t0, null);
            }
            return done;
        };
    }

    /** The transport's own blocking flush (ETHERNET's reads its acks on this thread), timed as a flush. */
    @Override
    public void awaitFlush(Duration timeout) {
        Object started = start();
        long t0 = System.nanoTime();
        try {
            delegate.awaitFlush(timeout);
        } catch (RuntimeException | Error e) {
            end(started, System.nanoTime() - t0, e);
            throw e;
        }
        end(started, System.nanoTime() - t0, null);
    }

    @Override
    public @Nullable Object start() {
        long now = bytes.sum();
        long since = now - bytesAtLastFlush.getAndSet(now);
        return Probes.JFR ? JfrEvents.beginFlush(Math.max(0, since)) : null;
    }

    @Override
    public void end(@Nullable Object started, long nanos, @Nullable Throwable error) {
        if (error == null) {
            flushes.increment();
            flushNanos.add(nanos);
        } else {
            flushErrors.increment();
        }
        if (started != null) {
            JfrEvents.endFlush(started, context, delegate.transport(), error == null);
        }
    }

    @Override
    public Transport transport() {
        return delegate.transport();
    }

    @Override
    public Transport remoteTransport() {
        return delegate.remoteTransport();
    }

    @Override
    public Device localDevice() {
        return delegate.localDevice();
    }

    @Override
    public ConnectionContext context() {
        return context;
    }

    @Override
    public int maxWriteQueueSize() {
        return delegate.maxWriteQueueSize();
    }

    @Override
    public void close() {
        try {
            delegate.close();
        } finally {
            if (closed.compareAndSet(false, true)) {
                probe.closed(this);
            }
        }
    }

    @Override
    public String toString() {
        return delegate.toString();
    }
}
