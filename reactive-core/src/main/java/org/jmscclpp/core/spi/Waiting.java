package org.jmscclpp.core.spi;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Waiting for a condition on memory that another process or thread writes (a semaphore token), the
 * way the design asks: spin with {@link Thread#onSpinWait()} for a bounded budget, then park with a
 * growing delay, so that a waiting virtual thread never owns its carrier for long (two spinning
 * virtual threads on two carriers delayed a third by a second when they never parked).
 * Public for the backends in other modules (the CUDA backend polls events this way); not an
 * application API.
 */
public final class Waiting {

    /**
     * How long a waiter polls before it first parks, in µs (system property
     * {@code jmscclpp.waitSpinMicros}, default 20): about what a park and wake-up cost, so a short
     * wait never pays one and a long one never holds a core for long. A spin budget in iterations
     * would not do: 4096 {@code onSpinWait()} calls took 110 µs on this project's machines and a few
     * µs elsewhere.
     */
    public static final long SPIN_NANOS = Tunables.longValue("jmscclpp.waitSpinMicros", 20, 0, 1_000_000) * 1_000;
    private static final long FIRST_PARK_NANOS = 1_000;
    /** The longest park step of a waiter: how stale its look at the condition may get. */
    public static final long MAX_PARK_NANOS = 100_000;
    /** Spins between two reads of the clock. */
    private static final int CLOCK_EVERY = 64;

    /** Virtual threads named {@code jmscclpp-wait}, one per task. */
    public static final Scheduler VIRTUAL = Schedulers.fromExecutor(
            task -> Thread.ofVirtual().name("jmscclpp-wait").start(task));

    /**
     * Threads parked in {@link #await} right now. A transport that stores memory from a thread of
     * this process (the ETHERNET receiver on its event loop) calls {@link #wake()}, so a waiter
     * looks again at once instead of when its park step ends: a park is never shorter than the
     * kernel's timer slack (50 µs on Linux), and on a small busy host the steps decided most of an
     * ETHERNET round trip.
     */
    private static final Set<Thread> PARKED = ConcurrentHashMap.newKeySet();

    /**
     * What a waiter may drive itself instead of parking: the receiving ends of a transport that
     * stores this process's memory from a thread of its own (ETHERNET). One at a time, installed
     * by the transport ({@link #progress(Progress)}).
     */
    private static volatile @Nullable Progress progress;

    /**
     * A transport's receive loop that a waiting thread can run itself, so that the kernel wakes the
     * thread that waits rather than a receiver thread that then wakes it. Public for the transports
     * in other modules; not an application API.
     */
    public interface Progress {
        /**
         * Runs the transport's receiving on the calling thread until {@code done} holds or
         * {@code deadlineNanos} passes: 1 when done, 0 when not (deadline, interrupt, shutdown),
         * -1 when this thread cannot drive now (the caller parks as usual and is {@link #wake() woken}).
         */
        int drive(BooleanSupplier done, long deadlineNanos);
    }

    /** Installs (or, with null, removes) the progress that waiters drive after their spin. */
    public static void progress(@Nullable Progress p) {
        progress = p;
    }

    /** Longest wait: longer timeouts are cut to it, so deadline arithmetic never overflows. */
    public static final Duration MAX_WAIT = Duration.ofDays(365);

    private Waiting() {
    }

    /** {@code timeout}, cut to {@link #MAX_WAIT}; negative timeouts count as zero. */
    public static Duration bounded(Duration timeout) {
        return timeout.isNegative() ? Duration.ZERO : timeout.compareTo(MAX_WAIT) > 0 ? MAX_WAIT : timeout;
    }

    /** The {@link System#nanoTime()} at which a wait of {@code timeout} starting now ends (see {@link #bounded}). */
    public static long deadline(Duration timeout) {
        return System.nanoTime() + bounded(timeout).toNanos();
    }

    /**
     * Blocks the calling thread until {@code condition} holds or {@code deadlineNanos}
     * ({@link System#nanoTime()}) passes; returns whether the condition held.
     */
    public static boolean await(BooleanSupplier condition, long deadlineNanos) {
        return await(condition, deadlineNanos, true);
    }

    /**
     * {@link #await(BooleanSupplier, long)}; with {@code drive} false this thread never runs the
     * transports' receiving end (it parks after its spin, as a virtual thread does), so that the
     * receiving end stays with its own thread: for a thread that mostly writes between short waits
     * (a stream of chunks), where taking the receiving end for each wait would leave it unattended
     * while the thread writes.
     */
    public static boolean await(BooleanSupplier condition, long deadlineNanos, boolean drive) {
        // A thread that may drive the receiving end does so at once: its drive spins too, reading
        // the socket as it spins. Spinning here first would leave the bytes unread for the spin's
        // length, the receiving end's own thread having left it to the waiters (measured: the spin
        // alone set the floor of an ETHERNET ping-pong turn).
        boolean driveAtOnce = drive && progress != null && !Thread.currentThread().isVirtual();
        Backoff backoff = new Backoff(MAX_PARK_NANOS, driveAtOnce ? 0 : SPIN_NANOS);
        Thread self = null;
        try {
            while (true) {
                if (condition.getAsBoolean()) {
                    return true;
                }
                if (backoff.spinning()) {
                    continue;
                }
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                if (Thread.currentThread().isInterrupted()) {
                    return condition.getAsBoolean();
                }
                if (self == null) {
                    // registered once, when the spinning is over; looked at again after registering,
                    // since a wake() between the look above and the add would otherwise be missed
                    self = Thread.currentThread();
                    PARKED.add(self);
                    continue;
                }
                Progress p = drive ? progress : null;
                if (p != null) {
                    int driven = p.drive(condition, deadlineNanos);
                    if (driven > 0) {
                        return true;
                    }
                    if (driven == 0) {
                        continue;   // the deadline or the interrupt: looked at above
                    }
                }
                backoff.park(left);
            }
        } finally {
            if (self != null) {
                PARKED.remove(self);
            }
        }
    }

    /**
     * Unparks every thread waiting in {@link #await} (and so in the waits built on it: semaphores,
     * port channels, packets), which then look at their conditions again. For transports that
     * write this process's memory from one of its own threads, after each batch of stores. Any
     * thread; costs one read when nobody waits. Public for the transports in other modules; not
     * an application API.
     */
    public static void wake() {
        if (!PARKED.isEmpty()) {
            for (Thread t : PARKED) {
                LockSupport.unpark(t);
            }
        }
    }

    /**
     * The pacing of one thread that polls for work: {@link #spinning()} spins (with
     * {@link Thread#onSpinWait()}) until {@link #SPIN_NANOS} have passed since the thread went
     * idle; after that {@link #park} parks, doubling from 1 µs up to a maximum. {@link #reset()}
     * when work arrives. Confined to its thread.
     */
    public static final class Backoff {
        /**
         * A virtual thread that spins longer than this yields its carrier this often, so that another
         * virtual thread queued on that carrier waits at most about as long. Not shorter: a yield
         * unmounts and remounts the thread (and may move it to another carrier), and a proxy loop that
         * yielded every 20 µs moved 371-375 GB/s each way in PortChannel's bidirectional bandwidth on
         * 2 x H200, against 373-376 every 200 µs, 375-377 every 1 ms and 374-377 for the platform
         * thread, which never yields (docs/primitives.md).
         */
        private static final long YIELD_EVERY_NANOS = 200_000;

        private final long maxParkNanos;
        private long spinNanos;
        private long idleSince = -1;
        private long yieldedAt;
        private int spins;
        private long park = FIRST_PARK_NANOS;

        public Backoff(long maxParkNanos) {
            this(maxParkNanos, SPIN_NANOS);
        }

        /** Spins for {@code spinNanos} after going idle (instead of {@link #SPIN_NANOS}) before it parks. */
        public Backoff(long maxParkNanos, long spinNanos) {
            this.maxParkNanos = maxParkNanos;
            this.spinNanos = spinNanos;
        }

        /** Work arrived: the next idle period starts with spinning again. */
        public void reset() {
            idleSince = -1;
            yieldedAt = 0;
            spins = 0;
            park = FIRST_PARK_NANOS;
        }

        /**
         * Work arrived: the next idle period spins for {@code spinNanos} (and so do the later ones,
         * until changed) before it parks. A virtual thread spinning longer than
         * {@value #YIELD_EVERY_NANOS} ns yields its carrier every as long.
         */
        public void reset(long spinNanos) {
            reset();
            this.spinNanos = spinNanos;
        }

        /** Spins once and returns true while the spin budget lasts; false once it is spent (then park). */
        public boolean spinning() {
            if (idleSince < 0) {
                idleSince = System.nanoTime();
            } else if (spins >= 0 && ++spins % CLOCK_EVERY == 0) {
                long idle = System.nanoTime() - idleSince;
                if (idle >= spinNanos) {
                    spins = -1;
                } else if (idle - yieldedAt >= YIELD_EVERY_NANOS && Thread.currentThread().isVirtual()) {
                    yieldedAt = idle;
                    Thread.yield();
                }
            }
            if (spins < 0) {
                return false;
            }
            Thread.onSpinWait();
            return true;
        }

        /** Parks for the current step (at most {@code limitNanos}) and doubles the next one. */
        public void park(long limitNanos) {
            LockSupport.parkNanos(Math.min(park, limitNanos));
            park = Math.min(park * 2, maxParkNanos);
        }

        /**
         * Parks for the current step, which doubles up to {@code capNanos} instead of the maximum
         * given at construction (a deeper sleep for a thread idle long enough).
         */
        public void parkUpTo(long capNanos) {
            LockSupport.parkNanos(Math.min(park, capNanos));
            park = Math.min(park * 2, capNanos);
        }

        /** How long the thread has been idle: since its first {@link #spinning()} after work; 0 when busy. */
        public long idleNanos() {
            return idleSince < 0 ? 0 : System.nanoTime() - idleSince;
        }
    }

    /**
     * A lazy Mono that completes once {@code condition} holds, checking first on the subscribing
     * thread and then on a virtual thread; after {@code timeout} it errors with
     * {@code onTimeout.get()}, and with the exception the condition throws if it throws.
     * Cancelling stops the waiting thread.
     */
    public static Mono<Void> until(BooleanSupplier condition, Duration timeout, Supplier<JmscclppException> onTimeout) {
        return Mono.defer(() -> {
            if (condition.getAsBoolean()) {
                return Mono.empty();
            }
            long deadline = deadline(timeout);
            return Mono.<Void>create(sink -> {
                Thread waiter = Thread.ofVirtual().name("jmscclpp-wait").unstarted(() -> {
                    try {
                        if (await(condition, deadline)) {
                            sink.success();
                        } else if (!Thread.currentThread().isInterrupted()) {
                            sink.error(onTimeout.get());
                        }
                    } catch (RuntimeException e) {
                        // the condition itself failed (a device error found while polling): that is the outcome
                        sink.error(e);
                    }
                });
                sink.onCancel(waiter::interrupt);
                waiter.start();
            });
        });
    }
}
