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
     * {@link #sync}. Claims the next position {@code h} only once its slot is free, by a
     * compare-and-set of {@code head} from {@code h} to {@code h + 1} while {@code h < tail +
     * capacity}; when the ring is full it waits for room without holding a claim. Then writes
     * {@code fst}, and {@code snd} with the lap's commit bit by a release store, which is what
     * makes the trigger visible to the proxy. A claimed position is always written at once, so a
     * push that gives up leaves nothing behind: the next push, from any producer, takes the
     * position it did not.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} when the ring stays full for
     *                           {@code timeout}, or the thread is interrupted while it waits: no
     *                           position was claimed and the fifo stays usable;
     *                           {@link ErrorCode#ABORTED} when the proxy has stopped, and
     *                           {@link ErrorCode#REMOTE_ERROR} when it failed (found before
     *                           claiming a position or while waiting for room);
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
            long pos = claim(timeout);
            long slot = FifoLayout.slot(pos, mask);
            Tokens.setPlain(segment, slot, trigger.fst());
            Tokens.release(segment, slot + FifoLayout.SND, trigger.snd() | FifoLayout.commitBit(pos, shift));
            return pos;
        } catch (IllegalStateException | WrongThreadException e) {
            throw closed("push", e);
        }
    }

    /**
     * Takes the next position once its slot is free (the proxy consumed the position a lap
     * earlier) and returns it; throws, having claimed nothing, when the proxy is gone or the
     * ring stays full past {@code timeout}.
     */
    private long claim(Duration timeout) {
        long deadline = 0;
        boolean waited = false;
        long head = Tokens.opaque(segment, FifoLayout.HEAD);
        while (true) {
            long state = proxyState();
            if (state != 0) {
                throw proxyGone(state, "push");
            }
            long reused = head - capacity;   // the position whose slot head would overwrite
            if (reused >= (long) CACHED_TAIL.getOpaque(this) && reused >= readTail()) {
                if (!waited) {
                    // the clock starts at the first wait: a push with room never reads it
                    deadline = Waiting.deadline(timeout);
                    waited = true;
                }
                head = awaitRoom(head, timeout, deadline);
                continue;
            }
            // head < tail + capacity: the slot is free, and stays free until head moves past it
            long witness = Tokens.compareAndExchange(segment, FifoLayout.HEAD, head, head + 1);
            if (witness == head) {
                return head;
            }
            head = witness;
        }
    }

    /**
     * Waits, claiming nothing, until the ring has room for the position at head, the proxy is
     * gone, or {@code deadline}; returns head as last read (the caller tries to claim it).
     */
    private long awaitRoom(long headSeen, Duration timeout, long deadline) {
        long[] head = {headSeen};
        boolean ended = Waiting.await(() -> {
            head[0] = Tokens.opaque(segment, FifoLayout.HEAD);
            return head[0] - capacity < readTail() || proxyState() != 0;
        }, deadline);
        if (!ended) {
            String why = Thread.currentThread().isInterrupted() ? "interrupted while waiting" : "waited "
                    + timeout.toMillis() + " ms";
            long tail = readTail();
            throw JmscclppException.builder(ErrorCode.TIMEOUT, "the ring of " + capacity + " triggers is full: "
                    + "the next push, at position " + head[0] + ", " + why + " for the proxy to consume position "
                    + (head[0] - capacity) + " (tail is " + tail + "); the push claimed no position and the fifo "
                    + "stays usable").phase("fifo push").build();
        }
        return head[0];
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
            String detail = "position " + pos + " was not consumed: " + why + " (tail is " + readTail() + ")";
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
