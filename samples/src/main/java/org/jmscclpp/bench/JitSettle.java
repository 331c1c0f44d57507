package org.jmscclpp.bench;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Locale;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.samples.Blocking;

/**
 * An untimed warm-up of two ranks that goes on until the JIT has settled on both: steps of
 * {@link #STEP} iterations, at least a given number, then more until {@link #QUIET_STEPS} steps in
 * a row during which neither rank's compilers worked more than {@link #QUIET_MILLIS} ms
 * ({@link CompilationMXBean#getTotalCompilationTime()}), or a time limit passed. Rank 0 leads:
 * before each step it tells rank 1 how many iterations follow (0: the warm-up is over); after it,
 * rank 1 answers with its compile time during the step.
 *
 * <p>Why: the ETHERNET paths run through far more Java code (Netty's pipeline, the receiver's checks,
 * the waiters' progress) than a raw socket's few methods, and the JIT reaches its final code for
 * them only after thousands of round trips. On the 2-core CI machine the compiler threads still held
 * a quarter of the cores after 20000 transfers of 64 KiB, and a ping-pong warmed by 3000 turns took
 * 5 to 14 times raw TCP's round trip where one warmed by 5000 took 1.5 to 2.7: a fixed count measures
 * the compiler on one machine and wastes time on another.
 */
final class JitSettle {

    /** Iterations of one step. */
    static final int STEP = 1000;
    /** A step in which neither rank compiled for longer than this is quiet. */
    static final long QUIET_MILLIS = 5;
    /** Quiet steps in a row that end the warm-up (once its minimum is done). */
    static final int QUIET_STEPS = 2;

    /** What one step does on this rank: {@code n} iterations. */
    @FunctionalInterface
    interface Step {
        void run(int n) throws IOException;
    }

    /** How a warm-up went: iterations, seconds, each rank's compile ms in the last step, whether the JIT settled. */
    record Outcome(long iterations, double seconds, long rank0Millis, long rank1Millis, boolean settled) {
        String describe() {
            return String.format(Locale.ROOT, "%.1f s, %s in the last step (rank 0 %d ms, rank 1 %d ms)", seconds,
                    settled ? "settled" : "still compiling", rank0Millis, rank1Millis);
        }
    }

    private JitSettle() {
    }

    /**
     * Rank 0's side: at least {@code minimum} iterations of {@code step} (none at all when 0), then
     * more until the JIT settled on both ranks or {@code limit} passed since the start.
     */
    static Outcome lead(TcpBootstrap bs, int tag, long minimum, Duration limit, Duration timeout, Step step)
            throws IOException {
        long start = System.nanoTime();
        long done = 0;
        long mine = compileMillis();
        long lastMine = 0;
        long lastTheirs = 0;
        int quiet = 0;
        while (true) {
            boolean more = minimum > 0
                    && (done < minimum || quiet < QUIET_STEPS && System.nanoTime() - start < limit.toNanos());
            int n = more ? (int) Math.min(STEP, done < minimum ? minimum - done : STEP) : 0;
            Blocking.done(bs.send(1, tag, ByteBuffer.allocate(Integer.BYTES).putInt(n).array(), timeout),
                    timeout.plusSeconds(5), 0, "send a warm-up step");
            if (n == 0) {
                return new Outcome(done, (System.nanoTime() - start) / 1e9, lastMine, lastTheirs,
                        minimum > 0 && quiet >= QUIET_STEPS);
            }
            step.run(n);
            done += n;
            long now = compileMillis();
            lastMine = now - mine;
            mine = now;
            lastTheirs = ByteBuffer.wrap(Blocking.value(bs.recv(1, tag, timeout), timeout.plusSeconds(5), 0,
                    "receive rank 1's compile time")).getLong();
            quiet = n == STEP && lastMine <= QUIET_MILLIS && lastTheirs <= QUIET_MILLIS ? quiet + 1 : 0;
        }
    }

    /** Rank 1's side of {@link #lead}: runs each step rank 0 announces and answers with its compile time. */
    static void follow(TcpBootstrap bs, int tag, Duration timeout, Step step) throws IOException {
        long mine = compileMillis();
        while (true) {
            int n = ByteBuffer.wrap(Blocking.value(bs.recv(0, tag, timeout), timeout.plusSeconds(5), 1,
                    "receive a warm-up step")).getInt();
            if (n == 0) {
                return;
            }
            step.run(n);
            long now = compileMillis();
            byte[] delta = ByteBuffer.allocate(Long.BYTES).putLong(now - mine).array();
            mine = now;
            Blocking.done(bs.send(0, tag, delta, timeout), timeout.plusSeconds(5), 1, "send the compile time");
        }
    }

    /** This JVM's compilers' total time so far, in ms; 0 where the JVM does not say. */
    static long compileMillis() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : 0;
    }
}
