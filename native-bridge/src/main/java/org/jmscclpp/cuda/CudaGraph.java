package org.jmscclpp.cuda;

import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.nativebridge.CudaDriver;
import org.jspecify.annotations.Nullable;

/**
 * A CUDA graph captured from the work enqueued on one {@link CudaStream}, instantiated and ready to
 * be replayed with one {@code cuGraphLaunch}: a benchmark enqueues many small launches (kernels,
 * NCCL calls) once and replays them without paying the launch path per operation, as nccl-tests'
 * {@code -G} does.
 *
 * <p>Capture is relaxed ({@code CU_STREAM_CAPTURE_MODE_RELAXED}): other threads (a proxy polling
 * its own streams) keep calling the driver while a capture runs, and a virtual thread may move to
 * another carrier in between, which the global and thread-local modes would refuse. Thread-safe;
 * closing while a launch is being enqueued is the caller's race to avoid.
 */
public final class CudaGraph implements AutoCloseable {

    private static final System.Logger LOG = Log.logger(CudaGraph.class, Subsystem.GRAPH);
    /** {@code CUDA_ERROR_STREAM_CAPTURE_INVALIDATED}: what ending a capture broken by an illegal call returns. */
    private static final int CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;

    private final CudaContext context;
    private final String name;
    private final long graph;
    private final long exec;
    private final AtomicBoolean closed = new AtomicBoolean();

    private CudaGraph(CudaContext context, String name, long graph, long exec) {
        this.context = context;
        this.name = name;
        this.graph = graph;
        this.exec = exec;
    }

    /**
     * Captures what {@code enqueue} enqueues on {@code stream} ({@link CudaStream#launch}, NCCL
     * calls on {@link CudaStream#handle()}) and instantiates it. Nothing captured runs until
     * {@link #launch}. Returns once the graph is instantiated.
     *
     * <p>Inside {@code enqueue} only asynchronous work may touch {@code stream}: waiting on it
     * ({@link CudaStream#synchronize}) invalidates the capture.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the stream is closed;
     *                           {@link ErrorCode#SYSTEM_ERROR} naming the step that failed
     *                           ({@code cuStreamBeginCapture_v2}, {@code enqueue} with its
     *                           exception as the cause, {@code cuStreamEndCapture},
     *                           {@code cuGraphInstantiateWithFlags}); the capture is then ended
     *                           and whatever was made destroyed, so the stream is usable again
     */
    public static CudaGraph capture(CudaStream stream, Runnable enqueue) {
        Objects.requireNonNull(stream, "stream");
        Objects.requireNonNull(enqueue, "enqueue");
        CudaContext context = stream.context();
        String name = "graph of " + stream.name();
        stream.checkOpen();
        context.makeCurrent();
        int result = CudaDriver.cuStreamBeginCapture_v2(stream.handle(), CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED);
        if (result != CudaDriver.CUDA_SUCCESS) {
            throw failure(name, "cuStreamBeginCapture_v2 failed: " + CudaDriver.describe(result), null);
        }
        try {
            enqueue.run();
        } catch (Throwable e) {
            endAndDiscard(context, stream);
            if (e instanceof Error error) {
                throw error;
            }
            throw failure(name, "enqueue failed: " + e, e);
        }
        long[] captured = new long[1];
        context.makeCurrent();   // enqueue may have parked and moved this virtual thread to another carrier
        result = CudaDriver.cuStreamEndCapture(stream.handle(), captured);
        if (result != CudaDriver.CUDA_SUCCESS) {
            // an invalidated capture may still hand back a partial graph
            if (captured[0] != 0) {
                CudaDriver.cuGraphDestroy(captured[0]);
            }
            throw failure(name, "cuStreamEndCapture failed: " + CudaDriver.describe(result)
                    + " (an operation in enqueue was not capturable, or waited on the stream)", null);
        }
        long[] exec = new long[1];
        result = CudaDriver.cuGraphInstantiateWithFlags(exec, captured[0], 0);
        if (result != CudaDriver.CUDA_SUCCESS) {
            CudaDriver.cuGraphDestroy(captured[0]);
            throw failure(name, "cuGraphInstantiateWithFlags failed: " + CudaDriver.describe(result), null);
        }
        return new CudaGraph(context, name, captured[0], exec[0]);
    }

    /** Ends a capture that enqueue broke off, dropping what it captured; failures here are logged, not thrown. */
    private static void endAndDiscard(CudaContext context, CudaStream stream) {
        try {
            context.makeCurrent();
        } catch (JmscclppException e) {
            LOG.log(Level.WARNING, "cannot end the capture on " + stream.name() + ": " + e.getMessage());
            return;
        }
        long[] graph = new long[1];
        int result = CudaDriver.cuStreamEndCapture(stream.handle(), graph);
        if (graph[0] != 0) {
            CudaDriver.cuGraphDestroy(graph[0]);
        }
        if (result != CudaDriver.CUDA_SUCCESS && result != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
            LOG.log(Level.WARNING, "ending the broken capture on " + stream.name() + ": " + CudaDriver.describe(result));
        }
    }

    private static JmscclppException failure(String name, String detail, @Nullable Throwable cause) {
        return JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "capturing the " + name + ": " + detail)
                .phase("graph").cause(cause).build();
    }

    /**
     * Enqueues one replay of the whole graph on {@code stream} and returns once the driver took it;
     * wait on the stream ({@link CudaStream#synchronize}, {@link CudaStream#drained}) for the work.
     * Replays on one stream run one after another.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the graph or the stream is
     *                           closed, or the stream belongs to another GPU;
     *                           {@link ErrorCode#SYSTEM_ERROR} when the driver refuses the launch
     */
    public void launch(CudaStream stream) {
        Objects.requireNonNull(stream, "stream");
        if (closed.get()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the " + name + " is closed").phase("graph").build();
        }
        if (stream.context() != context) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the " + name + " belongs to " + context
                    + ", the stream " + stream.name() + " to " + stream.context()).phase("graph").build();
        }
        stream.checkOpen();
        context.makeCurrent();
        int result = CudaDriver.cuGraphLaunch(exec, stream.handle());
        if (result != CudaDriver.CUDA_SUCCESS) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cuGraphLaunch(" + name + " on " + stream.name()
                    + ") failed: " + CudaDriver.describe(result)).phase("graph").build();
        }
    }

    /**
     * Destroys the instantiated graph and the graph (replays already enqueued still run, as the
     * driver does). Idempotent. When the GPU's context was already released the graph went with it.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true) || context.isClosed()) {
            return;
        }
        context.makeCurrent();
        int execResult = CudaDriver.cuGraphExecDestroy(exec);
        int graphResult = CudaDriver.cuGraphDestroy(graph);
        if (execResult != CudaDriver.CUDA_SUCCESS || graphResult != CudaDriver.CUDA_SUCCESS) {
            LOG.log(Level.WARNING, "destroying the " + name + " failed: " + CudaDriver.describe(
                    execResult != CudaDriver.CUDA_SUCCESS ? execResult : graphResult));
        }
    }

    @Override
    public String toString() {
        return "CudaGraph[" + name + (closed.get() ? ", closed" : "") + "]";
    }
}
