package org.jmscclpp.core.proxy;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.locks.LockSupport;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;

/**
 * The flushes of one {@link Connection} of a {@link ProxyService}: SYNC triggers of every
 * semaphore over that connection, in fifo order. At most one {@link Connection#flush} is in flight
 * per lane; it covers every SYNC taken before it was issued (a flush completes the writes issued
 * before it, whichever trigger asked), and SYNCs taken meanwhile wait for the next one. A slow
 * connection thus holds back its own lane only, never the proxy loop or other connections.
 *
 * <p>Everything except the completion callback is confined to the proxy loop's thread. The
 * callback runs on whatever thread the connection completes its flush on (the loop's own, inline,
 * for the host backend): it records the outcome in volatile fields and unparks the loop, which
 * does the rest. A connection with a {@linkplain Connection#pollableFlush() polled flush} has no
 * callback: the loop looks at the flush each time round ({@link #poll()}) and keeps the deadline.
 */
final class FlushLane {

    static final int IDLE = 0;
    static final int PENDING = 1;
    static final int DONE = 2;
    static final int FAILED = 3;

    final Connection connection;
    final ConnectionContext context;
    private final ArrayDeque<Pending> waiting = new ArrayDeque<>();
    private final ArrayDeque<Pending> batch = new ArrayDeque<>();
    private @Nullable Disposable inFlight;
    /** The polled flush in flight, with its deadline; confined to the loop's thread. */
    private Connection.@Nullable PolledFlush polled;
    private Duration polledTimeout = Duration.ZERO;
    private long polledDeadline;
    private volatile int outcome = IDLE;
    private volatile long completedAt;
    private volatile @Nullable Throwable error;

    FlushLane(Connection connection) {
        this.connection = connection;
        this.context = connection.context();
    }

    /** Queues a SYNC for the next flush of this lane. */
    void add(Pending sync) {
        waiting.add(sync);
    }

    /** Whether a flush is in flight or finished but not yet handled by the loop. */
    boolean busy() {
        return outcome != IDLE;
    }

    boolean hasWaiting() {
        return !waiting.isEmpty();
    }

    /** {@link #PENDING}, {@link #DONE} or {@link #FAILED} once issued; {@link #IDLE} otherwise. */
    int outcome() {
        return outcome;
    }

    /** When the connection reported the flush done ({@link System#nanoTime()}); valid once not pending. */
    long completedAt() {
        return completedAt;
    }

    @Nullable Throwable error() {
        return error;
    }

    /** The SYNCs the finished flush covers, oldest first; the loop empties it. */
    ArrayDeque<Pending> batch() {
        return batch;
    }

    /**
     * Starts a flush covering every waiting SYNC. Subscribing must not block: the connection's
     * Mono is lazy and completes later, on its thread, or at once on this one.
     */
    void issue(Duration timeout, Thread loop) {
        batch.addAll(waiting);
        waiting.clear();
        error = null;
        outcome = PENDING;
        try {
            Connection.PolledFlush p = connection.pollableFlush();
            if (p != null) {
                polled = p;
                polledTimeout = timeout;
                polledDeadline = Waiting.deadline(timeout);
                poll();
                return;
            }
            inFlight = connection.flush(timeout).subscribe(v -> { }, e -> finish(FAILED, e, loop),
                    () -> finish(DONE, null, loop));
        } catch (RuntimeException e) {
            finish(FAILED, e, loop);
        }
    }

    /**
     * Looks at a polled flush in flight ({@link Connection#pollableFlush()}), on the loop's thread:
     * records {@link #DONE} when it is, {@link #FAILED} when the transport failed or the deadline
     * passed. Does nothing for a subscribed flush, whose callback records the outcome.
     */
    void poll() {
        Connection.PolledFlush p = polled;
        if (p == null) {
            return;
        }
        try {
            if (p.done()) {
                polled = null;
                finish(DONE, null, null);
                return;
            }
        } catch (RuntimeException e) {
            polled = null;
            finish(FAILED, e, null);
            return;
        }
        if (System.nanoTime() - polledDeadline >= 0) {
            polled = null;
            finish(FAILED, JmscclppException.builder(ErrorCode.TIMEOUT, "the flush did not finish within "
                    + polledTimeout).rank(context.rank()).peer(context.remoteRank()).tag(context.tag())
                    .phase("flush").build(), null);
        }
    }

    private void finish(int result, @Nullable Throwable cause, @Nullable Thread loop) {
        completedAt = System.nanoTime();
        error = cause;
        outcome = result;
        if (loop != null && Thread.currentThread() != loop) {
            LockSupport.unpark(loop);
        }
    }

    /** After the loop handled a finished flush: the lane is free for the next. */
    void idle() {
        inFlight = null;
        outcome = IDLE;
    }

    /** Gives up a flush in flight (the proxy failed, or stop ran out of time). */
    void cancel() {
        polled = null;
        Disposable d = inFlight;
        if (d != null) {
            d.dispose();
        }
    }

    /** Fifo positions of the SYNCs this lane holds, in flight and waiting, for error messages. */
    String positions() {
        StringBuilder sb = new StringBuilder("[");
        for (Pending p : batch) {
            sb.append(sb.length() > 1 ? ", " : "").append(p.position);
        }
        for (Pending p : waiting) {
            sb.append(sb.length() > 1 ? ", " : "").append(p.position);
        }
        return sb.append(']').toString();
    }

    /** The first SYNC of the flush in flight, or -1. */
    long firstPosition() {
        Pending p = batch.peekFirst();
        return p == null ? -1 : p.position;
    }

    @Override
    public String toString() {
        return "FlushLane[" + context + ", " + connection.transport() + "]";
    }

    /** One SYNC trigger taken by the loop, waiting for its flush; pooled by the loop, so mutable. */
    static final class Pending {
        int semaphore;
        long position;
        long bytes;
        long takenAt;
        boolean emit;

        Pending set(int semaphore, long position, long bytes, long takenAt, boolean emit) {
            this.semaphore = semaphore;
            this.position = position;
            this.bytes = bytes;
            this.takenAt = takenAt;
            this.emit = emit;
            return this;
        }
    }
}
