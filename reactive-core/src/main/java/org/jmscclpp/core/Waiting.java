package org.jmscclpp.core;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Waiting for a condition on memory that another process or thread writes (a semaphore token), the
 * way the design asks: spin with {@link Thread#onSpinWait()} for a bounded budget, then park with a
 * growing delay, so that a waiting virtual thread never owns its carrier for long (two spinning
 * virtual threads on two carriers delayed a third by a second when they never parked).
 */
final class Waiting {

    /** Spins before the first park: about 10–50 µs of polling on current x86 cores. */
    static final int SPINS = 1 << 12;
    /** Spins between checks of the deadline and between parks once parking started. */
    private static final long FIRST_PARK_NANOS = 1_000;
    private static final long MAX_PARK_NANOS = 100_000;

    /** Virtual threads named {@code jmscclpp-wait}, one per task. */
    static final Scheduler VIRTUAL = Schedulers.fromExecutor(
            task -> Thread.ofVirtual().name("jmscclpp-wait").start(task));

    /** Longest wait: longer timeouts are cut to it, so deadline arithmetic never overflows. */
    static final Duration MAX_WAIT = Duration.ofDays(365);

    private Waiting() {
    }

    /** {@code timeout}, cut to {@link #MAX_WAIT}; negative timeouts count as zero. */
    static Duration bounded(Duration timeout) {
        return timeout.isNegative() ? Duration.ZERO : timeout.compareTo(MAX_WAIT) > 0 ? MAX_WAIT : timeout;
    }

    /** The {@link System#nanoTime()} at which a wait of {@code timeout} starting now ends (see {@link #bounded}). */
    static long deadline(Duration timeout) {
        return System.nanoTime() + bounded(timeout).toNanos();
    }

    /**
     * Blocks the calling thread until {@code condition} holds or {@code deadlineNanos}
     * ({@link System#nanoTime()}) passes; returns whether the condition held.
     */
    static boolean await(BooleanSupplier condition, long deadlineNanos) {
        for (int i = 0; i < SPINS; i++) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.onSpinWait();
        }
        long park = FIRST_PARK_NANOS;
        while (true) {
            if (condition.getAsBoolean()) {
                return true;
            }
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            if (Thread.currentThread().isInterrupted()) {
                return condition.getAsBoolean();
            }
            LockSupport.parkNanos(Math.min(park, left));
            park = Math.min(park * 2, MAX_PARK_NANOS);
        }
    }

    /**
     * A lazy Mono that completes once {@code condition} holds, checking first on the subscribing
     * thread and then on a virtual thread; after {@code timeout} it errors with
     * {@code onTimeout.get()}. Cancelling stops the waiting thread.
     */
    static Mono<Void> until(BooleanSupplier condition, Duration timeout, Supplier<JmscclppException> onTimeout) {
        return Mono.defer(() -> {
            if (condition.getAsBoolean()) {
                return Mono.empty();
            }
            long deadline = deadline(timeout);
            return Mono.<Void>create(sink -> {
                Thread waiter = Thread.ofVirtual().name("jmscclpp-wait").unstarted(() -> {
                    if (await(condition, deadline)) {
                        sink.success();
                    } else if (!Thread.currentThread().isInterrupted()) {
                        sink.error(onTimeout.get());
                    }
                });
                sink.onCancel(waiter::interrupt);
                waiter.start();
            });
        });
    }
}
