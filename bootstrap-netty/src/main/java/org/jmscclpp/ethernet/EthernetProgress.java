package org.jmscclpp.ethernet;

import io.netty.channel.EventLoop;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ManualIoEventLoop;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import java.lang.reflect.Field;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.jmscclpp.bootstrap.EventLoops;
import org.jmscclpp.core.spi.Tunables;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;

/**
 * The event loop that the receiving ends of this process's ETHERNET connections run on, driven by
 * whichever thread needs it: a background thread ({@code jmscclpp-ethernet-rx}) while nobody waits,
 * and a thread waiting for memory that ETHERNET writes ({@link Waiting#await}) while it waits, as
 * an MPI progress engine lets the waiting caller poll the network itself.
 *
 * <p>Why: with the receiving ends on their own thread, every message that a parked waiter waits
 * for costs two wake-ups in a row, the kernel waking the event loop and the event loop waking the
 * waiter, where a blocking socket read costs one. Driven by the waiter, the kernel wakes the very
 * thread that wants the bytes (a 1-int ping-pong of {@code bench ethernet} took about a quarter less
 * on a 32-core host, 40% less in a run on a 2-core one). The hand-over itself (the background thread leaving
 * {@code run} and the lock) happens while the waiter's own message is still on its way; a waiter
 * that leaves gives the loop back lazily, so one that comes straight back finds it free.
 *
 * <p>Netty's {@link ManualIoEventLoop} takes one owner for good ({@code setOwningThread} refuses a
 * second); here the owner changes hands under {@link #lock} through the loop's private field, and
 * is nobody between two drivers. Where a Netty version lacks that field, only the background
 * thread drives.
 *
 * <p>One Netty {@link ManualIoEventLoop} per process, shared by every session that uses the default
 * event loops (a service that supplies its own group keeps its receiving ends there); only one
 * thread drives it at a time ({@link #lock}). Virtual threads never drive it: {@code epoll_wait}
 * would pin their carrier. Leased like {@link EventLoops}: the last {@link #release()} stops it.
 */
final class EthernetProgress implements Waiting.Progress {

    /** How long the background thread blocks in one {@code run} when nothing happens. */
    private static final long IDLE_RUN_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /**
     * How often the background thread looks whether the waiters have left the loop; it takes the
     * loop only once no waiter has been in it for this long. So a frame that no waiter reads waits
     * at most about twice this after the last waiter left.
     */
    private static final long HANDBACK_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    /**
     * How often the background thread looks instead while the waiters keep coming straight back
     * (the recent gaps between one leaving the loop and the next entering it all below
     * {@link #SHORT_GAP_NANOS}): the next one will read what comes, and on a 2-core machine a look
     * every 200 µs is a context switch on a core the two ranks of a ping-pong share.
     */
    private static final long PATIENT_HANDBACK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long SHORT_GAP_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
    /**
     * How long whoever runs the loop (a waiter or the background thread) polls it without blocking
     * after its last read ({@code -Djmscclpp.ethernet.pollMicros}, default 50): long enough for a
     * ping-pong's answer, or a flushing writer's next frame, to arrive while it polls, so that no
     * wake-up lies on the round trip. On the 2-core CI machine, where an idle core halts and a
     * wake-up is dear, the background thread's poll raised {@code bench ethernet}'s write + flush
     * bandwidth from 0.80–0.97 to 0.95–1.10 times raw TCP's at 64 KiB (100 and 200 µs did no better).
     */
    static final long POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(
            Tunables.longValue("jmscclpp.ethernet.pollMicros", 50, 0, 1_000_000));
    /** How long a waiter waits for the loop's lock before it parks instead (another waiter drives). */
    private static final long LOCK_WAIT_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    /** Whether waiters drive the loop; {@code -Djmscclpp.ethernet.callerDrives=false} leaves it to the background. */
    static final boolean CALLER_DRIVES = Tunables.booleanValue("jmscclpp.ethernet.callerDrives", true);

    /** ManualIoEventLoop's owner, or null (then waiters never drive). */
    private static final @Nullable Field OWNER = ownerField();

    private static final Object LEASES = new Object();
    private static @Nullable EthernetProgress shared;
    private static int users;

    private final ManualIoEventLoop loop;
    private final ReentrantLock lock = new ReentrantLock();
    /** Waiters that want the loop: the background thread leaves it to them. */
    private final AtomicInteger wanted = new AtomicInteger();
    private final Thread background;
    private volatile boolean stopping;
    /** How many times the background thread took the loop (written by that thread only; for tests). */
    private volatile long backgroundTakes;
    /** When the last waiter left the loop ({@link System#nanoTime()}). */
    private volatile long lastLeft = System.nanoTime();
    /**
     * The recent gaps between a waiter leaving the loop and the next one entering it: the last gap
     * when it was longer, else decaying towards the new one by an eighth; starts long.
     */
    private volatile long recentGap = Long.MAX_VALUE / 2;
    /** The thread running the loop now, or null. */
    private volatile @Nullable Thread driver;

    private EthernetProgress() {
        IoHandlerFactory io = EventLoops.epoll() ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        background = Thread.ofPlatform().daemon().name("jmscclpp-ethernet-rx").unstarted(this::runInBackground);
        loop = new ManualIoEventLoop(null, OWNER == null ? background : null, io);
    }

    /** The shared progress, started if this is its first user; each call needs one {@link #release()}. */
    static EthernetProgress acquire() {
        synchronized (LEASES) {
            if (shared == null) {
                shared = new EthernetProgress();
                shared.background.start();
                if (CALLER_DRIVES && OWNER != null) {
                    Waiting.progress(shared);
                }
            }
            users++;
            return shared;
        }
    }

    /** Gives back one {@link #acquire()}; the last user's release stops the loop (its channels are closed by then). */
    static void release() {
        EthernetProgress stop = null;
        synchronized (LEASES) {
            if (users == 0) {
                return;
            }
            if (--users == 0) {
                stop = shared;
                shared = null;
                Waiting.progress(null);
            }
        }
        if (stop != null) {
            stop.stop();
        }
    }

    private static @Nullable Field ownerField() {
        try {
            Field f = ManualIoEventLoop.class.getDeclaredField("owningThread");
            if (f.getType() != AtomicReference.class) {
                return null;
            }
            f.setAccessible(true);
            return f;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** A waiter entered the loop {@code gap} ns after the last one left it. Holding the lock. */
    private void noteGap(long gap) {
        long g = recentGap;
        recentGap = gap >= g ? gap : g - (g - gap) / 8;
    }

    /**
     * One turn of whoever runs the loop (holding the lock), given when it last read something:
     * within {@link #POLL_NANOS} of that read it polls without blocking (right after a read the next
     * frame is often already on its way: a write's signal follows it in a second frame, a ping-pong's
     * answer comes within microseconds), spinning once when nothing came; later it blocks for up to
     * {@code blockNanos}. Returns when it last read: now if this turn read anything.
     */
    private long turn(long lastWork, long now, long blockNanos) {
        if (now - lastWork < POLL_NANOS) {
            if (loop.run(-1) > 0) {
                return System.nanoTime();
            }
            Thread.onSpinWait();
            return lastWork;
        }
        return loop.run(blockNanos) > 0 ? System.nanoTime() : lastWork;
    }

    /** How many times the background thread took the loop so far (for tests). */
    long backgroundTakes() {
        return backgroundTakes;
    }

    /** The loop the receiving ends register on. */
    EventLoop loop() {
        return loop;
    }

    /**
     * Makes {@code thread} the loop's owner (null: nobody's, between two drivers). Netty's
     * {@link ManualIoEventLoop} takes one owner for good ({@code setOwningThread} refuses a second);
     * this loop changes hands under {@link #lock}, so the owner is set through the loop's private
     * field. Where Netty lacks it ({@link #OWNER} null) the background thread owns the loop from the
     * start, waiters never drive, and this only records the driver.
     */
    @SuppressWarnings("unchecked")
    private void own(@Nullable Thread thread) {
        driver = thread;
        if (OWNER == null) {
            return;
        }
        try {
            ((AtomicReference<Thread>) OWNER.get(loop)).set(thread);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    private void stop() {
        stopping = true;
        loop.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        loop.wakeup();
        LockSupport.unpark(background);
    }

    /**
     * The background thread: drives the loop whenever no waiter does. While waiters drive it, it
     * looks again every {@link #HANDBACK_NANOS}, and takes the loop only once no waiter has been in
     * it for that long. So a waiter that leaves hands the loop back without a wake-up of its own,
     * and a waiter that comes straight back (the next turn of a ping-pong) finds it free and pays
     * nothing: taking the loop whenever it found it free, the thread took it in the short gaps
     * between two waits of a ping-pong (750 times in 10000 waits 10 µs apart on the 2-core CI
     * machine), each take costing the next waiter a hand-off through the loop's wake-up and the
     * lock. While the waiters keep coming straight back it looks only every
     * {@link #PATIENT_HANDBACK_NANOS}: on the 2-core machine, looks every 200 µs made the
     * {@code writeAndSignal} ping-pong 1.5–2.7 times raw TCP's round trip, against 1.1–1.7 (four runs: 1.25, 1.14,
     * 1.54, 1.65).
     * Looks that grew to 1 ms whenever waiters were in the loop left frames unread for up to 2 ms
     * after a waiter left for longer: the allreduce across two hosts of 4 × H200, whose waits
     * alternate with copies of a millisecond, took 3.6–3.9 ms at 4 MiB against 2.4–2.6 with 200 µs.
     */
    private void runInBackground() {
        Thread self = Thread.currentThread();
        while (!loop.isTerminated()) {
            long look = recentGap < SHORT_GAP_NANOS ? PATIENT_HANDBACK_NANOS : HANDBACK_NANOS;
            if (!stopping && (wanted.get() > 0 || System.nanoTime() - lastLeft < look) || !lock.tryLock()) {
                LockSupport.parkNanos(this, look);
                continue;
            }
            backgroundTakes++;
            try {
                own(self);
                long lastWork = System.nanoTime() - POLL_NANOS;   // nothing read yet: block at once
                while ((wanted.get() == 0 || stopping) && !loop.isTerminated()) {
                    lastWork = turn(lastWork, System.nanoTime(), IDLE_RUN_NANOS);
                }
            } finally {
                own(null);
                lock.unlock();
            }
        }
    }

    /**
     * Runs the loop on this thread until {@code done} holds or the deadline passes: 1 done, 0 not
     * done (deadline, interrupt or a stopping loop), -1 not driven (a virtual thread, or another
     * thread drives now: this one parks and is woken as before). Between two looks at {@code done}
     * the loop blocks at most {@link Waiting#MAX_PARK_NANOS}, as long as a parked waiter sleeps: the
     * condition may come from memory that no ETHERNET frame writes.
     */
    @Override
    public int drive(BooleanSupplier done, long deadlineNanos) {
        Thread self = Thread.currentThread();
        if (self.isVirtual() || stopping) {
            return -1;
        }
        wanted.incrementAndGet();
        boolean locked = lock.tryLock();
        try {
            if (!locked) {
                if (driver != background) {
                    return -1;   // another waiter drives: park, and its stores wake this one
                }
                loop.wakeup();   // the background thread leaves run() and the lock
                try {
                    locked = lock.tryLock(LOCK_WAIT_NANOS, TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    self.interrupt();
                    return 0;
                }
                if (!locked) {
                    return -1;
                }
            }
            own(self);
            long lastWork = System.nanoTime();
            noteGap(lastWork - lastLeft);
            while (true) {
                if (done.getAsBoolean()) {
                    return 1;
                }
                long now = System.nanoTime();
                long left = deadlineNanos - now;
                if (left <= 0 || self.isInterrupted() || stopping || loop.isShuttingDown()) {
                    return 0;
                }
                lastWork = turn(lastWork, now, Math.min(left, Waiting.MAX_PARK_NANOS));
            }
        } finally {
            if (locked) {
                // nobody owns the loop between two drivers: code of this thread that touches a channel
                // afterwards must not run inline as if it were the event loop
                own(null);
                lastLeft = System.nanoTime();
                lock.unlock();
            }
            wanted.decrementAndGet();
        }
    }
}
