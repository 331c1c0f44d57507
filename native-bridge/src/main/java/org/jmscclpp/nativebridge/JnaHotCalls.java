package org.jmscclpp.nativebridge;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import org.jspecify.annotations.Nullable;

/** {@link CudaHotCalls} through JNA direct mapping: the binding of every CUDA call before FFM. */
final class JnaHotCalls implements CudaHotCalls {

    static final JnaHotCalls INSTANCE = new JnaHotCalls();

    private JnaHotCalls() {
    }

    @Override
    public Binding binding() {
        return Binding.JNA;
    }

    @Override
    public int cuEventQuery(long event) {
        return Bound.cuEventQuery(event);
    }

    @Override
    public int cuCtxSetCurrent(long context) {
        return Bound.cuCtxSetCurrent(context);
    }

    @Override
    public int cuStreamWriteValue64_v2(long stream, long address, long value, int flags) {
        return Bound.cuStreamWriteValue64_v2(stream, address, value, flags);
    }

    @Override
    public int cuMemcpyDtoDAsync_v2(long dst, long src, long bytes, long stream) {
        return Bound.cuMemcpyDtoDAsync_v2(dst, src, bytes, stream);
    }

    @Override
    public int cuLaunchKernel(long function, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
                              int sharedMemBytes, long stream, Pointer kernelParams, @Nullable Pointer extra) {
        return Bound.cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes, stream,
                kernelParams, extra);
    }

    @Override
    public String toString() {
        return "JNA";
    }

    /** The native methods, registered with the driver library {@link CudaDriver} loaded (Java names = symbols). */
    private static final class Bound {

        static {
            NativeLibrary library = CudaDriver.library();
            if (library != null) {
                Native.register(Bound.class, library);
            }
        }

        private Bound() {
        }

        static native int cuEventQuery(long event);

        static native int cuCtxSetCurrent(long context);

        static native int cuStreamWriteValue64_v2(long stream, long address, long value, int flags);

        static native int cuMemcpyDtoDAsync_v2(long dst, long src, long bytes, long stream);

        static native int cuLaunchKernel(long function, int gridX, int gridY, int gridZ, int blockX, int blockY,
                                         int blockZ, int sharedMemBytes, long stream, Pointer kernelParams,
                                         @Nullable Pointer extra);
    }
}
