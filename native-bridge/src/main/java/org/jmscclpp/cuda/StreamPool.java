package org.jmscclpp.cuda;

import java.util.ArrayDeque;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * Streams for kernel runs of one module: a run takes a stream of its own, so concurrent runs
 * never queue behind each other, and gives it back when its work finished. At most
 * {@code maxIdle} finished streams are kept for reuse; the rest are destroyed. A stream whose
 * work may still be running (a run that timed out or was cancelled) or failed is discarded,
 * never reused: the next run would otherwise wait behind it. Thread-safe. Public for the modules
 * of {@code org.jmscclpp.cuda.kernel}, whose kernel runs take their streams here.
 */
public final class StreamPool implements AutoCloseable {

    private final CudaContext context;
    private final String prefix;
    private final int maxIdle;
    private final ArrayDeque<CudaStream> idle = new ArrayDeque<>();
    private boolean closed;
    private int created;

    public StreamPool(CudaContext context, String prefix, int maxIdle) {
        this.context = context;
        this.prefix = prefix;
        this.maxIdle = maxIdle;
    }

    /**
     * An idle stream, or a new one.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} once the pool is closed;
     *                           {@link ErrorCode#SYSTEM_ERROR} when the driver cannot create a stream
     */
    public CudaStream take() {
        int number;
        synchronized (idle) {
            if (closed) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the streams of " + prefix + " are closed")
                        .phase("launch").build();
            }
            CudaStream stream = idle.poll();
            if (stream != null) {
                return stream;
            }
            number = created++;
        }
        // created outside the lock: the driver call may take a while and needs no exclusion
        return new CudaStream(context, prefix + "#" + number);
    }

    /** Returns a stream whose work all finished. */
    public void giveBack(CudaStream stream) {
        synchronized (idle) {
            if (!closed && idle.size() < maxIdle) {
                idle.push(stream);
                return;
            }
        }
        destroy(stream);
    }

    /** Destroys a stream that must not be reused; the driver frees it once its queued work ends. */
    public void discard(CudaStream stream) {
        destroy(stream);
    }

    /** Streams kept for reuse right now. */
    int idleCount() {
        synchronized (idle) {
            return idle.size();
        }
    }

    /** Destroys the idle streams; streams given back later are destroyed then. Idempotent. */
    @Override
    public void close() {
        CudaStream[] streams;
        synchronized (idle) {
            closed = true;
            streams = idle.toArray(CudaStream[]::new);
            idle.clear();
        }
        for (CudaStream stream : streams) {
            destroy(stream);
        }
    }

    private static void destroy(CudaStream stream) {
        try {
            stream.close();
        } catch (JmscclppException e) {
            // the context is closed already: its streams went with it
        }
    }
}
