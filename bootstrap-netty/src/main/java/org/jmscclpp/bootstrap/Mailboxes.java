package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;

/**
 * Matches arriving messages with receives: one FIFO per (peer, kind, channel), so the i-th message
 * sent on a key is the i-th one received on it, and keys never wait for each other. Messages that
 * arrive before their receive are kept; receives that come first wait with a deadline.
 *
 * <p>Frames of one message are appended until the frame flagged LAST. All state is guarded by this
 * object's monitor; sinks are completed outside it.
 */
final class Mailboxes {

    /** Identity of one FIFO. */
    record Key(int peer, byte kind, long channel) {
    }

    /** Who waits, for error messages. */
    record Context(int rank, int peer, int tag, String phase) {
    }

    private static final class Waiter {
        final MonoSink<byte[]> sink;
        final Context context;
        @Nullable Disposable timer;

        Waiter(MonoSink<byte[]> sink, Context context) {
            this.sink = sink;
            this.context = context;
        }
    }

    private static final class Box {
        final ArrayDeque<byte[]> ready = new ArrayDeque<>();
        final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
        byte @Nullable [] partial;
        int partialLength;
    }

    private final Map<Key, Box> boxes = new HashMap<>();
    private final Scheduler timers;
    private @Nullable Function<Context, JmscclppException> refusal;
    private final java.util.Set<Integer> departed = new java.util.HashSet<>();

    Mailboxes(Scheduler timers) {
        this.timers = timers;
    }

    /**
     * The next message of {@code key}, taken at subscription, or waited for until
     * {@code deadlineNanos} ({@link System#nanoTime()} clock); cancelling gives up the wait.
     */
    Mono<byte[]> take(Key key, long deadlineNanos, Context context) {
        return Mono.create(sink -> take(key, deadlineNanos, context, sink));
    }

    private void take(Key key, long deadlineNanos, Context context, MonoSink<byte[]> sink) {
        byte[] message = null;
        JmscclppException error = null;
        Waiter waiter = null;
        synchronized (this) {
            Box box = boxes.get(key);
            if (box != null && !box.ready.isEmpty()) {
                message = box.ready.poll();
                dropIfEmpty(key, box);
            } else if (refusal != null) {
                error = refusal.apply(context);
            } else if (departed.contains(key.peer())) {
                error = departedError(context);
            } else {
                if (box == null) {
                    box = new Box();
                    boxes.put(key, box);
                }
                waiter = new Waiter(sink, context);
                box.waiters.add(waiter);
            }
        }
        if (message != null) {
            sink.success(message);
            return;
        }
        if (error != null) {
            sink.error(error);
            return;
        }
        Waiter w = waiter;
        long delay = deadlineNanos - System.nanoTime();
        w.timer = timers.schedule(() -> expire(key, w, delay), Math.max(0, delay), TimeUnit.NANOSECONDS);
        sink.onCancel(() -> cancel(key, w));
    }

    /** Appends one frame's payload to {@code key}'s message in progress; the caller releases the buffer. */
    void deliver(Key key, ByteBuf payload, boolean last) {
        Waiter waiter = null;
        byte[] message = null;
        synchronized (this) {
            if (refusal != null) {
                return;
            }
            Box box = boxes.computeIfAbsent(key, k -> new Box());
            int n = payload.readableBytes();
            if (box.partial == null && last) {
                message = new byte[n];
                payload.readBytes(message);
            } else {
                if (box.partial == null) {
                    box.partial = new byte[Math.max(n * 2, 64)];
                    box.partialLength = 0;
                } else if (box.partial.length - box.partialLength < n) {
                    long want = Math.max((long) box.partial.length * 2, (long) box.partialLength + n);
                    box.partial = java.util.Arrays.copyOf(box.partial, (int) Math.min(want, Integer.MAX_VALUE - 8));
                }
                payload.readBytes(box.partial, box.partialLength, n);
                box.partialLength += n;
                if (last) {
                    message = java.util.Arrays.copyOf(box.partial, box.partialLength);
                    box.partial = null;
                }
            }
            if (message == null) {
                return;
            }
            waiter = handOver(key, box, message);
        }
        succeed(waiter, message);
    }

    /** Puts a whole message into the box (a rank sending to itself). */
    void deliverLocal(Key key, byte[] message) {
        Waiter waiter;
        synchronized (this) {
            if (refusal != null) {
                return;
            }
            waiter = handOver(key, boxes.computeIfAbsent(key, k -> new Box()), message);
        }
        succeed(waiter, message);
    }

    /** With the monitor held: gives a complete message to the first waiter, or keeps it. */
    private @Nullable Waiter handOver(Key key, Box box, byte[] message) {
        Waiter waiter = box.waiters.poll();
        if (waiter == null) {
            box.ready.add(message);
            return null;
        }
        dropIfEmpty(key, box);
        return waiter;
    }

    private static void succeed(@Nullable Waiter waiter, byte[] message) {
        if (waiter == null) {
            return;
        }
        if (waiter.timer != null) {
            waiter.timer.dispose();
        }
        waiter.sink.success(message);
    }

    /** The peer closed its bootstrap: receives from it that no kept message can satisfy fail now and later. */
    void peerDeparted(int peer) {
        List<Waiter> failed = new ArrayList<>();
        synchronized (this) {
            departed.add(peer);
            for (Iterator<Map.Entry<Key, Box>> it = boxes.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<Key, Box> e = it.next();
                if (e.getKey().peer() == peer && !e.getValue().waiters.isEmpty()) {
                    failed.addAll(e.getValue().waiters);
                    e.getValue().waiters.clear();
                    dropIfEmptyNoRemove(e.getValue(), it);
                }
            }
        }
        for (Waiter w : failed) {
            finish(w, departedError(w.context));
        }
    }

    /** Whether {@code peer} closed its bootstrap normally. */
    synchronized boolean hasDeparted(int peer) {
        return departed.contains(peer);
    }

    /** Fails every waiting receive and every later one with the error {@code refusal} builds. */
    void failAll(Function<Context, JmscclppException> refusal) {
        List<Waiter> failed = new ArrayList<>();
        synchronized (this) {
            if (this.refusal != null) {
                return;
            }
            this.refusal = refusal;
            for (Box box : boxes.values()) {
                failed.addAll(box.waiters);
            }
            boxes.clear();
        }
        for (Waiter w : failed) {
            finish(w, refusal.apply(w.context));
        }
    }

    /** Forgets the kept messages of a finished collective. */
    synchronized void forgetChannel(byte kind, long channel) {
        boxes.entrySet().removeIf(e -> e.getKey().kind() == kind && e.getKey().channel() == channel
                && e.getValue().waiters.isEmpty());
    }

    /** Number of boxes (tests check collectives clean up after themselves). */
    synchronized int boxCount() {
        return boxes.size();
    }

    private void expire(Key key, Waiter w, long delayNanos) {
        if (!remove(key, w)) {
            return;
        }
        Context c = w.context;
        w.sink.error(JmscclppException.builder(ErrorCode.TIMEOUT,
                        "no message from rank " + c.peer() + " within "
                                + TimeUnit.NANOSECONDS.toMillis(Math.max(0, delayNanos)) + " ms")
                .rank(c.rank()).peer(c.peer()).tag(c.tag()).phase(c.phase()).build());
    }

    private void cancel(Key key, Waiter w) {
        if (remove(key, w) && w.timer != null) {
            w.timer.dispose();
        }
    }

    private synchronized boolean remove(Key key, Waiter w) {
        Box box = boxes.get(key);
        if (box == null || !box.waiters.remove(w)) {
            return false;
        }
        dropIfEmpty(key, box);
        return true;
    }

    private void dropIfEmpty(Key key, Box box) {
        if (box.ready.isEmpty() && box.waiters.isEmpty() && box.partial == null) {
            boxes.remove(key);
        }
    }

    private static void dropIfEmptyNoRemove(Box box, Iterator<?> it) {
        if (box.ready.isEmpty() && box.partial == null) {
            it.remove();
        }
    }

    private static void finish(Waiter w, JmscclppException e) {
        if (w.timer != null) {
            w.timer.dispose();
        }
        w.sink.error(e);
    }

    private static JmscclppException departedError(Context c) {
        return JmscclppException.builder(ErrorCode.REMOTE_ERROR,
                        "rank " + c.peer() + " closed its bootstrap; nothing more will come from it")
                .rank(c.rank()).peer(c.peer()).tag(c.tag()).phase(c.phase()).build();
    }
}
