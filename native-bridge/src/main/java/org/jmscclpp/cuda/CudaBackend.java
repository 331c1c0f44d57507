package org.jmscclpp.cuda;

import static org.jmscclpp.nativebridge.CudaDriver.check;

import com.sun.jna.Native;
import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.DeviceBufferSlice;
import org.jmscclpp.core.DeviceType;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.HostIdentity;
import org.jmscclpp.core.spi.IpcTransport;
import org.jmscclpp.core.spi.TransportProvider;
import org.jmscclpp.cuda.kernel.CudaModule;
import org.jmscclpp.cuda.kernel.KernelCompiler;
import org.jmscclpp.nativebridge.CudaDriver;
import org.jmscclpp.nativebridge.LibC;
import org.jmscclpp.nativebridge.Nvrtc;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Backend} of GPU ranks: one GPU's memory through the CUDA driver, reached by JNA.
 *
 * <h2>Memory</h2>
 * <ul>
 *   <li>{@link #allocate} gives device memory from {@code cuMemAlloc}, or from the virtual memory
 *       management API ({@code cuMemCreate} with POSIX file-descriptor handles, reserved, mapped
 *       and made read-write for this GPU) when the backend was opened with
 *       {@link Allocation#VMM} ({@code JMSCCLPP_CUDA_ALLOC=vmm}); {@link #allocate(long, Allocation)}
 *       picks per buffer. Both are zeroed.</li>
 *   <li>{@link #allocateHostVisible} gives pinned host memory mapped for the device
 *       ({@code cuMemHostAlloc(PORTABLE | DEVICEMAP)}): with unified addressing the host and device
 *       addresses are the same, so fifos, flushed positions and other words that both sides touch
 *       live there and Java reads them with {@code VarHandle}s, never through JNA.</li>
 *   <li>{@code CUDA_IPC} export and import ({@link CudaIpcHandle}): {@code cuIpcGetMemHandle} /
 *       {@code cuIpcOpenMemHandle} for {@code cuMemAlloc} buffers; for VMM buffers
 *       {@code cuMemExportToShareableHandle} to a file descriptor that the peer takes from this
 *       backend's {@link DescriptorServer} (an abstract Unix socket, {@code SCM_RIGHTS}, the
 *       buffer's random token as the access check: no ptrace right needed, so it works between
 *       sibling processes under {@code ptrace_scope=1}, between different users and in
 *       containers), falling back to {@code pidfd_getfd} (Linux 5.6+, the importer may trace the
 *       exporter) only where that server cannot be reached; then import, reserve, map and set
 *       access. Closing the imported buffer undoes it. The server starts with the first VMM
 *       export and stops when the backend closes.</li>
 * </ul>
 *
 * <h2>Threads</h2>
 * Every method makes the GPU's primary context current on the calling OS thread before its
 * driver calls, with no park in between. Copies ({@link #copy}, {@link #copyFromHost},
 * {@link #copyToHost}) are enqueued on the backend's stream and waited for by polling an event,
 * never by a blocking driver call. Thread-safe.
 */
public final class CudaBackend implements Backend {

    /** How device memory is allocated. */
    public enum Allocation {
        /** {@code cuMemAlloc}; shared over CUDA IPC by {@code cuIpcGetMemHandle}. */
        MEM_ALLOC,
        /** {@code cuMemCreate} and a mapping; shared by a POSIX file descriptor. */
        VMM
    }

    /** Environment variable choosing the GPU of {@link #open()}. */
    public static final String DEVICE_ENV = "JMSCCLPP_CUDA_DEVICE";
    /** Environment variable choosing {@link Allocation} for {@link #open()}: {@code malloc} or {@code vmm}. */
    public static final String ALLOCATION_ENV = "JMSCCLPP_CUDA_ALLOC";
    /**
     * Each launcher's local rank and rank variables, in {@code RankEnvironment}'s order: under mpirun, torchrun or
     * srun the rank's GPU is its local rank there, as under {@code jmscclpp run}.
     */
    private static final String[][] LAUNCHER_RANKS = {
            {"JMSCCLPP_LOCAL_RANK", "JMSCCLPP_RANK"},
            {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK"},
            {"LOCAL_RANK", "RANK"},
            {"SLURM_LOCALID", "SLURM_PROCID"}};

    private static final System.Logger LOG = Log.logger(CudaBackend.class, Subsystem.ALLOC);
    private static final TransportFlags IPC = TransportFlags.of(Transport.CUDA_IPC);
    private static final Duration COPY_TIMEOUT = Bootstrap.DEFAULT_TIMEOUT;
    /** How long an import waits for the exporter's descriptor server. */
    static final Duration DESCRIPTOR_TIMEOUT = Duration.ofSeconds(10);

    private final CudaContext context;
    private final Allocation defaultAllocation;
    private final CudaStream copies;
    /** Peers' cuMemAlloc allocations opened here, by handle: a handle may be opened once per context. */
    private final Map<String, IpcOpening> openings = new HashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Guards {@link #descriptors}. */
    private final Object descriptorLock = new Object();
    /** Hands this process's VMM buffers' descriptors to peers: started by the first export, stopped by {@link #close()}. */
    private @Nullable DescriptorServer descriptors;
    /** Buffers and connections alive, plus one for the backend itself while open: the context is released at zero. */
    private final java.util.concurrent.atomic.AtomicInteger users = new java.util.concurrent.atomic.AtomicInteger(1);

    private CudaBackend(CudaContext context, Allocation defaultAllocation) {
        this.context = context;
        this.defaultAllocation = defaultAllocation;
        this.copies = new CudaStream(context, "copies of GPU " + context.ordinal());
    }

    /**
     * The backend of the GPU {@value #DEVICE_ENV} names; else of the rank's local GPU: the local rank of the
     * launcher whose variables name the rank, in {@code RankEnvironment}'s order ({@code JMSCCLPP_LOCAL_RANK},
     * {@code OMPI_COMM_WORLD_LOCAL_RANK}, torchrun's {@code LOCAL_RANK}, {@code SLURM_LOCALID}; the rank where
     * that launcher gives no local rank), modulo the GPUs present; else GPU 0.
     * Allocation as {@value #ALLOCATION_ENV} says, {@code cuMemAlloc} by default.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when the driver is missing or fails;
     *                           {@link ErrorCode#INVALID_USAGE} for a malformed variable
     */
    public static CudaBackend open() {
        int count = CudaContext.deviceCount();
        if (count == 0) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the CUDA driver sees no GPU").phase("cuda").build();
        }
        return open(chooseDevice(System.getenv(), count), allocationFrom(System.getenv(ALLOCATION_ENV)));
    }

    /** The backend of GPU {@code ordinal}, allocating with {@code allocation}. */
    public static CudaBackend open(int ordinal, Allocation allocation) {
        CudaContext context = CudaContext.open(ordinal);
        try {
            return new CudaBackend(context, allocation);
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    /**
     * Why this process could not run kernels on {@code gpus} GPUs, or empty when it can: the CUDA
     * driver library does not load, {@code cuInit} fails, the driver sees fewer GPUs, or NVRTC (which
     * compiles the kernels) does not load. Initialises the driver (about half a second the first
     * time) but creates no context.
     */
    public static Optional<String> unavailableReason(int gpus) {
        int count;
        try {
            count = CudaContext.deviceCount();
        } catch (JmscclppException e) {
            return Optional.of(e.detail());
        }
        if (count < gpus) {
            return Optional.of("the CUDA driver sees " + count + " GPU(s), " + gpus + " needed");
        }
        return Nvrtc.unavailableReason().map(reason -> "NVRTC cannot be loaded: " + reason);
    }

    static int chooseDevice(Map<String, String> env, int count) {
        String explicit = env.get(DEVICE_ENV);
        if (explicit != null && !explicit.isBlank()) {
            return parse(DEVICE_ENV, explicit);
        }
        // the first launcher with variables here started this process (one started under another, such as
        // torchrun under srun, leaves the outer one's variables to the ranks it starts)
        for (String[] names : LAUNCHER_RANKS) {
            if (present(env, names[0]) || present(env, names[1])) {
                String name = present(env, names[0]) ? names[0] : names[1];
                return Math.floorMod(parse(name, env.get(name)), count);
            }
        }
        return 0;
    }

    private static boolean present(Map<String, String> env, String name) {
        String value = env.get(name);
        return value != null && !value.isBlank();
    }

    static Allocation allocationFrom(String value) {
        if (value == null || value.isBlank() || value.equalsIgnoreCase("malloc")) {
            return Allocation.MEM_ALLOC;
        }
        if (value.equalsIgnoreCase("vmm")) {
            return Allocation.VMM;
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, ALLOCATION_ENV + " is 'malloc' or 'vmm', not '"
                + value + "'").phase("cuda").build();
    }

    private static int parse(String name, String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, name + " is not a number: '" + value + "'")
                    .phase("cuda").build();
        }
    }

    @Override
    public String name() {
        return "cuda";
    }

    @Override
    public Device device() {
        return context.device();
    }

    /** The GPU's architecture for NVRTC, such as {@code sm_90}. */
    public String architecture() {
        return context.architecture();
    }

    /** Multiprocessors of the GPU. */
    public int multiprocessors() {
        return context.multiprocessors();
    }

    /** How {@link #allocate(long)} allocates. */
    public Allocation defaultAllocation() {
        return defaultAllocation;
    }

    /**
     * The GPU's primary context, for code that calls the driver, or a library that picks its device
     * up from the current context (NCCL, say), beside this backend: {@link CudaContext#makeCurrent()}
     * before each sequence of such calls, and {@link #retain()} for as long as it uses the context.
     */
    public CudaContext context() {
        return context;
    }

    /**
     * A new non-blocking stream on this GPU, for work enqueued without waiting on each piece
     * (kernel launches, NCCL calls): {@link CudaStream#launch}, then {@link CudaStream#synchronize}.
     * The caller closes it; the GPU's context stays retained until it is closed.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the backend is closed
     */
    public CudaStream createStream(String name) {
        checkOpen("create stream");
        retain();
        try {
            return new CudaStream(context, name, this::unretain);
        } catch (RuntimeException e) {
            unretain();
            throw e;
        }
    }

    /**
     * A stream someone else created on this GPU's context (PyTorch's {@code torch.cuda.current_stream().cuda_stream},
     * a JCuda or JavaCPP {@code CUstream}), so that work of this project can be enqueued on it in
     * order with the caller's own. {@link CudaStream#close()} of the returned stream destroys
     * nothing: the stream stays its creator's, who must keep it alive while this project uses it.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the backend is closed or the
     *                           handle is 0 (the legacy default stream, which this project does not use)
     */
    public CudaStream wrapStream(long handle, String name) {
        checkOpen("wrap stream");
        if (handle == 0) {
            throw invalid("wrap stream", "the handle is 0, the legacy default stream: pass a stream created with"
                    + " cuStreamCreate or cudaStreamCreate");
        }
        retain();
        return new CudaStream(context, handle, name, this::unretain);
    }

    /**
     * GPU memory someone else allocated on this backend's GPU (a PyTorch tensor's {@code data_ptr()},
     * DJL's, JCuda's or JavaCPP's device pointer), as a buffer that copies, communicators and
     * collectives accept: {@code bytes} from {@code pointer}. Closing it frees nothing; the memory
     * stays its owner's, who must keep it alive while this project uses it. It can be registered
     * for CUDA IPC when it comes from {@code cuMemAlloc}/{@code cudaMalloc} (the whole allocation
     * around it is what a peer maps); memory of virtual-memory allocators cannot.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for a size below 1, or a range that
     *                           is not inside one allocation of this GPU's context
     */
    public DeviceBuffer wrap(long pointer, long bytes) {
        String phase = "wrap";
        checkOpen(phase);
        checkSize(bytes, phase);
        context.makeCurrent();
        long[] base = new long[1];
        long[] span = new long[1];
        int result = CudaDriver.cuMemGetAddressRange_v2(base, span, pointer);
        if (result != CudaDriver.CUDA_SUCCESS) {
            throw invalid(phase, "0x" + Long.toHexString(pointer) + " is not GPU memory of this context ("
                    + CudaDriver.describe(result) + ")");
        }
        if (pointer - base[0] > span[0] - bytes) {
            throw invalid(phase, bytes + " bytes at 0x" + Long.toHexString(pointer) + " run past the end of its"
                    + " allocation (" + span[0] + " bytes at 0x" + Long.toHexString(base[0]) + ")");
        }
        return new CudaBuffer(this, CudaBuffer.Kind.EXTERNAL, pointer, bytes, base[0], span[0], 0);
    }

    /**
     * Loads a cubin ({@link KernelCompiler}'s output) into this GPU's context.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when the driver rejects the image
     */
    public CudaModule loadModule(byte[] cubin) {
        checkOpen("loadModule");
        return CudaModule.load(context, cubin);
    }

    // ---------------------------------------------------------------------------------------------
    // allocation

    @Override
    public DeviceBuffer allocate(long size) {
        return allocate(size, defaultAllocation);
    }

    /**
     * {@code size} zeroed bytes of this GPU's memory, allocated as {@code allocation} says.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for a size below 1, or VMM on a GPU
     *                           without it; {@link ErrorCode#SYSTEM_ERROR} when the driver fails
     *                           (out of memory)
     */
    public DeviceBuffer allocate(long size, Allocation allocation) {
        String phase = "allocate";
        checkOpen(phase);
        checkSize(size, phase);
        CudaBuffer buffer = allocation == Allocation.VMM ? allocateVmm(size) : allocateDevice(size);
        try {
            context.makeCurrent();
            check(CudaDriver.cuMemsetD8Async(buffer.address(), (byte) 0, size, copies.handle()),
                    "cuMemsetD8Async(" + size + " bytes)");
            copies.synchronize(COPY_TIMEOUT, "zeroing " + size + " bytes");
            return buffer;
        } catch (RuntimeException e) {
            buffer.close();
            throw e;
        }
    }

    private CudaBuffer allocateDevice(long size) {
        context.makeCurrent();
        long[] pointer = new long[1];
        check(CudaDriver.cuMemAlloc_v2(pointer, size), "cuMemAlloc_v2(" + size + " bytes)");
        return new CudaBuffer(this, CudaBuffer.Kind.DEVICE, pointer[0], size, pointer[0], size, 0);
    }

    private CudaBuffer allocateVmm(long size) {
        if (!context.supportsVmm()) {
            throw invalid("allocate", context + " has no virtual memory management with POSIX file-descriptor handles");
        }
        byte[] prop = allocationProp();
        context.makeCurrent();
        long[] granularity = new long[1];
        check(CudaDriver.cuMemGetAllocationGranularity(granularity, prop, CudaDriver.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                "cuMemGetAllocationGranularity");
        long span = roundUp(size, granularity[0]);
        long[] handle = new long[1];
        check(CudaDriver.cuMemCreate(handle, span, prop, 0), "cuMemCreate(" + span + " bytes)");
        try {
            long pointer = mapVmm(handle[0], span, granularity[0]);
            return new CudaBuffer(this, CudaBuffer.Kind.VMM, pointer, size, pointer, span, handle[0]);
        } catch (RuntimeException e) {
            CudaDriver.cuMemRelease(handle[0]);
            throw e;
        }
    }

    /** Reserves a range, maps the allocation there and makes it read-write for this GPU; returns the range. */
    private long mapVmm(long handle, long span, long alignment) {
        context.makeCurrent();
        long[] pointer = new long[1];
        check(CudaDriver.cuMemAddressReserve(pointer, span, alignment, 0, 0), "cuMemAddressReserve(" + span + " bytes)");
        int result = CudaDriver.cuMemMap(pointer[0], span, 0, handle, 0);
        if (result != CudaDriver.CUDA_SUCCESS) {
            CudaDriver.cuMemAddressFree(pointer[0], span);
            throw CudaDriver.error(result, "cuMemMap(" + span + " bytes)");
        }
        ByteBuffer access = ByteBuffer.allocate(CudaDriver.MEM_ACCESS_DESC_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        access.putInt(CudaDriver.CU_MEM_LOCATION_TYPE_DEVICE).putInt(context.ordinal())
                .putInt(CudaDriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        result = CudaDriver.cuMemSetAccess(pointer[0], span, access.array(), 1);
        if (result != CudaDriver.CUDA_SUCCESS) {
            CudaDriver.cuMemUnmap(pointer[0], span);
            CudaDriver.cuMemAddressFree(pointer[0], span);
            throw CudaDriver.error(result, "cuMemSetAccess(" + span + " bytes, GPU " + context.ordinal() + ")");
        }
        return pointer[0];
    }

    /** {@code CUmemAllocationProp}: pinned device memory of this GPU, exportable as a POSIX file descriptor. */
    private byte[] allocationProp() {
        ByteBuffer prop = ByteBuffer.allocate(CudaDriver.MEM_ALLOCATION_PROP_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        prop.putInt(CudaDriver.CU_MEM_ALLOCATION_TYPE_PINNED).putInt(CudaDriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
                .putInt(CudaDriver.CU_MEM_LOCATION_TYPE_DEVICE).putInt(context.ordinal());
        return prop.array();   // win32 metadata and allocation flags stay zero
    }

    /**
     * Pinned host memory mapped for this GPU, zeroed; {@link DeviceBuffer#hostSegment()} reads it and
     * {@link DeviceBuffer#address()} is also its device address.
     */
    @Override
    public DeviceBuffer allocateHostVisible(long size) {
        String phase = "allocateHostVisible";
        checkOpen(phase);
        checkSize(size, phase);
        context.makeCurrent();
        long[] host = new long[1];
        check(CudaDriver.cuMemHostAlloc(host, size, CudaDriver.CU_MEMHOSTALLOC_PORTABLE | CudaDriver.CU_MEMHOSTALLOC_DEVICEMAP),
                "cuMemHostAlloc(" + size + " bytes)");
        long[] device = new long[1];
        int result = CudaDriver.cuMemHostGetDevicePointer_v2(device, host[0], 0);
        if (result != CudaDriver.CUDA_SUCCESS || device[0] != host[0]) {
            CudaDriver.cuMemFreeHost(host[0]);
            if (result != CudaDriver.CUDA_SUCCESS) {
                throw CudaDriver.error(result, "cuMemHostGetDevicePointer_v2");
            }
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "pinned memory has device address 0x"
                    + Long.toHexString(device[0]) + " and host address 0x" + Long.toHexString(host[0])
                    + ": this backend needs unified addressing").phase(phase).build();
        }
        CudaBuffer buffer = new CudaBuffer(this, CudaBuffer.Kind.PINNED_HOST, host[0], size, host[0], size, 0);
        buffer.hostSegment().fill((byte) 0);
        return buffer;
    }

    // ---------------------------------------------------------------------------------------------
    // copies

    @Override
    public void copy(DeviceBuffer dst, long dstOffset, DeviceBuffer src, long srcOffset, long size) {
        String phase = "copy";
        checkRange(dst, dstOffset, size, phase, "destination");
        checkRange(src, srcOffset, size, phase, "source");
        if (size == 0) {
            return;
        }
        copyAndWait(dst.address() + dstOffset, src.address() + srcOffset, size, "a copy of " + size + " bytes");
    }

    @Override
    public void copyFromHost(DeviceBuffer dst, long dstOffset, MemorySegment src) {
        long size = src.byteSize();
        checkRange(dst, dstOffset, size, "copyFromHost", "destination");
        if (size == 0) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment from = src.isNative() ? src : arena.allocate(size, 16).copyFrom(src);
            copyAndWait(dst.address() + dstOffset, from.address(), size, "a copy of " + size + " bytes to the GPU");
        }
    }

    @Override
    public void copyToHost(MemorySegment dst, DeviceBuffer src, long srcOffset) {
        long size = dst.byteSize();
        checkRange(src, srcOffset, size, "copyToHost", "source");
        if (size == 0) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment to = dst.isNative() ? dst : arena.allocate(size, 16);
            copyAndWait(to.address(), src.address() + srcOffset, size, "a copy of " + size + " bytes from the GPU");
            if (to != dst) {
                dst.copyFrom(to);
            }
        }
    }

    /** Enqueues {@code cuMemcpyAsync} (unified addresses: any direction) on the copy stream and waits for it. */
    private void copyAndWait(long dst, long src, long size, String what) {
        context.makeCurrent();
        check(CudaDriver.cuMemcpyAsync(dst, src, size, copies.handle()), "cuMemcpyAsync(" + what + ")");
        copies.synchronize(COPY_TIMEOUT, what);
    }

    // ---------------------------------------------------------------------------------------------
    // CUDA IPC

    @Override
    public TransportFlags ipcTransports() {
        return IPC;
    }

    /**
     * The {@link CudaIpcHandle} of a GPU buffer this backend allocated.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for another transport, another
     *                           backend's buffer, a closed buffer, pinned host memory or a peer's
     *                           memory mapped here
     */
    @Override
    public byte[] exportMemory(DeviceBuffer buffer, Transport transport) {
        String phase = "exportMemory";
        if (transport != Transport.CUDA_IPC) {
            throw invalid(phase, "the CUDA backend exports memory over CUDA_IPC only, not " + transport);
        }
        CudaBuffer b = ours(buffer, phase);
        switch (b.kind()) {
            case DEVICE, EXTERNAL -> {
                context.makeCurrent();
                long[] base = new long[1];
                long[] span = new long[1];
                check(CudaDriver.cuMemGetAddressRange_v2(base, span, b.address()), "cuMemGetAddressRange_v2");
                byte[] handle = new byte[CudaDriver.IPC_HANDLE_BYTES];
                check(CudaDriver.cuIpcGetMemHandle(handle, base[0]), "cuIpcGetMemHandle");
                return CudaIpcHandle.runtime(b.address() - base[0], span[0], handle).encode();
            }
            case VMM -> {
                DescriptorServer.Grant grant = b.grant();
                return CudaIpcHandle.posixFd(b.span(), (int) ProcessHandle.current().pid(), b.exportedFd(),
                        grant.token(), grant.serverName()).encode();
            }
            default -> throw invalid(phase, "only GPU memory this process allocated is exported over CUDA_IPC, not "
                    + b);
        }
    }

    /** Called once per VMM buffer by {@link CudaBuffer#exportedFd()}. */
    int exportFd(CudaBuffer buffer) {
        context.makeCurrent();
        int[] fd = new int[1];
        check(CudaDriver.cuMemExportToShareableHandle(fd, buffer.vmmHandle(),
                CudaDriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "cuMemExportToShareableHandle");
        return fd[0];
    }

    /** Files {@code fd} at this backend's descriptor server, starting the server on first use. */
    DescriptorServer.Grant grantDescriptor(int fd) {
        synchronized (descriptorLock) {
            checkOpen("exportMemory");
            if (descriptors == null) {
                descriptors = DescriptorServer.start("GPU " + context.ordinal() + " of pid " + ProcessHandle.current().pid());
            }
            return descriptors.grant(fd);
        }
    }

    /** The descriptor server, or null before the first VMM export; for tests. */
    @Nullable DescriptorServer descriptorServer() {
        synchronized (descriptorLock) {
            return descriptors;
        }
    }

    /**
     * Maps a peer's GPU buffer: opens a runtime handle, or takes the peer's file descriptor (from
     * its descriptor server, else by {@code pidfd_getfd}) and maps the allocation it names.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for another transport, a malformed
     *                           handle, a size beyond the exported allocation, or a token the
     *                           exporter's descriptor server refuses (the buffer was closed);
     *                           {@link ErrorCode#TIMEOUT} when that server does not answer within
     *                           {@link #DESCRIPTOR_TIMEOUT}; {@link ErrorCode#SYSTEM_ERROR} when the
     *                           driver or the system refuses (the server unreachable and
     *                           {@code pidfd_getfd} refused: the message says what each said)
     */
    @Override
    public DeviceBuffer importMemory(Transport transport, byte[] handle, long size) {
        String phase = "importMemory";
        checkOpen(phase);
        if (transport != Transport.CUDA_IPC) {
            throw invalid(phase, "the CUDA backend imports memory over CUDA_IPC only, not " + transport);
        }
        CudaIpcHandle h = CudaIpcHandle.decode(handle);
        if (size < 1 || size > h.allocationSize() - h.offset()) {
            throw invalid(phase, "cannot map " + size + " bytes at offset " + h.offset() + " of an allocation of "
                    + h.allocationSize() + " bytes");
        }
        return h.kind() == CudaIpcHandle.Kind.RUNTIME ? openRuntime(h, size) : importVmm(h, size);
    }

    private CudaBuffer openRuntime(CudaIpcHandle h, long size) {
        String key = HexFormat.of().formatHex(h.ipcHandle());
        long base;
        synchronized (openings) {
            IpcOpening opening = openings.get(key);
            if (opening == null) {
                context.makeCurrent();
                long[] pointer = new long[1];
                check(CudaDriver.cuIpcOpenMemHandle_v2(pointer, new CudaDriver.IpcMemHandle(h.ipcHandle()),
                        CudaDriver.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle_v2");
                long[] rangeBase = new long[1];
                long[] span = new long[1];
                int result = CudaDriver.cuMemGetAddressRange_v2(rangeBase, span, pointer[0]);
                if (result != CudaDriver.CUDA_SUCCESS || span[0] < h.offset() + size) {
                    CudaDriver.cuIpcCloseMemHandle(pointer[0]);
                    if (result != CudaDriver.CUDA_SUCCESS) {
                        throw CudaDriver.error(result, "cuMemGetAddressRange_v2 of an opened IPC handle");
                    }
                    throw invalid("importMemory", "the peer's allocation has " + span[0] + " bytes, the handle asks for "
                            + size + " at offset " + h.offset());
                }
                opening = new IpcOpening(pointer[0]);
                openings.put(key, opening);
            }
            opening.users++;
            base = opening.base;
        }
        return new CudaBuffer(this, CudaBuffer.Kind.IPC_MAPPING, base + h.offset(), size, base, h.allocationSize(), 0);
    }

    private CudaBuffer importVmm(CudaIpcHandle h, long size) {
        int fd = takeDescriptor(h);
        long[] handle = new long[1];
        try {
            context.makeCurrent();
            check(CudaDriver.cuMemImportFromShareableHandle(handle, fd, CudaDriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                    "cuMemImportFromShareableHandle(descriptor " + h.fd() + " of pid " + h.pid() + ")");
        } finally {
            LibC.INSTANCE.close(fd);
        }
        try {
            long[] granularity = new long[1];
            check(CudaDriver.cuMemGetAllocationGranularity(granularity, allocationProp(),
                    CudaDriver.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "cuMemGetAllocationGranularity");
            long pointer = mapVmm(handle[0], h.allocationSize(), granularity[0]);
            return new CudaBuffer(this, CudaBuffer.Kind.VMM_MAPPING, pointer, size, pointer, h.allocationSize(), handle[0]);
        } catch (RuntimeException e) {
            CudaDriver.cuMemRelease(handle[0]);
            throw e;
        }
    }

    /**
     * A copy in this process of the exporter's descriptor: from its descriptor server over
     * {@code SCM_RIGHTS}; where nothing listens there (another network namespace, the exporter's
     * backend closed), by {@code pidfd_getfd}. A refusal or a timeout of the server is final.
     */
    static int takeDescriptor(CudaIpcHandle h) {
        try {
            return DescriptorServer.take(h.serverName(), h.token(), DESCRIPTOR_TIMEOUT, "pid " + h.pid());
        } catch (DescriptorServer.Unreachable unreachable) {
            try {
                int fd = takeDescriptorByPidfd(h.pid(), h.fd());
                LOG.log(Level.DEBUG, "the descriptor server @" + h.serverName() + " of pid " + h.pid() + " is unreachable ("
                        + unreachable.getMessage() + "); took descriptor " + h.fd() + " by pidfd_getfd");
                return fd;
            } catch (JmscclppException pidfd) {
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot take the buffer's descriptor from pid "
                        + h.pid() + " either way: SCM_RIGHTS from its descriptor server @" + h.serverName() + ": "
                        + unreachable.getMessage() + "; then the fallback " + pidfd.detail()).phase("importMemory")
                        .cause(pidfd).build();
            }
        }
    }

    /** A copy in this process of descriptor {@code fd} of process {@code pid}, by pidfd_open + pidfd_getfd. */
    static int takeDescriptorByPidfd(int pid, int fd) {
        long pidfd = LibC.INSTANCE.syscall(LibC.SYS_PIDFD_OPEN, (long) pid, 0L);
        if (pidfd < 0) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "pidfd_open(" + pid + ") failed with "
                    + LibC.describe(Native.getLastError()) + ": the exporting process is gone, or in another pid namespace")
                    .phase("importMemory").build();
        }
        try {
            long copy = LibC.INSTANCE.syscall(LibC.SYS_PIDFD_GETFD, pidfd, (long) fd, 0L);
            if (copy < 0) {
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "pidfd_getfd(pid " + pid + ", descriptor " + fd
                        + ") failed with " + LibC.describe(Native.getLastError()) + ": taking a peer's descriptor needs"
                        + " the right to trace it (same user and ptrace scope 0, or CAP_SYS_PTRACE)").phase("importMemory")
                        .build();
            }
            return (int) copy;
        } finally {
            LibC.INSTANCE.close((int) pidfd);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // connections

    private final TransportProvider ipcTransport = new IpcTransport(this, this::createEndpoint, this::connect);

    /** {@code CUDA_IPC} connections, through the same SPI as every other transport's. */
    @Override
    public TransportProvider ipcTransport() {
        return ipcTransport;
    }

    /**
     * This process's {@code CUDA_IPC} endpoint for this GPU.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for another transport, another
     *                           device or a closed backend
     */
    private Endpoint createEndpoint(EndpointConfig config) {
        String phase = "createEndpoint";
        checkOpen(phase);
        if (config.transport() != Transport.CUDA_IPC) {
            throw invalid(phase, "the CUDA backend makes CUDA_IPC endpoints only, not " + config.transport());
        }
        Device device = config.device() != null ? config.device() : device();
        if (!device.equals(device())) {
            throw invalid(phase, "this backend works for " + device() + ", not " + device);
        }
        return Endpoint.local(config, device, new byte[0]);
    }

    /**
     * A {@code CUDA_IPC} connection from this GPU to a peer GPU of this host.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} naming the peer for endpoints of
     *                           another transport, a peer on another host or not on a GPU, or a
     *                           local endpoint of another process
     */
    private Connection connect(Endpoint local, Endpoint remote, ConnectionContext context) {
        if (closed.get()) {
            throw connectError(context, "the CUDA backend is closed");
        }
        if (local.transport() != Transport.CUDA_IPC || remote.transport() != Transport.CUDA_IPC) {
            throw connectError(context, "the CUDA backend connects CUDA_IPC endpoints only; this rank's is "
                    + local.transport() + ", rank " + context.remoteRank() + "'s is " + remote.transport());
        }
        if (local.pidHash() != HostIdentity.pidHash() || local.hostHash() != HostIdentity.hostHash()) {
            throw connectError(context, "the local endpoint was not made by this process: " + local);
        }
        if (remote.hostHash() != local.hostHash()) {
            throw connectError(context, "CUDA_IPC connects GPUs of one host; rank " + context.remoteRank()
                    + " is on another host (" + remote + ")");
        }
        if (remote.device().type() != DeviceType.GPU || !local.device().equals(device())) {
            throw connectError(context, "CUDA_IPC connects GPU endpoints; this rank's is on " + local.device()
                    + ", rank " + context.remoteRank() + "'s on " + remote.device());
        }
        return new CudaIpcConnection(this, local, remote, context);
    }

    private static JmscclppException connectError(ConnectionContext context, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(context.rank())
                .peer(context.remoteRank()).tag(context.tag()).phase("connect").build();
    }

    // ---------------------------------------------------------------------------------------------
    // release

    /**
     * A buffer, connection or other user of the context (an NCCL communicator, say) came to life: the
     * context stays retained, even after {@link #close()}, until it is released with {@link #unretain()}.
     */
    public void retain() {
        users.incrementAndGet();
    }

    /** A user that called {@link #retain()} is gone; the last one after {@link #close()} releases the context. */
    public void unretain() {
        if (users.decrementAndGet() == 0) {
            context.close();
        }
    }

    /** Frees or unmaps a buffer as its kind requires; called once by {@link CudaBuffer#close()}. */
    void release(CudaBuffer buffer, int exportedFd) {
        if (exportedFd >= 0) {
            LibC.INSTANCE.close(exportedFd);
        }
        context.makeCurrent();
        int result = switch (buffer.kind()) {
            case DEVICE -> CudaDriver.cuMemFree_v2(buffer.base());
            case PINNED_HOST -> CudaDriver.cuMemFreeHost(buffer.base());
            case IPC_MAPPING -> closeOpening(buffer.base());
            case EXTERNAL -> CudaDriver.CUDA_SUCCESS;
            case VMM, VMM_MAPPING -> {
                int unmap = CudaDriver.cuMemUnmap(buffer.base(), buffer.span());
                int free = CudaDriver.cuMemAddressFree(buffer.base(), buffer.span());
                int rel = CudaDriver.cuMemRelease(buffer.vmmHandle());
                yield unmap != 0 ? unmap : free != 0 ? free : rel;
            }
        };
        if (result != CudaDriver.CUDA_SUCCESS) {
            LOG.log(Level.WARNING, "releasing " + buffer + " failed: " + CudaDriver.describe(result));
        }
        unretain();
    }

    private int closeOpening(long base) {
        synchronized (openings) {
            for (Map.Entry<String, IpcOpening> e : openings.entrySet()) {
                IpcOpening opening = e.getValue();
                if (opening.base == base) {
                    if (--opening.users > 0) {
                        return CudaDriver.CUDA_SUCCESS;
                    }
                    openings.remove(e.getKey());
                    return CudaDriver.cuIpcCloseMemHandle(base);
                }
            }
        }
        return CudaDriver.CUDA_SUCCESS;
    }

    /**
     * Makes later allocations, imports, endpoints and connections {@link ErrorCode#INVALID_USAGE}
     * and releases the backend's stream. Buffers and connections handed out stay valid until their
     * owners close them: the GPU's primary context is released when the last of them is closed.
     * Idempotent.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            DescriptorServer server;
            synchronized (descriptorLock) {
                server = descriptors;
            }
            if (server != null) {
                server.close();
            }
            copies.close();
            unretain();
        }
    }

    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Whether {@code buffer} (or the buffer a {@linkplain DeviceBuffer#slice slice} is part of) is
     * memory of this backend: allocated, mapped or {@linkplain #wrap wrapped} by it, and open.
     */
    public boolean owns(DeviceBuffer buffer) {
        return DeviceBufferSlice.root(buffer) instanceof CudaBuffer b && b.backend() == this
                && !b.isClosed();
    }

    // ---------------------------------------------------------------------------------------------
    // checks

    private CudaBuffer ours(DeviceBuffer buffer, String phase) {
        if (!(buffer instanceof CudaBuffer b) || b.backend() != this) {
            throw invalid(phase, "not a buffer of this CUDA backend: " + buffer);
        }
        if (b.isClosed()) {
            throw invalid(phase, "the buffer is closed: " + b);
        }
        return b;
    }

    private void checkOpen(String phase) {
        if (closed.get()) {
            throw invalid(phase, "the CUDA backend is closed");
        }
    }

    private static void checkSize(long size, String phase) {
        if (size < 1) {
            throw invalid(phase, "a buffer has at least 1 byte, asked for " + size);
        }
    }

    private static void checkRange(DeviceBuffer buffer, long offset, long size, String phase, String which) {
        if (buffer.isClosed()) {
            throw invalid(phase, "the " + which + " buffer is closed: " + buffer);
        }
        if (offset < 0 || size < 0 || offset > buffer.size() - size) {
            throw invalid(phase, "the " + which + " range [" + offset + ", " + offset + " + " + size
                    + ") is outside the buffer of " + buffer.size() + " bytes");
        }
    }

    private static long roundUp(long size, long granularity) {
        return (size + granularity - 1) / granularity * granularity;
    }

    static JmscclppException invalid(String phase, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase(phase).build();
    }

    @Override
    public String toString() {
        return "CudaBackend[" + context + ", " + defaultAllocation + (closed.get() ? ", closed" : "") + "]";
    }

    /** A peer's allocation opened here, shared by every buffer imported from it. */
    private static final class IpcOpening {
        final long base;
        int users;

        IpcOpening(long base) {
            this.base = base;
        }
    }
}
