package org.jmscclpp.cuda;

import static org.jmscclpp.nativebridge.CudaDriver.check;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.CudaDriver;

/**
 * The primary context of one GPU, retained for as long as this object is open. A CUDA context is
 * current per OS thread, and a virtual thread may move to another carrier at any park, so every
 * sequence of driver calls starts with {@link #makeCurrent()} and contains no park: the calls
 * then run on the carrier the context was just made current on.
 *
 * <p>Also holds what the device says about itself (compute capability, multiprocessors, VMM and
 * stream memory-operation support), read once.
 *
 * <p>Applications get it from {@link CudaBackend#context()}, to call the driver, or a library that
 * picks its device up from the current context, beside the backend; the kernels
 * ({@code org.jmscclpp.cuda.kernel}) load their modules into it.
 */
public final class CudaContext implements AutoCloseable {

    private static final Object INIT_LOCK = new Object();
    private static boolean initialised;

    private final int ordinal;
    private final long handle;
    private final String name;
    private final int major;
    private final int minor;
    private final int multiprocessors;
    private final long totalMemory;
    private final boolean vmm;
    private final boolean posixFdHandles;
    private final boolean streamMemOps64;
    private final AtomicBoolean closed = new AtomicBoolean();

    private CudaContext(int ordinal, long handle) {
        this.ordinal = ordinal;
        this.handle = handle;
        byte[] raw = new byte[256];
        check(CudaDriver.cuDeviceGetName(raw, raw.length, ordinal), "cuDeviceGetName(" + ordinal + ")");
        int end = 0;
        while (end < raw.length && raw[end] != 0) {
            end++;
        }
        this.name = new String(raw, 0, end, StandardCharsets.UTF_8);
        this.major = attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        this.minor = attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        this.multiprocessors = attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        this.vmm = attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) != 0;
        this.posixFdHandles = attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) != 0;
        this.streamMemOps64 = attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) != 0;
        long[] bytes = new long[1];
        check(CudaDriver.cuDeviceTotalMem_v2(bytes, ordinal), "cuDeviceTotalMem_v2(" + ordinal + ")");
        this.totalMemory = bytes[0];
    }

    /** Initialises the driver once per process (about half a second on the GPU hosts). */
    static void initDriver() {
        CudaDriver.unavailableReason().ifPresent(reason -> {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, reason).phase("cuda").build();
        });
        synchronized (INIT_LOCK) {
            if (!initialised) {
                check(CudaDriver.cuInit(0), "cuInit(0)");
                initialised = true;
            }
        }
    }

    /** GPUs the driver sees. */
    static int deviceCount() {
        initDriver();
        int[] count = new int[1];
        check(CudaDriver.cuDeviceGetCount(count), "cuDeviceGetCount");
        return count[0];
    }

    /**
     * Retains the primary context of GPU {@code ordinal}.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for an ordinal the driver does not
     *                           have; {@link ErrorCode#SYSTEM_ERROR} when the driver fails
     */
    static CudaContext open(int ordinal) {
        int count = deviceCount();
        if (ordinal < 0 || ordinal >= count) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "GPU " + ordinal + " does not exist: the driver sees "
                    + count + " GPU(s)").phase("cuda").build();
        }
        int[] device = new int[1];
        check(CudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
        long[] context = new long[1];
        check(CudaDriver.cuDevicePrimaryCtxRetain(context, device[0]), "cuDevicePrimaryCtxRetain(" + ordinal + ")");
        try {
            CudaContext c = new CudaContext(device[0], context[0]);
            c.makeCurrent();
            return c;
        } catch (RuntimeException e) {
            CudaDriver.cuDevicePrimaryCtxRelease_v2(device[0]);
            throw e;
        }
    }

    /** Makes this context current on the calling OS thread; call before every sequence of driver calls. */
    public void makeCurrent() {
        if (closed.get()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the context of GPU " + ordinal + " is closed")
                    .phase("cuda").build();
        }
        check(CudaDriver.cuCtxSetCurrent(handle), "cuCtxSetCurrent(GPU " + ordinal + ")");
    }

    int ordinal() {
        return ordinal;
    }

    /** Whether {@link #close()} released the context (objects made in it went with it). */
    boolean isClosed() {
        return closed.get();
    }

    Device device() {
        return Device.gpu(ordinal);
    }

    String name() {
        return name;
    }

    /** {@code sm_90} and the like: the architecture NVRTC compiles for. */
    String architecture() {
        return "sm_" + major + minor;
    }

    int computeCapabilityMajor() {
        return major;
    }

    int computeCapabilityMinor() {
        return minor;
    }

    int multiprocessors() {
        return multiprocessors;
    }

    long totalMemory() {
        return totalMemory;
    }

    boolean supportsVmm() {
        return vmm && posixFdHandles;
    }

    boolean supportsStreamMemOps64() {
        return streamMemOps64;
    }

    private int attribute(int attribute) {
        int[] value = new int[1];
        check(CudaDriver.cuDeviceGetAttribute(value, attribute, ordinal),
                "cuDeviceGetAttribute(" + attribute + ", GPU " + ordinal + ")");
        return value[0];
    }

    /** Releases the primary context. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            CudaDriver.cuDevicePrimaryCtxRelease_v2(ordinal);
        }
    }

    @Override
    public String toString() {
        return "GPU " + ordinal + " (" + name + ", " + architecture() + ", " + multiprocessors + " SMs)";
    }
}
