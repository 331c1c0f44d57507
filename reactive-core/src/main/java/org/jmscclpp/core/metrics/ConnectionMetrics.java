package org.jmscclpp.core.metrics;

import org.jmscclpp.core.Transport;

/**
 * What the connections of one rank to one peer over one transport did since the process started:
 * cumulative counts over every {@link org.jmscclpp.core.Connection} a {@link org.jmscclpp.core.Communicator}
 * made for that rank, peer and transport, closed ones included. Reading is cheap and may run on any
 * thread; the values are a moment's sums, not a consistent snapshot of all of them together.
 */
public interface ConnectionMetrics {

    /** The rank that writes. */
    int rank();

    /** The peer it writes to. */
    int peer();

    /** The transport of the connections. */
    Transport transport();

    /** Bytes of the writes that were started ({@link org.jmscclpp.core.Connection#write}'s sizes). */
    long bytesWritten();

    /** {@link org.jmscclpp.core.Connection#write} calls that were started. */
    long writes();

    /** {@link org.jmscclpp.core.Connection#updateAndSync} calls (semaphore signals) that were started. */
    long signals();

    /** Flushes that completed. */
    long flushes();

    /** Flushes that ended in an error (a timeout, a dead peer, an abort). */
    long flushErrors();

    /** The time of the completed flushes together, in nanoseconds, from subscription to completion. */
    long flushNanos();
}
