package org.jmscclpp.nativebridge;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.lang.foreign.FunctionDescriptor;
import java.lang.invoke.MethodHandle;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * {@link CudaHotCalls} through {@code java.lang.foreign} downcalls into the driver library {@link CudaDriver}
 * loaded. Handles and device pointers are passed as {@code long} ({@code JAVA_LONG}), as in {@link CudaDriver}:
 * on the 64-bit ABIs a pointer and a 64-bit integer travel alike, and no {@code MemorySegment} is made per call.
 *
 * <p>{@code cuEventQuery} and {@code cuCtxSetCurrent} are linked <em>critical</em> (no thread-state transition):
 * they read or set state and return; neither waits for the GPU nor calls back. The others are not:
 * {@code cuStreamWriteValue64_v2}, {@code cuMemcpyDtoDAsync_v2} and {@code cuLaunchKernel} enqueue work and wait
 * for room when the stream's command queue is full, which a critical call must never do (it would hold back
 * every safepoint while it waits).
 */
final class FfmHotCalls implements CudaHotCalls {

    static final FfmHotCalls INSTANCE = new FfmHotCalls();

    private static final @Nullable String UNAVAILABLE;
    private static final @Nullable MethodHandle EVENT_QUERY;
    private static final @Nullable MethodHandle CTX_SET_CURRENT;
    private static final @Nullable MethodHandle STREAM_WRITE_VALUE64;
    private static final @Nullable MethodHandle MEMCPY_DTOD_ASYNC;
    private static final @Nullable MethodHandle LAUNCH_KERNEL;

    static {
        MethodHandle eventQuery = null;
        MethodHandle ctxSetCurrent = null;
        MethodHandle writeValue = null;
        MethodHandle memcpy = null;
        MethodHandle launch = null;
        String reason = null;
        NativeLibrary library = CudaDriver.library();
        if (library == null) {
            reason = CudaDriver.unavailableReason().orElse("the CUDA driver library is not loaded");
        } else {
            try {
                Downcalls driver = Downcalls.of(library);
                eventQuery = driver.bind("cuEventQuery", FunctionDescriptor.of(JAVA_INT, JAVA_LONG), true);
                ctxSetCurrent = driver.bind("cuCtxSetCurrent", FunctionDescriptor.of(JAVA_INT, JAVA_LONG), true);
                writeValue = driver.bind("cuStreamWriteValue64_v2",
                        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT), false);
                memcpy = driver.bind("cuMemcpyDtoDAsync_v2",
                        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG), false);
                launch = driver.bind("cuLaunchKernel", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT,
                        JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG), false);
            } catch (RuntimeException e) {
                reason = e.getMessage();
            }
        }
        UNAVAILABLE = reason;
        EVENT_QUERY = eventQuery;
        CTX_SET_CURRENT = ctxSetCurrent;
        STREAM_WRITE_VALUE64 = writeValue;
        MEMCPY_DTOD_ASYNC = memcpy;
        LAUNCH_KERNEL = launch;
    }

    private FfmHotCalls() {
    }

    /** Empty when every hot call is linked; otherwise why not. */
    static Optional<String> unavailableReason() {
        return Optional.ofNullable(UNAVAILABLE);
    }

    @Override
    public Binding binding() {
        return Binding.FFM;
    }

    @Override
    public int cuEventQuery(long event) {
        try {
            return (int) EVENT_QUERY.invokeExact(event);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuCtxSetCurrent(long context) {
        try {
            return (int) CTX_SET_CURRENT.invokeExact(context);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamWriteValue64_v2(long stream, long address, long value, int flags) {
        try {
            return (int) STREAM_WRITE_VALUE64.invokeExact(stream, address, value, flags);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemcpyDtoDAsync_v2(long dst, long src, long bytes, long stream) {
        try {
            return (int) MEMCPY_DTOD_ASYNC.invokeExact(dst, src, bytes, stream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuLaunchKernel(long function, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
                              int sharedMemBytes, long stream, Pointer kernelParams, @Nullable Pointer extra) {
        try {
            return (int) LAUNCH_KERNEL.invokeExact(function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                    sharedMemBytes, stream, Pointer.nativeValue(kernelParams),
                    extra == null ? 0L : Pointer.nativeValue(extra));
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public String toString() {
        return "FFM";
    }
}
