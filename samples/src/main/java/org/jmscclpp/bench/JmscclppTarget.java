package org.jmscclpp.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.cuda.collective.CudaCollectiveComm;
import org.jmscclpp.samples.CollectiveBuffers;
import org.jmscclpp.samples.CollectiveData;
import org.jmscclpp.samples.CollectiveJob;
import org.jmscclpp.samples.CollectiveRun;
import org.jspecify.annotations.Nullable;

/**
 * jmscclpp's collectives as {@link CollectiveRunner} measures them, through the library's
 * {@link org.jmscclpp.core.collective.CollectiveComm}:
 * <ul>
 *   <li>on the CUDA backend, the stream form ({@link CudaCollectiveComm#on}): each issue enqueues
 *       the call on this target's stream and returns, so back-to-back issues and a CUDA graph of
 *       them are what a service's stream-ordered code gets;</li>
 *   <li>on the host backend (and for a communicator a test wrapped), the {@code Mono} form: each
 *       issue subscribes to the call's Mono at once, so the calls queue up back to back, and
 *       {@link #synchronize} waits for all of them.</li>
 * </ul>
 * The buffers are registered with the communicator ({@link CollReport#JMSCCLPP}, zero-copy) or not
 * ({@link CollReport#STAGED}: the engine stages them through its scratch).
 */
final class JmscclppTarget implements CollTarget {

    private final CollectiveJob job;
    private final CollectiveBuffers buffers;
    private final CollectiveData data;
    private final @Nullable CudaStream stream;
    private final CudaCollectiveComm.@Nullable StreamCollectives onStream;
    private final boolean registered;
    private final List<CompletableFuture<Void>> pending = new ArrayList<>();

    private JmscclppTarget(CollectiveJob job, CollectiveBuffers buffers, CollectiveData data,
                           @Nullable CudaStream stream, CudaCollectiveComm.@Nullable StreamCollectives onStream,
                           boolean registered) {
        this.job = job;
        this.buffers = buffers;
        this.data = data;
        this.stream = stream;
        this.onStream = onStream;
        this.registered = registered;
    }

    /**
     * The target of {@code job}'s communicator on {@code buffers}, whether they are registered with
     * it or not; on CUDA with a stream of its own (which the data's kernels share).
     */
    static JmscclppTarget create(CollectiveJob job, CollectiveBuffers buffers) {
        CudaStream stream = job.backend() instanceof CudaBackend cuda ? cuda.createStream("bench coll rank "
                + job.rank()) : null;
        try {
            CollectiveData data = CollectiveData.create(job.backend(), stream, job.rank(), job.timeout());
            CudaCollectiveComm.StreamCollectives on = stream != null && job.comm() instanceof CudaCollectiveComm c
                    ? c.on(stream) : null;
            return new JmscclppTarget(job, buffers, data, stream, on, buffers.registeredWith(job.comm()));
        } catch (RuntimeException e) {
            if (stream != null) {
                stream.close();
            }
            throw e;
        }
    }

    @Override
    public String implementation() {
        return registered ? CollReport.JMSCCLPP : CollReport.STAGED;
    }

    @Override
    public String algorithm(CollectiveRun run) {
        return job.algorithm(run, buffers);
    }

    @Override
    public CollectiveBuffers buffers() {
        return buffers;
    }

    @Override
    public CollectiveData data() {
        return data;
    }

    /** Whether runs are enqueued on a stream (the CUDA stream form) rather than issued as Monos. */
    boolean streamForm() {
        return onStream != null;
    }

    @Override
    public void issue(CollectiveRun run) {
        int rank = job.rank();
        if (onStream != null) {
            if (run.kind() == CollectiveKind.SEND) {
                onStream.group(g -> buffers.record(g, run, rank));
            } else {
                onStream.execute(buffers.call(run, rank));
            }
            return;
        }
        pending.add(buffers.issue(job.comm(), run, rank).toFuture());
    }

    @Override
    public void synchronize() {
        if (stream != null) {
            stream.synchronize(job.timeout(), "jmscclpp's collectives");
        }
        if (onStream != null && job.comm() instanceof CudaCollectiveComm c) {
            c.asyncError().ifPresent(e -> {
                throw e;
            });
        }
        awaitPending();
    }

    /** Waits for the Monos issued, all within one deadline per call; the first error. */
    private void awaitPending() {
        try {
            Duration limit = job.timeout().multipliedBy(Math.max(1, pending.size()));
            long deadline = System.nanoTime() + limit.toNanos();
            for (CompletableFuture<Void> f : pending) {
                f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            throw JmscclppException.builder(ErrorCode.TIMEOUT, pending.size() + " collective calls did not complete"
                    + " in time").rank(job.rank()).phase("bench coll").build();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw JmscclppException.builder(ErrorCode.ABORTED, "interrupted while waiting for collective calls")
                    .rank(job.rank()).phase("bench coll").build();
        } finally {
            pending.clear();
        }
    }

    @Override
    public @Nullable CudaStream stream() {
        return onStream != null ? stream : null;
    }

    @Override
    public void close() {
        try {
            data.close();
        } finally {
            if (stream != null) {
                stream.close();
            }
        }
    }
}
