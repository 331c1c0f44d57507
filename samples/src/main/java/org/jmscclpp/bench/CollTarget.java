package org.jmscclpp.bench;

import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.samples.CollectiveBuffers;
import org.jmscclpp.samples.CollectiveData;
import org.jmscclpp.samples.CollectiveRun;
import org.jspecify.annotations.Nullable;

/**
 * What {@link CollectiveRunner} measures: one implementation of the collectives on one rank, with
 * its buffers and the data that checks them. {@link #issue} starts this rank's part of a run without
 * waiting (on CUDA: enqueues it on {@link #stream()}), {@link #synchronize} waits for everything
 * issued, so {@code iters} issues and one synchronize time the calls back to back as nccl-tests does.
 * Every rank issues the same runs in the same order.
 */
interface CollTarget extends AutoCloseable {

    /** {@code jmscclpp}, {@code jmscclpp-staged} or {@code nccl}: the rows' {@code impl}. */
    String implementation();

    /** The algorithm {@code run} gets. */
    String algorithm(CollectiveRun run);

    /** Whether this implementation runs {@code run} (NCCL has no in-place alltoall: its grouped sends and receives would race). */
    default boolean offers(CollectiveRun run) {
        return true;
    }

    CollectiveBuffers buffers();

    CollectiveData data();

    /** Starts this rank's part of {@code run}; returns without waiting for it. */
    void issue(CollectiveRun run);

    /** Waits until every run issued so far is done on this rank, up to the deadline; its error otherwise. */
    void synchronize();

    /** The stream the runs are enqueued on, for CUDA graph capture; null where there is none (the host backend). */
    @Nullable CudaStream stream();

    /** Frees what the target made (not the buffers it was given). */
    @Override
    void close();
}
