package org.jmscclpp.core.proxy;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Tokens;
import org.jmscclpp.core.spi.Waiting;

/**
 * The pushing side of a {@link Fifo}: made by {@link Fifo#producer()} in the fifo's own process,
 * or by {@link Fifo#producer(DeviceBuffer, int)} from a mapping of its buffer in another process.
 * Any number of producers, in any number of threads and processes, push into one fifo at once;
 * each trigger takes the next position, and the proxy sees triggers in position order.
 *
 * <p>A producer remembers the last tail it read, so that it reads the proxy's {@code tail} line
 * only when the ring looks full by that stale value (the proxy's line then stays in its core's
 * cache). Thread-safe; a producer per thread keeps that memory on one core, but sharing one is
 * correct.
 *
 * <p>Every call returns when its work is done; waits spin briefly, then park with a growing delay
 * (never holding a virtual thread's carrier for long), and end at a deadline, or as soon as the
 * proxy has written a stopped or failed state into the fifo's memory (see {@link Fifo}).
 */
public final class FifoProducer {

    private static final VarHandle CACHED_TAIL;
    /** Longest wait: longer timeouts are cut to it, so that the deadline arithmetic cannot overflow. */

    static {
        try {
            CACHED_TAIL = MethodHandles.lookup().findVarHandle(FifoProducer.class, "cachedTail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final DeviceBuffer buffer;
    private final MemorySegment segment;
    private final int capacity;
    private final long mask;
    private final int shift;
    /**
     * A tail value read earlier: never above the real tail, which only grows. Opaque accesses
     * keep it untorn when threads share the producer; a thread storing an older value than another
     * just makes a later push read the tail again.
     */
    @SuppressWarnings("unused")
    private long cachedTail;
    /** False for a GPU fifo, whose head is in device memory: only device code pushes there. */
    private final boolean hostHead;

    FifoProducer(DeviceBuffer buffer, MemorySegment segment, int capacity, boolean hostHead) {
        this.buffer = buffer;
        this.hostHead = hostHead;
        this.segment = segment;
        this.capacity = capacity;
        this.mask = capacity - 1L;
        this.shift = Integer.numberOfTrailingZeros(capacity);
    }

    /** Triggers the ring holds. */
    public int capacity() {
        return capacity;
    }

    /** {@link #push(ProxyTrigger, Duration)} with {@link Bootstrap#DEFAULT_TIMEOUT}. */
    public long push(ProxyTrigger trigger) {
        return push(trigger, Bootstrap.DEFAULT_TIMEOUT);
    }

    /**
     * Appends {@code trigger} and returns its position (0 for the fifo's first trigger, then
     * 1, 2, …): the value {@link Fifo#tail()} has while the proxy handles it, and the argument of
     * {@link #sync}. Claims the position by an atomic increment of {@code head}; when the ring is
     * full at that position, waits until the proxy has consumed the trigger a lap earlier. Then
     * writes {@code fst}, and {@code snd} with the lap's commit bit by a release store, which is
     * what makes the trigger visible to the proxy.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} when the ring stays full for
     *                           {@code timeout}: the position was claimed and will never be
     *                           written, so the proxy stops there and the fifo is broken for
     *                           every producer (a device producer would abort its kernel); the
     *                           same when the thread is interrupted while it waits;
     *                           {@link ErrorCode#ABORTED} when the proxy has stopped, and
     *                           {@link ErrorCode#REMOTE_ERROR} when it failed (found after claiming
     *                           the position or while waiting for room);
     *                           {@link ErrorCode#INVALID_USAGE} for a negative timeout, when the
     *                           fifo's memory is closed, or when its head is in GPU memory
     */
    public long push(ProxyTrigger trigger, Duration timeout) {
        if (timeout.isNegative()) {
            throw invalid("push", "the timeout is negative: " + timeout);
        }
        if (!hostHead) {
            throw invalid("push", "this fifo's head is in GPU memory: only device code pushes into it");
        }
        try {
            long pos = Tokens.getAndAdd(segment, FifoLayout.HEAD, 1L);
            long state = proxyState();
            if (state != 0) {
                throw proxyGone(state, "push");
            }
            if (pos - capacity >= (long) CACHED_TAIL.getOpaque(this) && pos - capacity >= readTail()) {
                awaitTailAbove(pos - capacity, timeout, "push");
            }
            long slot = FifoLayout.slot(pos, mask);
            Tokens.setPlain(segment, slot, trigger.fst());
            Tokens.release(segment, slot + FifoLayout.SND, trigger.snd() | FifoLayout.commitBit(pos, shift));
            return pos;
        } catch (IllegalStateException | WrongThreadException e) {
            throw closed("push", e);
        }
    }

    /** {@link #sync(long, Duration)} with {@link Bootstrap#DEFAULT_TIMEOUT}. */
    public void sync(long pos) {
        sync(pos, Bootstrap.DEFAULT_TIMEOUT);
    }

    /**
     * Returns once the proxy has consumed position {@code pos} (its tail passed it): the trigger
     * pushed there was handled. Returns at once for a position already consumed.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} after {@code timeout}, or when the
     *                           thread is interrupted while it waits, naming the tail;
     *                           {@link ErrorCode#ABORTED} or {@link ErrorCode#REMOTE_ERROR} when
     *                           the proxy stopped or failed before consuming {@code pos};
     *                           {@link ErrorCode#INVALID_USAGE} for a negative timeout or when the
     *                           fifo's memory is closed
     */
    public void sync(long pos, Duration timeout) {
        if (timeout.isNegative()) {
            throw invalid("sync", "the timeout is negative: " + timeout);
        }
        try {
            if (pos >= (long) CACHED_TAIL.getOpaque(this) && pos >= readTail()) {
                awaitTailAbove(pos, timeout, "sync");
            }
        } catch (IllegalStateException | WrongThreadException e) {
            throw closed("sync", e);
        }
    }

    /** Reads the proxy's tail (acquire: the proxy read the slots below it before it stored it) and caches it. */
    private long readTail() {
        long tail = Tokens.acquire(segment, FifoLayout.TAIL);
        if (tail > (long) CACHED_TAIL.getOpaque(this)) {
            CACHED_TAIL.setOpaque(this, tail);
        }
        return tail;
    }

    private void awaitTailAbove(long pos, Duration timeout, String phase) {
        // saturated: a timeout of centuries must not overflow after the position was claimed
        long deadline = Waiting.deadline(timeout);
        boolean ended = Waiting.await(() -> readTail() > pos || proxyState() != 0, deadline);
        if (ended && readTail() <= pos) {
            throw proxyGone(proxyState(), phase);
        }
        if (!ended) {
            String why = Thread.currentThread().isInterrupted() ? "interrupted while waiting" : "waited "
                    + timeout.toMillis() + " ms";
            String detail = phase.equals("push")
                    ? "the ring of " + capacity + " triggers is full: position " + (pos + capacity) + " " + why
                    + " for the proxy to consume position " + pos + " (tail is " + readTail() + "); the claimed "
                    + "position stays unwritten, so the fifo cannot be used any more"
                    : "position " + pos + " was not consumed: " + why + " (tail is " + readTail() + ")";
            throw JmscclppException.builder(ErrorCode.TIMEOUT, detail).phase("fifo " + phase).build();
        }
    }

    /** The proxy's state word (acquire): 0 while it runs or has not started; see {@link FifoLayout#STATE}. */
    public long proxyState() {
        return Tokens.acquire(segment, FifoLayout.STATE);
    }

    /** The error for a non-zero {@link #proxyState()}: ABORTED when the proxy stopped, REMOTE_ERROR when it failed. */
    public JmscclppException proxyGone(long state, String phase) {
        return FifoLayout.proxyGone(state, Tokens.plain(segment, FifoLayout.STATE_POSITION), "fifo " + phase);
    }

    private JmscclppException closed(String phase, RuntimeException cause) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "the fifo's memory is closed: " + buffer)
                .phase("fifo " + phase).cause(cause).build();
    }

    private static JmscclppException invalid(String phase, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("fifo " + phase).build();
    }

    @Override
    public String toString() {
        return "FifoProducer[" + capacity + " triggers, " + buffer + "]";
    }
}
