package org.jmscclpp.nativebridge;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Optional;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jspecify.annotations.Nullable;

/**
 * The CUDA driver API ({@code libcuda.so.1}) through JNA direct mapping ({@code Native.register}:
 * about half the per-call cost of interface mapping), except the calls made per kernel wait, signal, copy
 * and launch ({@code cuEventQuery}, {@code cuCtxSetCurrent}, {@code cuStreamWriteValue64_v2},
 * {@code cuMemcpyDtoDAsync_v2}, {@code cuLaunchKernel}): those go through {@link #hotCalls()}, by default
 * {@code java.lang.foreign} downcalls into the same file ({@link CudaHotCalls}; {@code -Djmscclpp.cuda.ffm=false}
 * keeps them on JNA). Java names are the exported symbols: {@code cuda.h} maps {@code cuMemAlloc} to
 * {@code cuMemAlloc_v2} and so on, and JNA binds the literal name.
 *
 * <p>Handles ({@code CUcontext}, {@code CUstream}, {@code CUevent}, {@code CUmodule},
 * {@code CUfunction}) and device pointers travel as {@code long}: on x86-64 a pointer and a 64-bit
 * integer are passed the same way. Out-parameters are one-element arrays. Every function returns
 * a {@code CUresult}; {@link #check} turns a failure into an exception naming the call and the
 * driver's error name.
 *
 * <p>The library is registered when this class initialises; when that fails (no driver on this
 * host) {@link #unavailableReason()} says why and no native method may be called.
 */
public final class CudaDriver {

    public static final int CUDA_SUCCESS = 0;
    public static final int CUDA_ERROR_NOT_READY = 600;

    public static final int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
    static final int CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41;
    public static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
    public static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
    public static final int CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102;
    public static final int CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103;
    public static final int CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS = 122;

    public static final int CU_MEMHOSTALLOC_PORTABLE = 1;
    public static final int CU_MEMHOSTALLOC_DEVICEMAP = 2;
    public static final int CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;
    public static final int CU_STREAM_NON_BLOCKING = 1;
    public static final int CU_EVENT_DISABLE_TIMING = 2;
    public static final int CU_EVENT_DEFAULT = 0;
    public static final int CU_STREAM_WRITE_VALUE_DEFAULT = 0;
    public static final int CU_STREAM_CAPTURE_MODE_RELAXED = 2;
    public static final int CU_STREAM_CAPTURE_STATUS_NONE = 0;

    public static final int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
    public static final int CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1;
    public static final int CU_MEM_LOCATION_TYPE_DEVICE = 1;
    public static final int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;
    public static final int CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1;
    /** {@code sizeof(CUmemAllocationProp)} on x86-64 (CUDA 13): type, handle types, location, win32 pointer, flags. */
    public static final int MEM_ALLOCATION_PROP_BYTES = 32;
    /** {@code sizeof(CUmemAccessDesc)}: location (type, id), flags. */
    public static final int MEM_ACCESS_DESC_BYTES = 12;
    /** {@code sizeof(CUipcMemHandle)}. */
    public static final int IPC_HANDLE_BYTES = 64;

    private static final System.Logger LOG = Log.logger(CudaDriver.class, Subsystem.INIT);
    private static final @Nullable String UNAVAILABLE;
    private static final @Nullable NativeLibrary LIBRARY;
    /** The binding of the hot calls; a constant, so that the JIT inlines the calls through it. */
    private static final CudaHotCalls HOT;

    static {
        String reason = null;
        NativeLibrary library = null;
        try {
            library = NativeLibrary.getInstance(libraryName());
            Native.register(CudaDriver.class, library);
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            reason = "the CUDA driver library (" + libraryName() + ") cannot be loaded: " + LibraryLookup.oneLine(e);
            library = null;
        }
        UNAVAILABLE = reason;
        LIBRARY = library;
        HOT = chooseHotCalls();
    }

    private CudaDriver() {
    }

    /** {@code cuda}, which JNA resolves to {@code libcuda.so.1}; {@code JMSCCLPP_CUDA_LIBRARY} names another file. */
    private static String libraryName() {
        String name = System.getenv("JMSCCLPP_CUDA_LIBRARY");
        return name != null && !name.isBlank() ? name : "cuda";
    }

    /** The driver library JNA loaded, or null where it did not load. */
    static @Nullable NativeLibrary library() {
        return LIBRARY;
    }

    /**
     * FFM unless {@value CudaHotCalls#PROPERTY} (or {@value CudaHotCalls#ENV}) says JNA; JNA, with a warning,
     * when FFM was asked for and cannot be linked though the driver loaded (without a driver there is nothing to
     * warn about: no call may be made).
     */
    private static CudaHotCalls chooseHotCalls() {
        CudaHotCalls.Binding asked;
        try {
            asked = CudaHotCalls.requested(System.getProperty(CudaHotCalls.PROPERTY), System.getenv(CudaHotCalls.ENV));
        } catch (JmscclppException e) {
            // a class initialiser must not throw: the whole driver would be lost to a typo
            LOG.log(Level.WARNING, () -> e.getMessage() + "; using the default, FFM");
            asked = CudaHotCalls.Binding.FFM;
        }
        if (asked == CudaHotCalls.Binding.JNA || LIBRARY == null) {
            return CudaHotCalls.jna();
        }
        try {
            return CudaHotCalls.ffm();
        } catch (JmscclppException e) {
            LOG.log(Level.WARNING, () -> "the CUDA hot calls go through JNA: " + e.getMessage());
            return CudaHotCalls.jna();
        }
    }

    /**
     * The binding through which {@link #cuEventQuery}, {@link #cuCtxSetCurrent}, {@link #cuStreamWriteValue64_v2},
     * {@link #cuMemcpyDtoDAsync_v2} and {@link #cuLaunchKernel} go, chosen once as {@link CudaHotCalls#PROPERTY}
     * says.
     */
    public static CudaHotCalls hotCalls() {
        return HOT;
    }

    /** Empty when the driver library is registered; otherwise why it is not. */
    public static Optional<String> unavailableReason() {
        return Optional.ofNullable(UNAVAILABLE);
    }

    /**
     * Throws unless {@code result} is {@code CUDA_SUCCESS}: {@link ErrorCode#SYSTEM_ERROR} whose
     * message names {@code call} and the driver's error name and text, for example
     * {@code cuMemAlloc_v2(1073741824 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory}.
     */
    public static void check(int result, String call) {
        if (result != CUDA_SUCCESS) {
            throw error(result, call);
        }
    }

    /** The exception {@link #check} throws for {@code result}. */
    public static JmscclppException error(int result, String call) {
        return JmscclppException.builder(ErrorCode.SYSTEM_ERROR, call + " failed: " + describe(result))
                .phase("cuda").build();
    }

    /** {@code NAME (code): text} for a {@code CUresult}. */
    public static String describe(int result) {
        long[] text = new long[1];
        String name = cuGetErrorName(result, text) == CUDA_SUCCESS && text[0] != 0
                ? new Pointer(text[0]).getString(0) : "CUresult";
        String detail = cuGetErrorString(result, text) == CUDA_SUCCESS && text[0] != 0
                ? new Pointer(text[0]).getString(0) : "unknown error";
        return name + " (" + result + "): " + detail;
    }

    // ---------------------------------------------------------------------------------------------
    // errors, driver, devices, contexts

    static native int cuGetErrorName(int error, long[] str);

    static native int cuGetErrorString(int error, long[] str);

    public static native int cuInit(int flags);

    static native int cuDriverGetVersion(int[] version);

    public static native int cuDeviceGetCount(int[] count);

    public static native int cuDeviceGet(int[] device, int ordinal);

    public static native int cuDeviceGetAttribute(int[] value, int attribute, int device);

    public static native int cuDeviceGetName(byte[] name, int length, int device);

    public static native int cuDeviceTotalMem_v2(long[] bytes, int device);

    public static native int cuDevicePrimaryCtxRetain(long[] context, int device);

    public static native int cuDevicePrimaryCtxRelease_v2(int device);

    /** Through {@link #hotCalls()}. */
    public static int cuCtxSetCurrent(long context) {
        return HOT.cuCtxSetCurrent(context);
    }

    public static native int cuCtxSynchronize();

    // ---------------------------------------------------------------------------------------------
    // memory

    public static native int cuMemAlloc_v2(long[] devicePointer, long bytes);

    public static native int cuMemFree_v2(long devicePointer);

    public static native int cuMemsetD8Async(long devicePointer, byte value, long count, long stream);

    public static native int cuMemHostAlloc(long[] hostPointer, long bytes, int flags);

    public static native int cuMemFreeHost(long hostPointer);

    public static native int cuMemHostGetDevicePointer_v2(long[] devicePointer, long hostPointer, int flags);

    public static native int cuMemGetAddressRange_v2(long[] base, long[] size, long devicePointer);

    public static native int cuMemcpyAsync(long dst, long src, long bytes, long stream);

    /** Through {@link #hotCalls()}. */
    public static int cuMemcpyDtoDAsync_v2(long dst, long src, long bytes, long stream) {
        return HOT.cuMemcpyDtoDAsync_v2(dst, src, bytes, stream);
    }

    public static native int cuMemcpyHtoDAsync_v2(long dst, long src, long bytes, long stream);

    // ---------------------------------------------------------------------------------------------
    // CUDA IPC (legacy handles) and virtual memory management

    public static native int cuIpcGetMemHandle(byte[] handle, long devicePointer);

    public static native int cuIpcOpenMemHandle_v2(long[] devicePointer, IpcMemHandle handle, int flags);

    public static native int cuIpcCloseMemHandle(long devicePointer);

    public static native int cuMemGetAllocationGranularity(long[] granularity, byte[] prop, int option);

    public static native int cuMemCreate(long[] handle, long bytes, byte[] prop, long flags);

    public static native int cuMemRelease(long handle);

    public static native int cuMemAddressReserve(long[] pointer, long bytes, long alignment, long address, long flags);

    public static native int cuMemAddressFree(long pointer, long bytes);

    public static native int cuMemMap(long pointer, long bytes, long offset, long handle, long flags);

    public static native int cuMemUnmap(long pointer, long bytes);

    public static native int cuMemSetAccess(long pointer, long bytes, byte[] descriptors, long count);

    public static native int cuMemExportToShareableHandle(int[] shareableHandle, long handle, int handleType, long flags);

    /** {@code osHandle} is the file descriptor itself, passed where C passes {@code void*}. */
    public static native int cuMemImportFromShareableHandle(long[] handle, long osHandle, int handleType);

    // ---------------------------------------------------------------------------------------------
    // streams and events

    public static native int cuStreamCreate(long[] stream, int flags);

    public static native int cuStreamDestroy_v2(long stream);

    public static native int cuStreamQuery(long stream);

    /** Through {@link #hotCalls()}. */
    public static int cuStreamWriteValue64_v2(long stream, long address, long value, int flags) {
        return HOT.cuStreamWriteValue64_v2(stream, address, value, flags);
    }

    public static native int cuEventCreate(long[] event, int flags);

    public static native int cuEventDestroy_v2(long event);

    public static native int cuEventRecord(long event, long stream);

    /** Through {@link #hotCalls()}. */
    public static int cuEventQuery(long event) {
        return HOT.cuEventQuery(event);
    }

    public static native int cuStreamWaitEvent(long stream, long event, int flags);

    public static native int cuEventElapsedTime_v2(float[] milliseconds, long start, long end);

    // ---------------------------------------------------------------------------------------------
    // stream capture and graphs

    public static native int cuStreamBeginCapture_v2(long stream, int mode);

    public static native int cuStreamEndCapture(long stream, long[] graph);

    public static native int cuStreamIsCapturing(long stream, int[] status);

    public static native int cuGraphInstantiateWithFlags(long[] graphExec, long graph, long flags);

    public static native int cuGraphLaunch(long graphExec, long stream);

    public static native int cuGraphExecDestroy(long graphExec);

    public static native int cuGraphDestroy(long graph);

    // ---------------------------------------------------------------------------------------------
    // modules and launches

    public static native int cuModuleLoadData(long[] module, byte[] image);

    public static native int cuModuleUnload(long module);

    public static native int cuModuleGetFunction(long[] function, long module, String name);

    public static native int cuFuncSetAttribute(long function, int attribute, int value);

    /** Through {@link #hotCalls()}. */
    public static int cuLaunchKernel(long function, int gridX, int gridY, int gridZ, int blockX, int blockY,
                                     int blockZ, int sharedMemBytes, long stream, Pointer kernelParams,
                                     @Nullable Pointer extra) {
        return HOT.cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes, stream,
                kernelParams, extra);
    }

    /** {@code CUipcMemHandle}, 64 opaque bytes passed by value to {@code cuIpcOpenMemHandle}. */
    public static final class IpcMemHandle extends Structure implements Structure.ByValue {
        public byte[] reserved = new byte[IPC_HANDLE_BYTES];

        public IpcMemHandle() {
        }

        public IpcMemHandle(byte[] bytes) {
            System.arraycopy(bytes, 0, reserved, 0, IPC_HANDLE_BYTES);
        }

        @Override
        protected List<String> getFieldOrder() {
            return List.of("reserved");
        }
    }
}
