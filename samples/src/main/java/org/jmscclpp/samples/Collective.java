package org.jmscclpp.samples;

import java.time.Duration;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.nativebridge.CudaStream;
import org.jspecify.annotations.Nullable;

/**
 * One rank's end of a collective, set up once (connections, channels, registered buffers, scratch,
 * compiled kernels) for sizes up to {@link #maxSize()} and then run any number of times by
 * {@link #enqueue}. Every rank of the job creates the same collective with the same arguments,
 * and enqueues the same sequence of operations.
 *
 * <p>The collective owns its {@link #input()} and {@link #output()} buffers, each
 * {@link #maxSize()} bytes (S in {@link CollectiveKind}'s sense). Callers fill the input (and, for
 * in-place runs, the output slice the kind names) through the backend's copies before enqueueing,
 * and read the output after {@link #synchronize}. A peer's run may write into this rank's output as
 * soon as the peer enqueued it (put-based algorithms start without a handshake, as MSCCL++'s do):
 * whatever a caller writes into its output must have landed, on every rank, before any rank
 * enqueues the run.
 *
 * <p>On the CUDA backend {@link #enqueue} only enqueues on {@link #stream()} and returns; every
 * piece of state one run hands to the next (packet flags, semaphore expectations, scratch halves)
 * lives in device memory and is advanced by the kernels, so a CUDA graph captured from enqueues
 * replays correctly. On the host backend {@link #enqueue} runs the operation on the calling thread
 * (with helper threads where it wants) and returns when this rank's part is done.
 */
interface Collective extends AutoCloseable {

    CollectiveKind kind();

    /** The algorithm, as {@code --algo} names it and tables print it: {@code ll16}, {@code rsag}, {@code memory}, {@code port}, {@code nccl}. */
    String algorithm();

    /** The largest S this collective was set up for, in bytes. */
    long maxSize();

    /** The buffer read by out-of-place runs. */
    DeviceBuffer input();

    /** The buffer written by every run (and read by in-place runs). */
    DeviceBuffer output();

    /**
     * Enqueues one operation over {@code count} elements of {@code type} ({@link CollectiveKind}
     * says per what), reading {@link #input()} or, with {@code inPlace}, {@link #output()}.
     *
     * @throws org.jmscclpp.core.JmscclppException INVALID_USAGE when the size exceeds
     *         {@link #maxSize()}, the type is not offered, or in-place is asked of a kind without it
     */
    void enqueue(long count, DataType type, boolean inPlace);

    /** Waits until every enqueued operation finished on this rank; TIMEOUT after {@code timeout}, SYSTEM_ERROR when one failed. */
    void synchronize(Duration timeout);

    /** The stream the CUDA backend enqueues on (for graph capture and timing); null on the host backend. */
    @Nullable CudaStream stream();

    /** Releases what the collective made. Every rank must have finished every operation first. */
    @Override
    void close();
}
