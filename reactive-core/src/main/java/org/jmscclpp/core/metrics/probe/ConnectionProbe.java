package org.jmscclpp.core.metrics.probe;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.metrics.ConnectionMetrics;

/**
 * The figures of one rank, peer and transport: the sums of the open {@link MeteredConnection}s of
 * that key plus what the closed ones left behind. Connections count on their own adders, so a
 * write touches only its connection's; reading adds them up.
 */
final class ConnectionProbe implements ConnectionMetrics {

    private final int rank;
    private final int peer;
    private final Transport transport;
    private final List<MeteredConnection> open = new ArrayList<>(1);
    // what the closed connections counted; guarded by this
    private long bytes;
    private long writes;
    private long signals;
    private long flushes;
    private long flushErrors;
    private long flushNanos;

    ConnectionProbe(int rank, int peer, Transport transport) {
        this.rank = rank;
        this.peer = peer;
        this.transport = transport;
    }

    synchronized void opened(MeteredConnection c) {
        open.add(c);
    }

    /** Folds a closed connection's counts into the retired totals, once. */
    synchronized void closed(MeteredConnection c) {
        if (open.remove(c)) {
            bytes += c.bytes.sum();
            writes += c.writes.sum();
            signals += c.signals.sum();
            flushes += c.flushes.sum();
            flushErrors += c.flushErrors.sum();
            flushNanos += c.flushNanos.sum();
        }
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int peer() {
        return peer;
    }

    @Override
    public Transport transport() {
        return transport;
    }

    @Override
    public synchronized long bytesWritten() {
        return bytes + openSum(c -> c.bytes);
    }

    @Override
    public synchronized long writes() {
        return writes + openSum(c -> c.writes);
    }

    @Override
    public synchronized long signals() {
        return signals + openSum(c -> c.signals);
    }

    @Override
    public synchronized long flushes() {
        return flushes + openSum(c -> c.flushes);
    }

    @Override
    public synchronized long flushErrors() {
        return flushErrors + openSum(c -> c.flushErrors);
    }

    @Override
    public synchronized long flushNanos() {
        return flushNanos + openSum(c -> c.flushNanos);
    }

    /** What the open connections counted on one of their adders; the caller holds this. */
    private long openSum(Function<MeteredConnection, LongAdder> counter) {
        long sum = 0;
        for (MeteredConnection c : open) {
            sum += counter.apply(c).sum();
        }
        return sum;
    }

    @Override
    public String toString() {
        return "ConnectionMetrics[rank " + rank + ", peer " + peer + ", " + transport + ": " + bytesWritten()
                + " bytes in " + writes() + " writes, " + signals() + " signals, " + flushes() + " flushes]";
    }
}
