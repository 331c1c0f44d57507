package org.jmscclpp.cuda;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * Memory of the CUDA backend: one class for the six ways it comes to be, each released its own
 * way on {@link #close()}.
 */
final class CudaBuffer implements DeviceBuffer {

    enum Kind {
        /** {@code cuMemAlloc}; freed with {@code cuMemFree}. */
        DEVICE,
        /** {@code cuMemCreate} + reserve + map; unmapped, the range freed, the handle released. */
        VMM,
        /** {@code cuMemHostAlloc(PORTABLE | DEVICEMAP)}: host memory the GPU reaches; {@code cuMemFreeHost}. */
        PINNED_HOST,
        /** A peer's {@code cuMemAlloc} buffer opened with {@code cuIpcOpenMemHandle}; closed with {@code cuIpcCloseMemHandle}. */
        IPC_MAPPING,
        /** A peer's VMM allocation imported from its file descriptor and mapped; unmapped and released. */
        VMM_MAPPING,
        /** Memory of someone else's ({@link CudaBackend#wrap}): a PyTorch tensor's, JCuda's; nothing released. */
        EXTERNAL
    }

    private final CudaBackend backend;
    private final Kind kind;
    /** What {@link #address()} returns: the buffer's first byte. */
    private final long address;
    private final long size;
    /** What the release call takes: the allocation's base, the mapping's base or the reserved range. */
    private final long base;
    /** Bytes reserved and mapped at {@link #base} (VMM kinds), else the allocation's size. */
    private final long span;
    /** The {@code CUmemGenericAllocationHandle} of the VMM kinds, else 0. */
    private final long vmmHandle;
    private final @Nullable MemorySegment host;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** The exported file descriptor of a VMM buffer, made on first export, closed with the buffer. */
    private int exportedFd = -1;
    /** The grant of {@link #exportedFd} at the backend's descriptor server, made on first export, withdrawn on close. */
    private DescriptorServer.@Nullable Grant grant;

    CudaBuffer(CudaBackend backend, Kind kind, long address, long size, long base, long span, long vmmHandle) {
        this.backend = backend;
        this.kind = kind;
        this.address = address;
        this.size = size;
        this.base = base;
        this.span = span;
        this.vmmHandle = vmmHandle;
        this.host = kind == Kind.PINNED_HOST ? MemorySegment.ofAddress(address).reinterpret(size) : null;
        backend.retain();
    }

    Kind kind() {
        return kind;
    }

    long base() {
        return base;
    }

    long span() {
        return span;
    }

    long vmmHandle() {
        return vmmHandle;
    }

    CudaBackend backend() {
        return backend;
    }

    /** The file descriptor a VMM buffer is exported as, made once and kept until close. */
    synchronized int exportedFd() {
        if (exportedFd < 0) {
            exportedFd = backend.exportFd(this);
        }
        return exportedFd;
    }

    /** The grant under which peers take {@link #exportedFd()} from the backend's descriptor server, made once. */
    synchronized DescriptorServer.Grant grant() {
        if (isClosed()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the buffer is closed: " + this)
                    .phase("exportMemory").build();
        }
        if (grant == null) {
            grant = backend.grantDescriptor(exportedFd());
        }
        return grant;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public Device device() {
        return backend.device();
    }

    @Override
    public boolean hostAccessible() {
        return host != null;
    }

    @Override
    public MemorySegment hostSegment() {
        if (host == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "GPU memory is not host-accessible: " + this)
                    .phase("hostSegment").build();
        }
        if (closed.get()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the buffer is closed: " + this)
                    .phase("hostSegment").build();
        }
        return host;
    }

    @Override
    public boolean isClosed() {
        return closed.get();
    }

    /** Releases the memory as its kind requires; errors of the driver at this point are logged by the backend. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            int fd;
            DescriptorServer.Grant g;
            synchronized (this) {
                fd = exportedFd;
                exportedFd = -1;
                g = grant;
                grant = null;
            }
            if (g != null) {
                g.close();   // before the descriptor closes: the server never sends a closed (or reused) number
            }
            backend.release(this, fd);
        }
    }

    @Override
    public String toString() {
        return "CudaBuffer[" + kind + ", " + size + " bytes at 0x" + Long.toHexString(address) + ", GPU "
                + backend.device().id() + (closed.get() ? ", closed" : "") + "]";
    }
}
