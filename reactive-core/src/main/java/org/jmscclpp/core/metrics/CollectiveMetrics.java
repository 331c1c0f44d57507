package org.jmscclpp.core.metrics;

import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;

/**
 * The collective calls one rank issued with one operation, one data type and a size in one bucket,
 * since the process started, over every {@link org.jmscclpp.core.collective.CollectiveComm} of that
 * rank. Any thread.
 */
public interface CollectiveMetrics {

    /** The issuing rank. */
    int rank();

    /** The operation. */
    CollectiveKind op();

    /** The element type. */
    DataType type();

    /**
     * The size bucket's name: the smallest of {@code 1KiB, 4KiB, 16KiB, … 1GiB} (powers of four)
     * at or above the call's size (nccl-tests' S: the larger of its send and receive bytes), or
     * {@code over1GiB}.
     */
    String size();

    /** Calls issued (also those enqueued on a stream, which {@link #completed()} does not count). */
    long calls();

    /** Bytes of the calls issued (each call's size). */
    long bytes();

    /** Calls whose Mono completed. */
    long completed();

    /** Calls whose Mono ended in an error. */
    long errors();

    /** The time of the completed calls together, in nanoseconds, from subscription to completion. */
    long nanos();
}
