package org.jmscclpp.core.metrics;

/**
 * What one running {@link org.jmscclpp.core.proxy.ProxyService} did: the triggers its loop
 * handled, by type, and how full its fifo is. Exists from the service's construction to its
 * close. Any thread.
 */
public interface ProxyMetrics {

    /** The service's name, which is also its loop thread's ({@code jmscclpp-proxy-N}). */
    String name();

    /** Triggers the fifo holds. */
    int fifoCapacity();

    /**
     * Triggers pushed and not yet handled (producers' claimed positions minus the loop's), or -1
     * where this process cannot read the head (a GPU fifo keeps it in device memory).
     */
    long fifoOccupancy();

    /** Triggers handled with the DATA bit (a write on the semaphore's connection). */
    long dataTriggers();

    /** Triggers handled with the FLAG bit (a semaphore signal). */
    long flagTriggers();

    /** Triggers handled with the SYNC bit (a flush). */
    long syncTriggers();

    /** Triggers handled, whatever their bits: one per fifo position. */
    long triggers();

    /**
     * Nanoseconds the loop spent handling triggers, from taking one off the fifo to its pop: the
     * transports' calls (a CUDA copy or stream write, a socket write) included, waiting excluded.
     * Divided by {@link #triggers()}: what one trigger costs the loop.
     */
    long handleNanos();
}
