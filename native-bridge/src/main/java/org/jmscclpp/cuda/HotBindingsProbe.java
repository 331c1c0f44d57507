package org.jmscclpp.cuda;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.nativebridge.CudaDriver;

/**
 * The cost per call, seen from Java, of the driver calls on the hot paths of the CUDA backend:
 * what a kernel wait, a context switch and a semaphore signal pay in the binding on top of the
 * driver's own work, through whichever binding {@code CudaDriver.hotCalls()} chose (FFM by default,
 * JNA with {@code -Djmscclpp.cuda.ffm=false}; {@code jmscclpp bench native} compares both with C). Measured on the calling thread with {@link System#nanoTime()} around a loop of calls,
 * after an untimed loop of the same length.
 */
public final class HotBindingsProbe {

    /** {@code cuEventQuery} on an event whose work is done, called directly. */
    public static final String EVENT_QUERY = "cuEventQuery";
    /** {@code CudaStream.isDone}: {@code cuCtxSetCurrent} then {@code cuEventQuery}, as every kernel wait polls. */
    public static final String STREAM_IS_DONE = "CudaStream.isDone";
    /** {@code CudaContext.makeCurrent}: {@code cuCtxSetCurrent} of the context already current. */
    public static final String CTX_SET_CURRENT = "cuCtxSetCurrent";
    /** One enqueue of {@code cuStreamWriteValue64_v2} (how a CUDA IPC connection signals), not its completion. */
    public static final String STREAM_WRITE_VALUE64 = "cuStreamWriteValue64_v2";

    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** Write-value enqueues between two drains of the stream, so that the enqueues never wait for a full queue. */
    private static final int WRITE_BATCH = 512;

    private HotBindingsProbe() {
    }

    /**
     * Nanoseconds per call of each binding, by the names above, in that order, each over
     * {@code calls} timed calls. {@link #STREAM_WRITE_VALUE64} is left out when the GPU cannot
     * use 64-bit stream memory operations. Makes {@code backend}'s context current on the calling
     * thread; run it on a platform thread (a virtual one could change carriers between calls).
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for fewer than 1 call or a closed backend;
     *                           {@link ErrorCode#SYSTEM_ERROR} when a call fails;
     *                           {@link ErrorCode#TIMEOUT} when the GPU does not finish the probe's work in 60 s
     */
    public static Map<String, Double> measure(CudaBackend backend, int calls) {
        if (calls < 1) {
            throw CudaBackend.invalid("hot bindings probe", "at least 1 call, got " + calls);
        }
        if (backend.isClosed()) {
            throw CudaBackend.invalid("hot bindings probe", "the CUDA backend is closed");
        }
        CudaContext context = backend.context();
        Map<String, Double> ns = new LinkedHashMap<>();
        try (CudaStream stream = new CudaStream(context, "hot bindings probe");
             DeviceBuffer word = backend.allocate(Long.BYTES)) {
            long event = stream.record();
            try {
                if (!Waiting.await(() -> stream.isDone(event), Waiting.deadline(TIMEOUT))) {
                    throw timeout("the probe's event");
                }
                ns.put(EVENT_QUERY, eventQuery(context, event, calls));
                ns.put(STREAM_IS_DONE, isDone(stream, event, calls));
            } finally {
                stream.release(event);
            }
            ns.put(CTX_SET_CURRENT, makeCurrent(context, calls));
            if (context.supportsStreamMemOps64()) {
                ns.put(STREAM_WRITE_VALUE64, writeValue(stream, word.address(), calls));
            }
        }
        return Collections.unmodifiableMap(ns);
    }

    private static double eventQuery(CudaContext context, long event, int calls) {
        context.makeCurrent();
        int failure = 0;
        for (int i = 0; i < calls; i++) {
            int r = CudaDriver.cuEventQuery(event);
            failure = failure == 0 ? r : failure;
        }
        long start = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            int r = CudaDriver.cuEventQuery(event);
            failure = failure == 0 ? r : failure;
        }
        long elapsed = System.nanoTime() - start;
        // the event completed before the loops, so every call returns CUDA_SUCCESS
        CudaDriver.check(failure, "cuEventQuery");
        return (double) elapsed / calls;
    }

    private static double isDone(CudaStream stream, long event, int calls) {
        int notDone = 0;
        for (int i = 0; i < calls; i++) {
            notDone += stream.isDone(event) ? 0 : 1;
        }
        long start = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            notDone += stream.isDone(event) ? 0 : 1;
        }
        long elapsed = System.nanoTime() - start;
        if (notDone != 0) {
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "a completed event was not done " + notDone
                    + " times").phase("hot bindings probe").build();
        }
        return (double) elapsed / calls;
    }

    private static double makeCurrent(CudaContext context, int calls) {
        for (int i = 0; i < calls; i++) {
            context.makeCurrent();
        }
        long start = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            context.makeCurrent();
        }
        return (double) (System.nanoTime() - start) / calls;
    }

    /** Times only the enqueues: the stream is drained between batches, outside the timed part. */
    private static double writeValue(CudaStream stream, long address, int calls) {
        writeValues(stream, address, calls);
        return (double) writeValues(stream, address, calls) / calls;
    }

    private static long writeValues(CudaStream stream, long address, int calls) {
        long elapsed = 0;
        for (int done = 0; done < calls; ) {
            int batch = Math.min(WRITE_BATCH, calls - done);
            stream.context().makeCurrent();
            int failure = 0;
            long start = System.nanoTime();
            for (int i = 0; i < batch; i++) {
                int r = CudaDriver.cuStreamWriteValue64_v2(stream.handle(), address, done + i,
                        CudaDriver.CU_STREAM_WRITE_VALUE_DEFAULT);
                failure = failure == 0 ? r : failure;
            }
            elapsed += System.nanoTime() - start;
            CudaDriver.check(failure, "cuStreamWriteValue64_v2");
            stream.synchronize(TIMEOUT, "the probe's write-value batch");
            done += batch;
        }
        return elapsed;
    }

    private static JmscclppException timeout(String what) {
        return JmscclppException.builder(ErrorCode.TIMEOUT, what + " did not complete within " + TIMEOUT.toSeconds()
                + " s").phase("hot bindings probe").build();
    }
}
