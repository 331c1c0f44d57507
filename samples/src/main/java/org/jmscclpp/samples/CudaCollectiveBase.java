package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.function.Consumer;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Mesh;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.nativebridge.CudaBackend;
import org.jmscclpp.nativebridge.CudaStream;
import org.jmscclpp.nativebridge.Kernel;
import org.jmscclpp.nativebridge.LaunchConfig;

/**
 * What the CUDA collectives of {@code collectives.cu} share: the GPU, input and output buffers of
 * S bytes each registered for {@code CUDA_IPC}, a mesh with every peer over {@code CUDA_IPC} that
 * exchanged the output buffers (each channel's dst is a peer's output), a stream, the checks of
 * {@link Collective#enqueue}'s arguments, and the grid a size gets. Everything made here is closed
 * by {@link #close()}, newest first. The algorithms extend it and add their channels and kernels;
 * when that setup throws they hand the failure to {@link #failed}.
 */
abstract class CudaCollectiveBase implements Collective {

    /** The kernel file of the collectives. */
    static final String KERNELS = "collectives";
    /** Threads per block of every collective kernel: at least one per peer. */
    static final int THREADS = 512;
    /** The most blocks a collective kernel gets. */
    static final int MAX_BLOCKS = maxBlocks();

    /** Sizes up to this many bytes get at most {@value #SMALL_GRID_BLOCKS} blocks. */
    static final long SMALL_GRID_MAX_BYTES = 64L << 20;
    static final int SMALL_GRID_BLOCKS = 32;

    /** {@value #MAX_BLOCKS_PROPERTY} (1 to 1024, default 64): a tuning knob, the same on every rank of a job. */
    static final String MAX_BLOCKS_PROPERTY = "jmscclpp.collectives.maxBlocks";

    private static int maxBlocks() {
        int blocks = Integer.getInteger(MAX_BLOCKS_PROPERTY, 64);
        if (blocks < 1 || blocks > 1024) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "-D" + MAX_BLOCKS_PROPERTY + " is 1 to 1024, got "
                    + blocks).phase("collective setup").build();
        }
        return blocks;
    }
    /** 16-byte words per thread and round of the kernels' copy loops (collectives.cu's Unroll). */
    static final int UNROLL = 4;
    /** The most ranks: the kernels store to at most 7 peers and this rank. */
    static final int MAX_RANKS = 8;

    private static final TransportFlags IPC = TransportFlags.of(Transport.CUDA_IPC);

    final CollectiveKind kind;
    private final String algorithm;
    final CudaBackend backend;
    final int rank;
    final int ranks;
    final long maxSize;
    final Duration timeout;
    final DeviceBuffer input;
    final DeviceBuffer output;
    final RegisteredMemory inputMemory;
    final RegisteredMemory outputMemory;
    final Mesh mesh;
    final CudaStream stream;
    private final Deque<AutoCloseable> owned = new ArrayDeque<>();

    /**
     * Allocates, registers, connects every peer and exchanges the output buffers; every rank must
     * call it at the same point. INVALID_USAGE when the backend is not CUDA, the job has fewer
     * than 2 or more than {@value #MAX_RANKS} ranks, or S is not positive or not below
     * {@code sizeLimit}; the setup steps' errors otherwise (after closing what was made).
     */
    CudaCollectiveBase(CollectiveKind kind, String algorithm, CollectiveSetup setup, long sizeLimit) {
        this.kind = kind;
        this.algorithm = algorithm;
        this.backend = cuda(setup, kind, algorithm);
        this.rank = setup.rank();
        this.ranks = setup.size();
        this.maxSize = setup.maxSize();
        this.timeout = setup.timeout();
        if (ranks < 2 || ranks > MAX_RANKS) {
            throw invalid(setup, kind, algorithm, "runs on 2 to " + MAX_RANKS + " ranks, not " + ranks);
        }
        if (maxSize < 1 || maxSize >= sizeLimit) {
            throw invalid(setup, kind, algorithm, "takes a size S from 1 byte to below " + sizeLimit + " bytes, not "
                    + maxSize);
        }
        try {
            input = own(backend.allocate(maxSize));
            output = own(backend.allocate(maxSize));
            inputMemory = own(setup.communicator().registerMemory(input, IPC));
            outputMemory = own(setup.communicator().registerMemory(output, IPC));
            mesh = Blocking.value(setup.communicator().mesh(outputMemory, p -> EndpointConfig.of(Transport.CUDA_IPC), 0,
                    timeout), timeout.plusSeconds(5), rank, kind.label() + " " + algorithm + " mesh");
            stream = own(backend.createStream(kind.label() + "-" + algorithm));
        } catch (RuntimeException e) {
            throw failed(e);
        }
    }

    /** The backend as CUDA; INVALID_USAGE naming the collective otherwise. */
    static CudaBackend cuda(CollectiveSetup setup, CollectiveKind kind, String algorithm) {
        if (setup.backend() instanceof CudaBackend cuda) {
            return cuda;
        }
        throw invalid(setup, kind, algorithm, "needs the cuda backend, not " + setup.backend().name());
    }

    private static JmscclppException invalid(CollectiveSetup setup, CollectiveKind kind, String algorithm,
                                             String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, kind.label() + " '" + algorithm + "' " + detail)
                .rank(setup.rank()).phase("collective setup").build();
    }

    /** Takes ownership of {@code resource}: {@link #close()} closes it. */
    <T extends AutoCloseable> T own(T resource) {
        owned.push(resource);
        return resource;
    }

    /** The peer of channel index {@code i}: peers in increasing rank order, this rank left out (collectives.cu's peerRank). */
    int peer(int i) {
        return i < rank ? i : i + 1;
    }

    /** The channel index of {@code peer}. */
    int index(int peer) {
        return peer < rank ? peer : peer - 1;
    }

    int next() {
        return (rank + 1) % ranks;
    }

    int previous() {
        return (rank + ranks - 1) % ranks;
    }

    /**
     * Checks one operation's arguments (see {@link Collective#enqueue}) and returns the bytes per
     * count unit: the slice (allgather), the chunk per peer (alltoall), the buffer (sendrecv).
     */
    long unitBytes(long count, DataType type, boolean inPlace) {
        return unitBytes(kind, algorithm, ranks, maxSize, count, type, inPlace, rank);
    }

    /** {@link #unitBytes(long, DataType, boolean)} for a collective of {@code kind} on {@code ranks} ranks set up for {@code maxSize}. */
    static long unitBytes(CollectiveKind kind, String algorithm, int ranks, long maxSize, long count, DataType type,
                          boolean inPlace, int rank) {
        String what = null;
        if (count < 0) {
            what = "a count of " + count + " elements";
        } else if (inPlace && !kind.hasInPlace()) {
            what = "in-place runs (" + kind.label() + " has none)";
        } else if (count > maxSize || kind.size(count, ranks, type) > maxSize) {
            what = count + " elements of " + type + " (" + kind.size(count, ranks, type) + " bytes > S = " + maxSize
                    + ")";
        }
        if (what != null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, kind.label() + " '" + algorithm + "' takes no "
                    + what).rank(rank).phase("enqueue").build();
        }
        return count * type.bytes();
    }

    /**
     * The grid for a kernel whose threads together load {@code bytes}: one block per
     * {@value #THREADS} × {@value #UNROLL} 16-byte words, 1 to {@value #SMALL_GRID_BLOCKS} up to
     * {@value #SMALL_GRID_MAX_BYTES} bytes and 1 to {@link #MAX_BLOCKS} above. A function
     * of the size alone, so every rank launches the same grid (the memory kernels' signal counts
     * depend on it).
     */
    static LaunchConfig grid(long bytes) {
        long perBlock = (long) THREADS * UNROLL * 16;
        // measured on 2 x H200 (allgather, graph timing): up to 64 MiB, 32 blocks beat 64 and 128
        // (16 MiB: 35 µs against 53 µs); above, 64 and more beat 32 (1 GiB: 1.48-1.52 ms against 1.65 ms)
        int cap = bytes <= SMALL_GRID_MAX_BYTES ? Math.min(SMALL_GRID_BLOCKS, MAX_BLOCKS) : MAX_BLOCKS;
        long blocks = Math.clamp((bytes + perBlock - 1) / perBlock, 1, cap);
        return LaunchConfig.of((int) blocks, THREADS);
    }

    /** The kernel {@code name} of {@code collectives.cu} on this GPU. */
    Kernel kernel(String name) {
        return SampleKernels.load(backend, KERNELS).function(name);
    }

    /**
     * A device array of encoded handles, {@code bytesEach} bytes each, in {@code encoders}' order,
     * copied to the GPU once; owned.
     */
    DeviceBuffer deviceArray(int bytesEach, List<Consumer<java.nio.ByteBuffer>> encoders) {
        DeviceBuffer array = own(backend.allocate((long) bytesEach * encoders.size()));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate((long) bytesEach * encoders.size(), 16);
            for (int i = 0; i < encoders.size(); i++) {
                java.nio.ByteBuffer out = host.asSlice((long) i * bytesEach, bytesEach).asByteBuffer()
                        .order(ByteOrder.LITTLE_ENDIAN);
                encoders.get(i).accept(out);
                if (out.position() != bytesEach) {
                    throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "a handle encoder wrote " + out.position()
                            + " bytes, not " + bytesEach).rank(rank).phase("collective setup").build();
                }
            }
            backend.copyFromHost(array, 0, host);
        }
        return array;
    }

    @Override
    public final CollectiveKind kind() {
        return kind;
    }

    @Override
    public final String algorithm() {
        return algorithm;
    }

    @Override
    public final long maxSize() {
        return maxSize;
    }

    @Override
    public final DeviceBuffer input() {
        return input;
    }

    @Override
    public final DeviceBuffer output() {
        return output;
    }

    @Override
    public final void synchronize(Duration limit) {
        stream.synchronize(limit, kind.label() + " " + algorithm);
    }

    @Override
    public final CudaStream stream() {
        return stream;
    }

    /** Closes everything made, newest first; the first failure is thrown with the others suppressed. */
    @Override
    public void close() {
        closeMade();
    }

    /** What {@link #close()} does here; subclasses that close more first still end with this. */
    final void closeMade() {
        RuntimeException first = null;
        while (!owned.isEmpty()) {
            try {
                owned.pop().close();
            } catch (Exception e) {
                if (first == null) {
                    first = e instanceof RuntimeException r ? r : JmscclppException.builder(ErrorCode.SYSTEM_ERROR,
                            "closing a collective's resource failed").rank(rank).phase("collective close").cause(e)
                            .build();
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /**
     * Closes what setup made so far ({@link #closeMade()}, not a subclass's {@link #close()}) after setup
     * failed with {@code cause}, attaching what closing threw; returns {@code cause}.
     */
    final RuntimeException failed(RuntimeException cause) {
        try {
            closeMade();
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        }
        return cause;
    }
}
