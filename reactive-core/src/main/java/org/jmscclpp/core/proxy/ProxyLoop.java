package org.jmscclpp.core.proxy;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.metrics.probe.ProxyProbe;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.core.spi.Tokens;
import org.jmscclpp.core.spi.Tunables;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The polling loop of a {@link ProxyService}: takes triggers from the fifo in position order,
 * handles each (DATA: a write on the semaphore's connection, FLAG: the semaphore's signal, SYNC: a
 * flush on its {@link FlushLane}), pops it, and turns finished flushes into flushed-position
 * words and {@link FlushCompletion}s.
 *
 * <h2>Waiting</h2>
 * With nothing to do the loop spins for {@link Waiting#SPIN_NANOS} with {@link Thread#onSpinWait()}
 * (longer while work has been arriving at short intervals: {@link PacedSpin}; a virtual thread
 * then yields its carrier every 200 µs), then parks, doubling from 1 µs up to {@link #MAX_PARK_NANOS}
 * (up to {@link #MAX_IDLE_PARK_NANOS} once idle for long): a stop, a flush finished on another
 * thread or a delivered completion unparks it at once; a polled flush
 * ({@link org.jmscclpp.core.Connection#pollableFlush()}) is looked at each time round.
 *
 * <h2>Backpressure</h2>
 * {@code outstanding} counts SYNCs taken whose completion is neither delivered to the subscriber
 * nor dropped: in flight, waiting for their lane, or emitted into the sink's buffer and not yet
 * requested. The loop takes a SYNC trigger only while that count is below the buffer size, so
 * the sink's bounded buffer never overflows; otherwise it leaves the trigger in the fifo and
 * looks again later, the fifo fills and producers wait for room. Nothing is dropped, nothing is
 * buffered without bound.
 *
 * <h2>Threads</h2>
 * {@link #run()} is the poller thread. {@link #requestStop} and {@link #delivered()} may be called
 * from any thread; {@link #endUnstarted()} only when the poller never started.
 */
final class ProxyLoop implements Runnable {

    /** Longest park while idle: short enough that producers and flush completions see little delay. */
    static final long MAX_PARK_NANOS = 50_000;
    /**
     * Longest park of a loop idle for long ({@code jmscclpp.proxy.maxIdleParkMicros}, default 5000;
     * at most {@link #MAX_PARK_NANOS} keeps the loop at that). Past {@link #MAX_PARK_NANOS}, a park
     * is at most {@link #IDLE_PARK_SHARE} of the time the loop has been idle: after 100 ms without
     * work it sleeps up to 1 ms, after half a second the whole 5 ms. An idle service's proxy then
     * costs a few hundred wake-ups a second instead of twenty thousand, and the first trigger after a
     * pause waits at most a hundredth of that pause longer (nobody can unpark the loop for a trigger a
     * GPU pushes, so the park is all the latency it adds).
     */
    static final long MAX_IDLE_PARK_NANOS = Tunables.longValue("jmscclpp.proxy.maxIdleParkMicros", 5_000,
            MAX_PARK_NANOS / 1_000, 10_000_000) * 1_000;
    /** The share of its idle time a long-idle loop may sleep in one park. */
    static final long IDLE_PARK_SHARE = 100;
    private static final long FIRST_PARK_NANOS = 1_000;

    private final Fifo fifo;
    private final MemorySegment flushed;
    private final AtomicReferenceArray<@Nullable RegisteredMemory> memories;
    private final AtomicReferenceArray<ProxyService.@Nullable Entry> semaphores;
    private final Sinks.Many<FlushCompletion> sink;
    private final int flushBuffer;
    /** How long the loop polls after going idle before it parks. */
    private final long idleSpinNanos;
    private final Duration flushTimeout;
    private final Runnable onExit;
    private final AtomicInteger outstanding = new AtomicInteger();
    private final AtomicBoolean stopRequested = new AtomicBoolean();
    private final AtomicBoolean ended = new AtomicBoolean();
    private final Sinks.Empty<Void> terminated = Sinks.empty();
    private volatile long stopDeadline;
    private volatile @Nullable Thread thread;
    private volatile @Nullable JmscclppException failure;
    private volatile @Nullable JmscclppException abortRequest;

    // confined to the poller thread
    private final long[] words = new long[2];
    private final long[] bytesSinceFlush = new long[ProxyTrigger.MAX_SEMAPHORE_ID + 1];
    private final ArrayDeque<FlushLane.Pending> pool = new ArrayDeque<>();
    private final List<FlushLane> busy = new ArrayList<>();
    private @Nullable JmscclppException stopError;
    /** Counts the triggers handled; null with metrics off. Set before the thread starts. */
    private @Nullable ProxyProbe probe;

    ProxyLoop(Fifo fifo, MemorySegment flushed, AtomicReferenceArray<@Nullable RegisteredMemory> memories,
              AtomicReferenceArray<ProxyService.@Nullable Entry> semaphores, Sinks.Many<FlushCompletion> sink,
              int flushBuffer, Duration flushTimeout, long idleSpinNanos, Runnable onExit) {
        this.idleSpinNanos = idleSpinNanos;
        this.fifo = fifo;
        this.flushed = flushed;
        this.memories = memories;
        this.semaphores = semaphores;
        this.sink = sink;
        this.flushBuffer = flushBuffer;
        this.flushTimeout = flushTimeout;
        this.onExit = onExit;
        for (int i = 0; i < flushBuffer; i++) {
            pool.add(new FlushLane.Pending());
        }
    }

    /** Gives the loop its measurements ({@code null}: none), before its thread starts. */
    void meter(@Nullable ProxyProbe probe) {
        this.probe = probe;
    }

    /** Records the thread that will run this loop, before it starts: flush callbacks and stop unpark it. */
    void bind(Thread poller) {
        this.thread = poller;
    }

    /** Completes when the loop has ended; errors with TIMEOUT when flushes outlived the stop's bound. */
    Mono<Void> terminated() {
        return terminated.asMono();
    }

    /** The error that ended the loop, or null. */
    @Nullable JmscclppException failure() {
        return failure;
    }

    /**
     * Asks the loop to stop taking triggers and to end once the flushes in flight finished, or
     * at {@code deadlineNanos}. The first request's deadline holds. Any thread.
     */
    void requestStop(long deadlineNanos) {
        if (!stopRequested.get()) {
            stopDeadline = deadlineNanos;
            stopRequested.set(true);
        }
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /**
     * The job failed: the loop fails with {@code cause} at its next look (as a failed trigger
     * would), so producers, port-channel waits and device-side waits, which read the fifo's state,
     * end at once instead of at their deadlines. The first request holds. Any thread.
     */
    void abort(JmscclppException cause) {
        if (abortRequest == null) {
            abortRequest = cause;
        }
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    /** The subscriber received a completion: its slot in the buffer is free again. Any thread. */
    void delivered() {
        if (outstanding.getAndDecrement() == flushBuffer) {
            Thread t = thread;
            if (t != null && t != Thread.currentThread()) {
                LockSupport.unpark(t);
            }
        }
    }

    /** Ends a loop whose thread never started: producers see "stopped", the flush Flux completes. */
    void endUnstarted() {
        if (ended.compareAndSet(false, true)) {
            try {
                fifo.markStopped(0);
            } catch (JmscclppException e) {
                // the fifo is closed: producers already fail on its memory
            }
            sink.tryEmitComplete();
            terminated.tryEmitEmpty();
        }
    }

    @Override
    public void run() {
        try {
            poll();
            if (failure == null) {
                finishStop();
            }
        } catch (Throwable e) {
            JmscclppException error = e instanceof JmscclppException je ? je
                    : JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "the proxy loop failed: " + e)
                    .phase("proxy").cause(e).build();
            fail(error, fifo.tail());
            if (e instanceof Error err) {
                throw err;
            }
        } finally {
            end();
        }
    }

    private void end() {
        if (ended.compareAndSet(false, true)) {
            try {
                onExit.run();
            } finally {
                JmscclppException e = stopError;
                if (e != null) {
                    terminated.tryEmitError(e);
                } else {
                    terminated.tryEmitEmpty();
                }
            }
        }
    }

    private void poll() {
        Thread self = Thread.currentThread();
        Waiting.Backoff backoff = new Waiting.Backoff(MAX_PARK_NANOS, idleSpinNanos);
        PacedSpin paced = new PacedSpin(idleSpinNanos);
        long spin = idleSpinNanos;
        while (!stopRequested.get()) {
            boolean progress = progressFlushes(self);
            if (failure != null) {
                return;
            }
            JmscclppException aborted = abortRequest;
            if (aborted != null) {
                fail(JmscclppException.builder(aborted.code(), "the proxy stopped: " + aborted.detail())
                        .rank(aborted.rank()).peer(aborted.peer()).phase("proxy").cause(aborted).build(), fifo.tail());
                return;
            }
            if (fifo.poll(words) && roomFor(words[1])) {
                long pos = fifo.tail();
                ProxyProbe p = probe;
                long taken = p != null ? System.nanoTime() : 0;
                try {
                    handle(words[0], words[1], pos, self);
                } catch (RuntimeException e) {
                    fail(triggerError(e, pos, words[0], words[1]), pos);
                    return;
                }
                long nanos = p != null ? System.nanoTime() - taken : 0;
                fifo.pop();
                if (p != null) {
                    // after the pop: a reader that sees the count also sees the fifo without this trigger
                    p.handled(ProxyTrigger.type(words[1]), nanos);
                }
                progress = true;
            }
            if (progress) {
                long idle = backoff.idleNanos();
                if (idle > 0) {
                    spin = paced.next(idle);
                }
                backoff.reset(spin);
            } else if (backoff.spinning()) {
                continue;
            } else if (Thread.interrupted()) {
                // nobody but the service should stop its thread; an interrupt is taken as a stop
                requestStop(System.nanoTime() + ProxyService.DEFAULT_STOP_TIMEOUT.toNanos());
            } else {
                long share = backoff.idleNanos() / IDLE_PARK_SHARE;
                if (share > MAX_PARK_NANOS) {
                    backoff.parkUpTo(Math.min(share, MAX_IDLE_PARK_NANOS));
                } else {
                    backoff.park(MAX_PARK_NANOS);
                }
            }
        }
    }

    /**
     * How long the loop spins before it parks: after each idle spell that ended with work,
     * {@link #next} answers twice the longest of the last {@link #GAPS} spells that were shorter
     * than {@link #PACED_GAP_NANOS} (work arriving at a pace: a ping-pong, a stream of transfers;
     * the pauses between bursts do not count), at least the configured idle spin; just that when no
     * spell was that short. The next trigger is then taken spinning rather than after a park, whose
     * wake-up costs a virtual thread tens of microseconds. A loop whose work stopped spins at most
     * twice {@link #PACED_GAP_NANOS} once, then parks as before. Confined to the loop's thread.
     */
    static final class PacedSpin {
        /** The idle spells remembered. */
        static final int GAPS = 8;
        /** Idle spells shorter than this are work arriving at a pace the loop waits for spinning. */
        static final long PACED_GAP_NANOS = 1_000_000;

        private final long idleSpinNanos;
        private final long[] gaps = new long[GAPS];
        private int at;

        PacedSpin(long idleSpinNanos) {
            this.idleSpinNanos = idleSpinNanos;
            Arrays.fill(gaps, Long.MAX_VALUE);
        }

        /** Records an idle spell of {@code gapNanos} that ended with work; returns the spin for the next. */
        long next(long gapNanos) {
            gaps[at] = gapNanos;
            at = (at + 1) % GAPS;
            long longest = 0;
            for (long g : gaps) {
                if (g < PACED_GAP_NANOS) {
                    longest = Math.max(longest, g);
                }
            }
            return Math.max(idleSpinNanos, 2 * longest);
        }
    }

    /** Whether the trigger with {@code snd} may be taken now: anything but a SYNC, or a SYNC with room. */
    private boolean roomFor(long snd) {
        return (ProxyTrigger.type(snd) & ProxyTrigger.SYNC) == 0 || outstanding.get() < flushBuffer;
    }

    private void handle(long fst, long snd, long pos, Thread self) {
        int type = ProxyTrigger.type(snd);
        if (type == 0) {
            throw new TriggerException("it has no type (DATA, FLAG or SYNC)", null);
        }
        int semaphoreId = ProxyTrigger.semaphoreId(snd);
        ProxyService.Entry entry = semaphores.get(semaphoreId);
        if (entry == null) {
            throw new TriggerException("no semaphore " + semaphoreId + " was added to this proxy service", null);
        }
        boolean flag = (type & ProxyTrigger.FLAG) != 0;
        if ((type & ProxyTrigger.DATA) != 0) {
            RegisteredMemory dst = memory(ProxyTrigger.dstMemoryId(snd), "destination", entry);
            RegisteredMemory src = memory(ProxyTrigger.srcMemoryId(snd), "source", entry);
            long size = ProxyTrigger.size(fst);
            if (flag) {
                // put-with-signal: one operation, which ETHERNET sends as one socket write
                call(entry, () -> entry.semaphore().writeAndSignal(dst, ProxyTrigger.dstOffset(snd), src,
                        ProxyTrigger.srcOffset(fst), size));
            } else {
                call(entry, () -> entry.connection().write(dst, ProxyTrigger.dstOffset(snd), src,
                        ProxyTrigger.srcOffset(fst), size));
            }
            bytesSinceFlush[semaphoreId] += size;
        } else if (flag) {
            call(entry, entry.semaphore()::signal);
        }
        if ((type & ProxyTrigger.SYNC) != 0) {
            FlushLane.Pending p = pool.poll();
            if (p == null) {
                p = new FlushLane.Pending();
            }
            boolean emit = sink.currentSubscriberCount() > 0;
            p.set(semaphoreId, pos, bytesSinceFlush[semaphoreId], System.nanoTime(), emit);
            bytesSinceFlush[semaphoreId] = 0;
            outstanding.incrementAndGet();
            FlushLane lane = entry.lane();
            lane.add(p);
            if (!lane.busy()) {
                lane.issue(flushTimeout, self);
                busy.add(lane);
            }
        }
    }

    private RegisteredMemory memory(int id, String which, ProxyService.Entry entry) {
        RegisteredMemory m = memories.get(id);
        if (m == null) {
            throw new TriggerException("no memory " + id + " (the " + which + ") was added to this proxy service",
                    entry);
        }
        return m;
    }

    private static void call(ProxyService.Entry entry, Runnable action) {
        try {
            action.run();
        } catch (RuntimeException e) {
            throw new TriggerException(e, entry);
        }
    }

    /**
     * Handles every lane whose flush finished: publishes the flushed positions, emits the
     * completions in fifo order, issues the lane's next flush. Returns whether any finished.
     */
    private boolean progressFlushes(Thread self) {
        boolean progress = false;
        for (int i = 0; i < busy.size(); i++) {
            FlushLane lane = busy.get(i);
            int outcome = lane.outcome();
            if (outcome == FlushLane.PENDING) {
                lane.poll();
                outcome = lane.outcome();
                if (outcome == FlushLane.PENDING) {
                    continue;
                }
            }
            if (outcome == FlushLane.FAILED) {
                fail(flushError(lane), lane.firstPosition());
                return true;
            }
            long completedAt = lane.completedAt();
            for (FlushLane.Pending p; (p = lane.batch().poll()) != null; ) {
                publishFlushed(p.semaphore, p.position);
                emit(lane, p, completedAt);
                pool.add(p);
            }
            lane.idle();
            if (lane.hasWaiting()) {
                lane.issue(flushTimeout, self);
            } else {
                busy.remove(i--);
            }
            progress = true;
        }
        return progress;
    }

    /** Stores {@code position + 1} into the semaphore's flushed word with release, never lowering it. */
    private void publishFlushed(int semaphore, long position) {
        long offset = (long) semaphore * Long.BYTES;
        if (Tokens.plain(flushed, offset) <= position) {
            Tokens.release(flushed, offset, position + 1);
        }
    }

    private void emit(FlushLane lane, FlushLane.Pending p, long completedAt) {
        if (!p.emit) {
            outstanding.decrementAndGet();
            return;
        }
        FlushCompletion c = new FlushCompletion(lane.context, new SemaphoreId(p.semaphore), p.position, p.bytes,
                Duration.ofNanos(Math.max(0, completedAt - p.takenAt)));
        if (sink.tryEmitNext(c).isFailure()) {
            // cancelled or terminated: the completion has nowhere to go and is not retained
            outstanding.decrementAndGet();
        }
    }

    /** After a stop request: no more triggers; waits for the flushes in flight until the deadline. */
    private void finishStop() {
        Thread self = Thread.currentThread();
        long park = FIRST_PARK_NANOS;
        while (!busy.isEmpty()) {
            if (progressFlushes(self)) {
                if (failure != null) {
                    return;
                }
                park = FIRST_PARK_NANOS;
                continue;
            }
            long left = stopDeadline - System.nanoTime();
            if (left <= 0) {
                break;
            }
            Thread.interrupted();   // a stop is already under way; an interrupt must not turn the park into a spin
            LockSupport.parkNanos(Math.min(park, left));
            park = Math.min(park * 2, MAX_PARK_NANOS);
        }
        long tail = fifo.tail();
        if (busy.isEmpty()) {
            fifo.markStopped(tail);
            sink.tryEmitComplete();
            return;
        }
        StringBuilder open = new StringBuilder();
        for (FlushLane lane : busy) {
            lane.cancel();
            open.append(open.isEmpty() ? "" : "; ").append("peer ").append(lane.context.remoteRank()).append(" tag ")
                    .append(lane.context.tag()).append(" at fifo positions ").append(lane.positions());
        }
        JmscclppException e = JmscclppException.builder(ErrorCode.TIMEOUT, "the proxy stopped before these flushes "
                + "completed: " + open + "; their completions are lost").phase("proxy stop").build();
        stopError = e;
        fifo.markStopped(tail);
        sink.tryEmitError(e);
    }

    private void fail(JmscclppException e, long position) {
        failure = e;
        try {
            fifo.markFailed(e.code(), position);
        } catch (RuntimeException closed) {
            // the fifo is closed: producers already fail on its memory
        }
        for (FlushLane lane : busy) {
            lane.cancel();
        }
        sink.tryEmitError(e);
    }

    private JmscclppException triggerError(RuntimeException e, long pos, long fst, long snd) {
        ProxyService.Entry entry = null;
        Throwable cause = e;
        if (e instanceof TriggerException te) {
            entry = te.entry;
            cause = te.getCause();   // null when the trigger itself is wrong
        }
        ErrorCode code;
        String why;
        if (cause == null) {
            code = ErrorCode.INVALID_USAGE;
            why = e.getMessage();
        } else if (cause instanceof JmscclppException je) {
            code = je.code();
            why = je.detail();
        } else {
            code = ErrorCode.INTERNAL_ERROR;
            why = cause.toString();
        }
        JmscclppException.Builder b = JmscclppException.builder(code, "the trigger at fifo position " + pos + " ("
                + ProxyTrigger.decode(fst, snd) + ") failed: " + why).phase("proxy").cause(cause);
        if (entry != null) {
            ConnectionContext ctx = entry.connection().context();
            b.rank(ctx.rank()).peer(ctx.remoteRank()).tag(ctx.tag());
        }
        return b.build();
    }

    private JmscclppException flushError(FlushLane lane) {
        Throwable cause = lane.error();
        ErrorCode code = cause instanceof JmscclppException je ? je.code() : ErrorCode.REMOTE_ERROR;
        String why = cause instanceof JmscclppException je ? je.detail() : String.valueOf(cause);
        return JmscclppException.builder(code, "the flush for the SYNC triggers at fifo positions " + lane.positions()
                        + " failed: " + why).rank(lane.context.rank()).peer(lane.context.remoteRank())
                .tag(lane.context.tag()).phase("proxy").cause(cause).build();
    }

    /** A trigger that cannot be handled: its own reason, or a failure of its connection or semaphore. */
    private static final class TriggerException extends RuntimeException {
        final ProxyService.@Nullable Entry entry;

        TriggerException(String reason, ProxyService.@Nullable Entry entry) {
            super(reason, null, false, false);
            this.entry = entry;
        }

        TriggerException(RuntimeException cause, ProxyService.Entry entry) {
            super(cause.getMessage(), cause, false, false);
            this.entry = entry;
        }
    }
}
