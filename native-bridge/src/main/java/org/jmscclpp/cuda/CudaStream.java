package org.jmscclpp.cuda;

import static org.jmscclpp.nativebridge.CudaDriver.check;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;
import org.jmscclpp.nativebridge.CudaDriver;
import reactor.core.publisher.Mono;

/**
 * A non-blocking CUDA stream of one {@link CudaContext}, and the way this project waits for it:
 * record an event, then poll {@code cuEventQuery} (a call that never blocks) with the spin-then-park
 * pacing of {@link Waiting}. Blocking driver calls ({@code cuStreamSynchronize},
 * {@code cuEventSynchronize}) are never used: on a virtual thread they would hold the carrier for
 * the whole wait.
 *
 * <p>Events are pooled, so a wait costs two driver calls (record, query) and no allocation in the
 * driver after warm-up. Thread-safe: work may be enqueued from any thread.
 */
public final class CudaStream implements AutoCloseable {

    private final CudaContext context;
    private final long handle;
    private final String name;
    private final ArrayDeque<Long> freeEvents = new ArrayDeque<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Run once after the stream is destroyed (a backend's stream gives back its hold on the context). */
    private final Runnable onClose;
    /** Whether this object created the stream (and so destroys it on close). */
    private final boolean owned;

    CudaStream(CudaContext context, String name) {
        this(context, name, () -> { });
    }

    CudaStream(CudaContext context, String name, Runnable onClose) {
        this.context = context;
        this.name = name;
        this.onClose = onClose;
        this.owned = true;
        context.makeCurrent();
        long[] stream = new long[1];
        check(CudaDriver.cuStreamCreate(stream, CudaDriver.CU_STREAM_NON_BLOCKING), "cuStreamCreate(" + name + ")");
        this.handle = stream[0];
    }

    /** A stream someone else created ({@link CudaBackend#wrapStream}): {@link #close()} leaves it alive. */
    CudaStream(CudaContext context, long handle, String name, Runnable onClose) {
        this.context = context;
        this.name = name;
        this.onClose = onClose;
        this.owned = false;
        this.handle = handle;
    }

    /** The {@code CUstream}, for libraries that take a stream (NCCL's {@code cudaStream_t} is the same handle). */
    public long handle() {
        return handle;
    }

    /** The stream's name, as errors give it. */
    public String name() {
        return name;
    }

    /**
     * Enqueues one launch of {@code kernel} and returns once the driver took it, not when the
     * kernel finished ({@link #synchronize} or {@link #drained} wait for that). Launches on one
     * stream run in the order they were enqueued.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the stream or the kernel's
     *                           module is closed or they belong to different GPUs;
     *                           {@link ErrorCode#SYSTEM_ERROR} when the driver refuses the launch
     */
    public void launch(Kernel kernel, LaunchConfig config, KernelArgs args) {
        checkOpen();
        kernel.launch(config, args, this);
    }

    /**
     * Enqueues a copy of {@code bytes} from {@code src} to {@code dst} (device, pinned host or peer
     * memory mapped here: unified addresses) and returns; a CUDA graph captures it as a memcpy node.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when the driver refuses
     */
    public void copyAsync(long dst, long src, long bytes) {
        checkOpen();
        if (bytes == 0) {
            return;
        }
        context.makeCurrent();
        check(CudaDriver.cuMemcpyAsync(dst, src, bytes, handle), "cuMemcpyAsync(" + bytes + " bytes on " + name + ")");
    }

    /** Enqueues setting {@code bytes} bytes at {@code dst} to {@code value}. */
    public void fillAsync(long dst, byte value, long bytes) {
        checkOpen();
        if (bytes == 0) {
            return;
        }
        context.makeCurrent();
        check(CudaDriver.cuMemsetD8Async(dst, value, bytes, handle), "cuMemsetD8Async(" + bytes + " bytes on " + name
                + ")");
    }

    /**
     * Enqueues a write of the 64-bit {@code value} at {@code address} (device memory, or pinned host
     * memory the GPU maps), ordered after the work enqueued before it: how a host thread learns,
     * with a plain load, that the stream got this far.
     */
    public void writeValueAsync(long address, long value) {
        checkOpen();
        context.makeCurrent();
        check(CudaDriver.cuStreamWriteValue64_v2(handle, address, value, CudaDriver.CU_STREAM_WRITE_VALUE_DEFAULT),
                "cuStreamWriteValue64_v2(" + name + ")");
    }

    /**
     * Makes the work enqueued on this stream from now on wait, on the GPU, for everything enqueued
     * on {@code other} so far ({@code cuEventRecord} on it, {@code cuStreamWaitEvent} here): how a
     * collective on one stream is ordered after a kernel on another without the host waiting.
     * Capturable in a CUDA graph when both streams take part in the capture.
     */
    public void waitFor(CudaStream other) {
        checkOpen();
        long event = other.record();
        try {
            context.makeCurrent();
            check(CudaDriver.cuStreamWaitEvent(handle, event, 0), "cuStreamWaitEvent(" + name + " on " + other.name
                    + ")");
        } finally {
            other.release(event);
        }
    }

    /**
     * Whether everything enqueued so far finished: one {@code cuStreamQuery}; SYSTEM_ERROR when the
     * stream failed (a kernel trapped: the context is lost).
     */
    public boolean isIdle() {
        checkOpen();
        context.makeCurrent();
        int result = CudaDriver.cuStreamQuery(handle);
        if (result == CudaDriver.CUDA_ERROR_NOT_READY) {
            return false;
        }
        check(result, "cuStreamQuery(" + name + ")");
        return true;
    }

    /** The context the stream belongs to (its backend's {@link CudaBackend#context()}). */
    public CudaContext context() {
        return context;
    }

    /**
     * Records an event after the work enqueued so far and returns it; {@link #isDone} tells when
     * that work finished, {@link #release} returns the event to the pool.
     */
    long record() {
        checkOpen();
        long event = takeEvent();
        context.makeCurrent();
        int result = CudaDriver.cuEventRecord(event, handle);
        if (result != CudaDriver.CUDA_SUCCESS) {
            release(event);
            throw CudaDriver.error(result, "cuEventRecord(" + name + ")");
        }
        return event;
    }

    /**
     * Whether the work before {@code event} finished; throws {@link ErrorCode#SYSTEM_ERROR} when
     * the stream failed (a kernel trapped or touched a bad address: the context is then lost).
     */
    boolean isDone(long event) {
        context.makeCurrent();
        int result = CudaDriver.cuEventQuery(event);
        if (result == CudaDriver.CUDA_ERROR_NOT_READY) {
            return false;
        }
        check(result, "cuEventQuery(" + name + ")");
        return true;
    }

    /** Returns an event to the pool. */
    void release(long event) {
        synchronized (freeEvents) {
            if (!closed.get()) {
                freeEvents.push(event);
                return;
            }
        }
        CudaDriver.cuEventDestroy_v2(event);
    }

    /**
     * A lazy Mono that completes when every piece of work enqueued on this stream before its
     * subscription has finished, polled on a virtual thread; errors with
     * {@link ErrorCode#TIMEOUT} naming {@code what} after {@code timeout}, and with
     * {@link ErrorCode#SYSTEM_ERROR} when the work failed.
     */
    public Mono<Void> drained(Duration timeout, String what) {
        return Mono.defer(() -> {
            long event = record();
            return Waiting.until(() -> isDone(event), timeout, () -> JmscclppException.builder(ErrorCode.TIMEOUT, what + " did not finish on " + name
                    + " within " + timeout).phase("cuda").build())
                    .doFinally(signal -> release(event));
        });
    }

    /**
     * Blocks the calling thread (parking, never inside the driver) until the work enqueued so far
     * has finished.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} after {@code timeout};
     *                           {@link ErrorCode#SYSTEM_ERROR} when the work failed
     */
    public void synchronize(Duration timeout, String what) {
        long event = record();
        try {
            if (!Waiting.await(() -> isDone(event), Waiting.deadline(timeout))) {
                throw JmscclppException.builder(ErrorCode.TIMEOUT, what + " did not finish on " + name + " within "
                        + timeout).phase("cuda").build();
            }
        } finally {
            release(event);
        }
    }

    /**
     * Times the work {@code enqueue} puts on this stream with two CUDA events (recorded before and
     * after it) and returns the GPU time between them in milliseconds (about half a microsecond
     * of resolution), as nccl-tests times its iterations. Blocks (parking, never inside the driver)
     * until that work has finished.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} naming {@code what} when the work has not
     *                           finished after {@code timeout}; {@link ErrorCode#SYSTEM_ERROR} when
     *                           it failed or the driver refused an event; whatever {@code enqueue}
     *                           throws
     */
    public float elapsedMillis(Runnable enqueue, Duration timeout, String what) {
        checkOpen();
        long start = createEvent(CudaDriver.CU_EVENT_DEFAULT);
        long end;
        try {
            end = createEvent(CudaDriver.CU_EVENT_DEFAULT);
        } catch (RuntimeException e) {
            CudaDriver.cuEventDestroy_v2(start);
            throw e;
        }
        try {
            context.makeCurrent();
            check(CudaDriver.cuEventRecord(start, handle), "cuEventRecord(" + name + ", start of " + what + ")");
            enqueue.run();
            context.makeCurrent();
            check(CudaDriver.cuEventRecord(end, handle), "cuEventRecord(" + name + ", end of " + what + ")");
            if (!Waiting.await(() -> isDone(end), Waiting.deadline(timeout))) {
                throw JmscclppException.builder(ErrorCode.TIMEOUT, what + " did not finish on " + name + " within "
                        + timeout).phase("cuda").build();
            }
            float[] milliseconds = new float[1];
            context.makeCurrent();
            check(CudaDriver.cuEventElapsedTime_v2(milliseconds, start, end), "cuEventElapsedTime_v2(" + what + ")");
            return milliseconds[0];
        } finally {
            // destroying an event still pending is allowed: the driver frees it once it completes
            context.makeCurrent();
            CudaDriver.cuEventDestroy_v2(start);
            CudaDriver.cuEventDestroy_v2(end);
        }
    }

    /** Whether a capture ({@link CudaGraph#capture}) is under way on this stream. */
    boolean isCapturing() {
        context.makeCurrent();
        int[] status = new int[1];
        check(CudaDriver.cuStreamIsCapturing(handle, status), "cuStreamIsCapturing(" + name + ")");
        return status[0] != CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE;
    }

    private long createEvent(int flags) {
        context.makeCurrent();
        long[] event = new long[1];
        check(CudaDriver.cuEventCreate(event, flags), "cuEventCreate(" + name + ")");
        return event[0];
    }

    private long takeEvent() {
        synchronized (freeEvents) {
            Long event = freeEvents.poll();
            if (event != null) {
                return event;
            }
        }
        return createEvent(CudaDriver.CU_EVENT_DISABLE_TIMING);
    }

    /** Throws {@link ErrorCode#INVALID_USAGE} when the stream is closed. */
    public void checkOpen() {
        if (closed.get()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the stream " + name + " is closed").phase("cuda")
                    .build();
        }
    }

    /**
     * Destroys the pooled events and the stream (work still queued finishes first, as the driver
     * does). Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        context.makeCurrent();
        synchronized (freeEvents) {
            for (Long event : freeEvents) {
                CudaDriver.cuEventDestroy_v2(event);
            }
            freeEvents.clear();
        }
        if (owned) {
            CudaDriver.cuStreamDestroy_v2(handle);
        }
        onClose.run();
    }

    @Override
    public String toString() {
        return "CudaStream[" + name + ", " + context + "]";
    }
}
