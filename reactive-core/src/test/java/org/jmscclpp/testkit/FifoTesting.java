package org.jmscclpp.testkit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.core.proxy.Fifo;
import org.jmscclpp.core.spi.Waiting;

/** Helpers of the fifo tests: a consumer step with a deadline, and producer threads whose failures reach the test. */
public final class FifoTesting {

    private FifoTesting() {
    }

    /**
     * Waits until the trigger at the fifo's tail is there, copies it into {@code out} and pops it;
     * returns its position.
     *
     * @throws AssertionError when nothing arrives within {@code timeout}
     */
    public static long take(Fifo fifo, long[] out, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long pos = fifo.tail();
        if (!Waiting.await(() -> fifo.poll(out), deadline)) {
            throw new AssertionError("no trigger at position " + pos + " within " + timeout.toMillis() + " ms: " + fifo);
        }
        fifo.pop();
        return pos;
    }

    /** A body that may throw anything. */
    @FunctionalInterface
    public interface Body {
        void run() throws Exception;
    }

    /** Platform threads started together and joined with a deadline; the first failure of any is rethrown. */
    public static final class Workers implements AutoCloseable {
        private final List<Thread> threads = new ArrayList<>();
        private final ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();

        /** Starts {@code body} on a new platform thread named {@code name}, and returns the thread. */
        public Thread start(String name, Body body) {
            Thread t = Thread.ofPlatform().name(name).daemon(true).start(() -> {
                try {
                    body.run();
                } catch (Throwable e) {
                    failures.add(e);
                }
            });
            threads.add(t);
            return t;
        }

        /** Rethrows a worker's failure as soon as one is known; checked while the consumer runs. */
        public void check() {
            Throwable e = failures.peek();
            if (e != null) {
                throw new AssertionError("worker failed: " + e, e);
            }
        }

        /** Waits for every thread to end, at most {@code timeout} in all, then rethrows the first failure. */
        public void join(Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            for (Thread t : threads) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || !t.join(Duration.ofNanos(left))) {
                    check();
                    throw new AssertionError(t.getName() + " still runs after " + timeout.toMillis() + " ms");
                }
            }
            check();
        }

        /** Interrupts what still runs, so a failed test leaves no spinning producer behind. */
        @Override
        public void close() throws InterruptedException {
            for (Thread t : threads) {
                t.interrupt();
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(10));
            }
        }
    }
}
