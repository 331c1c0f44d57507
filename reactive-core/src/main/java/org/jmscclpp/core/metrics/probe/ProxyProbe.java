package org.jmscclpp.core.metrics.probe;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.jmscclpp.core.metrics.ProxyMetrics;
import org.jmscclpp.core.proxy.ProxyTrigger;

/**
 * The figures of one proxy service. Only the loop's thread counts (opaque stores of its own
 * counters, the total a release store: no atomic instruction, no allocation), any thread reads.
 */
public final class ProxyProbe implements ProxyMetrics {

    private final String name;
    private final int capacity;
    private final LongSupplier occupancy;
    private final AtomicLong data = new AtomicLong();
    private final AtomicLong flag = new AtomicLong();
    private final AtomicLong sync = new AtomicLong();
    private final AtomicLong total = new AtomicLong();
    private final AtomicLong busy = new AtomicLong();
    private volatile boolean ended;

    ProxyProbe(String name, int capacity, LongSupplier occupancy) {
        this.name = name;
        this.capacity = capacity;
        this.occupancy = occupancy;
    }

    /** The loop handled a trigger of {@code type} (its DATA, FLAG and SYNC bits) in {@code nanos}. Loop thread only. */
    public void handled(int type, long nanos) {
        busy.setOpaque(busy.getPlain() + nanos);
        if ((type & ProxyTrigger.DATA) != 0) {
            data.setOpaque(data.getPlain() + 1);
        }
        if ((type & ProxyTrigger.FLAG) != 0) {
            flag.setOpaque(flag.getPlain() + 1);
        }
        if ((type & ProxyTrigger.SYNC) != 0) {
            sync.setOpaque(sync.getPlain() + 1);
        }
        // the release publishes the counts above and the fifo pop before this call (ProxyLoop counts
        // after popping), to a reader that reads triggers() first
        total.setRelease(total.getPlain() + 1);
    }

    void end() {
        ended = true;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int fifoCapacity() {
        return capacity;
    }

    @Override
    public long fifoOccupancy() {
        return ended ? 0 : occupancy.getAsLong();
    }

    @Override
    public long dataTriggers() {
        return data.getOpaque();
    }

    @Override
    public long flagTriggers() {
        return flag.getOpaque();
    }

    @Override
    public long syncTriggers() {
        return sync.getOpaque();
    }

    @Override
    public long triggers() {
        return total.getAcquire();
    }

    @Override
    public long handleNanos() {
        return busy.getOpaque();
    }

    @Override
    public String toString() {
        return "ProxyMetrics[" + name + ": " + triggers() + " triggers, fifo " + fifoOccupancy() + "/" + capacity + "]";
    }
}
