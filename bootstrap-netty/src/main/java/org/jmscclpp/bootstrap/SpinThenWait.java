package org.jmscclpp.bootstrap;

import io.netty.channel.SelectStrategy;
import io.netty.channel.SelectStrategyFactory;
import io.netty.util.IntSupplier;

/**
 * Event-loop strategy: after I/O or a task, keep polling the socket set without sleeping for a
 * short window, then block in the kernel as usual. Bootstrap traffic is request and answer; the
 * answer usually arrives within microseconds, and a thread that went to sleep first pays the
 * kernel's wake-up (tens to hundreds of microseconds on a busy machine) on every message. MPI
 * polls the same way, without a limit; the window bounds what an idle job burns.
 *
 * <p>Window: {@code -Djmscclpp.bootstrap.spinMicros} (default 200; 0 turns spinning off).
 */
final class SpinThenWait implements SelectStrategy {

    static final long SPIN_NANOS = Long.getLong("jmscclpp.bootstrap.spinMicros", 200) * 1000;

    static final SelectStrategyFactory FACTORY = SpinThenWait::new;

    private long lastBusyNanos = System.nanoTime();

    @Override
    public int calculateStrategy(IntSupplier selectNow, boolean hasTasks) throws Exception {
        int ready = selectNow.get();
        long now = System.nanoTime();
        if (ready > 0 || hasTasks) {
            lastBusyNanos = now;
            return ready;
        }
        if (now - lastBusyNanos < SPIN_NANOS) {
            Thread.onSpinWait();
            return SelectStrategy.CONTINUE;
        }
        return SelectStrategy.SELECT;
    }
}
