package org.jmscclpp.testkit;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Schedulers;

/**
 * One waiting operation of an {@link InMemoryBootstrap} (a recv or a collective): the subscriber's
 * sink plus everything that may end it: a delivered message, the deadline, a cancel, an abort or a
 * close.
 *
 * <p>Those race, so an operation ends in two steps: {@link #claim()} (a compare-and-set that exactly
 * one contender wins; it also disarms the timer and leaves the rank's pending set) and then the
 * signal. Deliveries claim under their mailbox or round lock, so a message is taken from its queue
 * only by the operation that really receives it; signals are emitted outside every lock, on a
 * {@link Schedulers#parallel()} worker, so that subscriber code never runs under one of our locks and
 * a chain of ranks completing each other does not grow the stack.
 */
final class InMemoryPending {

    final int rank;
    final int peer;
    final int tag;
    final String phase;

    private final MonoSink<byte[]> sink;
    private final Set<InMemoryPending> registry;
    private final Consumer<InMemoryPending> detach;
    private final AtomicBoolean done = new AtomicBoolean();
    private final Disposable.Swap timer = Disposables.swap();

    /**
     * @param registry the owning rank's set of pending operations (what abort and close walk)
     * @param detach   removes this operation from the queue or round it waits in; must tolerate an
     *                 operation that is not (or no longer) there
     */
    InMemoryPending(MonoSink<byte[]> sink, Set<InMemoryPending> registry, int rank, int peer, int tag,
            String phase, Consumer<InMemoryPending> detach) {
        this.sink = sink;
        this.registry = registry;
        this.rank = rank;
        this.peer = peer;
        this.tag = tag;
        this.phase = phase;
        this.detach = detach;
    }

    /** Joins the owner's pending set and listens for cancellation; call before waiting anywhere. */
    void register() {
        registry.add(this);
        sink.onCancel(this::cancel);
    }

    boolean isDone() {
        return done.get();
    }

    /** Wins the right to end this operation; false when something else already ended it. */
    boolean claim() {
        if (!done.compareAndSet(false, true)) {
            return false;
        }
        timer.dispose();
        registry.remove(this);
        return true;
    }

    /** Emits the result of an operation this caller has {@link #claim() claimed}. */
    void succeedClaimed(byte[] value) {
        emit(() -> sink.success(value));
    }

    /** Emits the error of an operation this caller has {@link #claim() claimed}. */
    void failClaimed(Throwable error) {
        emit(() -> sink.error(error));
    }

    /** Ends the operation with {@code error} unless it has ended already. */
    void fail(Throwable error) {
        if (claim()) {
            detach.accept(this);
            failClaimed(error);
        }
    }

    /**
     * Fails the operation with the error {@code onTimeout} builds once {@code timeout} has passed on
     * {@link Schedulers#parallel()} (a virtual-time scheduler under {@code StepVerifier.withVirtualTime}).
     */
    void armTimer(Duration timeout, Supplier<? extends Throwable> onTimeout) {
        timer.update(Schedulers.parallel().schedule(() -> {
            if (!isDone()) {
                fail(onTimeout.get());
            }
        }, saturatedNanos(timeout), TimeUnit.NANOSECONDS));
    }

    /** An error about this operation: the rank, peer, tag and phase it was waiting in. */
    JmscclppException error(ErrorCode code, String detail) {
        return JmscclppException.builder(code, detail).rank(rank).peer(peer).tag(tag).phase(phase).build();
    }

    private void cancel() {
        if (claim()) {
            detach.accept(this);
        }
    }

    private static void emit(Runnable signal) {
        try {
            Schedulers.parallel().schedule(signal);
        } catch (RejectedExecutionException e) {
            // the shared scheduler is being shut down (end of a test run): signal on this thread instead
            signal.run();
        }
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }
}
