package org.jmscclpp.samples;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryChannel;
import org.jmscclpp.core.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.nativebridge.CudaBackend;
import org.jmscclpp.nativebridge.CudaModule;
import org.jmscclpp.nativebridge.CudaStream;
import org.jmscclpp.nativebridge.Kernel;
import org.jmscclpp.nativebridge.KernelArgs;
import org.jmscclpp.nativebridge.LaunchConfig;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * Allreduce (sum) of the GPUs of one host over {@code CUDA_IPC}, with the kernels of
 * {@code kernels/allreduce.cu} (whose header comment is the device side's contract):
 * <ul>
 *   <li>{@link Variant#LL16}: one shot with LL16 packets. Each rank writes its whole input as
 *       packets into its slot of every peer's scratch, then waits for every peer's packets in its
 *       own scratch and adds them to its input. Two halves of scratch, chosen by the parity of a run
 *       counter that the kernel keeps in device memory and advances itself, so CUDA graph replays
 *       need nothing from the host. For S up to {@value #LL16_MAX_SIZE} bytes
 *       ({@link #maxSize()} is capped there).</li>
 *   <li>{@link Variant#RSAG}: reduce-scatter + allgather over the peers' registered buffers. Rank
 *       r reads slice r of every peer's input over NVLink (16-byte loads), sums it, and stores the
 *       sum into its own output and every peer's. Each block meets the same block of every peer
 *       at a barrier of {@link MemoryChannel} semaphores (one per block and peer) before reading
 *       and after writing.</li>
 *   <li>{@link Variant#AUTO}: LL16 up to {@link Tuning#llMaxBytes()} bytes, RSAG above.</li>
 * </ul>
 * Types: {@link DataType#FLOAT32}, {@link DataType#FLOAT16}, {@link DataType#BFLOAT16} (summed in
 * fp32, rounded once) and {@link DataType#INT32}. 1 to {@value #MAX_RANKS} ranks, each on its own
 * GPU of this host. Any element count: the tails that the vector paths leave are handled apart.
 *
 * <p>Setup connects to every peer on communicator tag {@value #TAG}, exchanges the registered
 * buffers, builds the semaphores, compiles the kernels (NVRTC, cached on disk) and ends with a
 * bootstrap barrier, so that no rank's first kernel waits on a peer that is still compiling.
 * Every step has the setup's deadline. The connections, the peers' memories and the semaphores
 * belong to the communicator (it closes them); {@link #close()} releases the rest.
 */
final class CudaAllReduce implements Collective {

    /** Which kernels a collective uses; the label is its {@code --algo} name. */
    enum Variant {
        AUTO("auto"),
        LL16("ll16"),
        RSAG("rsag");

        private final String label;

        Variant(String label) {
            this.label = label;
        }

        String label() {
            return label;
        }
    }

    /**
     * What the lead tunes on the GPU host: the largest S that {@link Variant#AUTO} sends as packets,
     * and the number of blocks (hence semaphores per peer) of the RSAG kernel.
     */
    record Tuning(long llMaxBytes, int rsagBlocks) {
        Tuning {
            if (llMaxBytes < 0 || llMaxBytes > LL16_MAX_SIZE) {
                throw usage("the LL16 threshold must be in [0, " + LL16_MAX_SIZE + "] bytes, got " + llMaxBytes);
            }
            if (rsagBlocks < 1 || rsagBlocks > RSAG_MAX_BLOCKS) {
                throw usage("the RSAG kernel runs 1 to " + RSAG_MAX_BLOCKS + " blocks, got " + rsagBlocks);
            }
        }

        /**
         * {@value #THRESHOLD_PROPERTY} (a byte count: 262144, 256K, 1M) and {@value #BLOCKS_PROPERTY}
         * where set, the defaults otherwise; INVALID_USAGE naming the property for a malformed value.
         */
        static Tuning fromProperties() {
            String threshold = System.getProperty(THRESHOLD_PROPERTY);
            String blocks = System.getProperty(BLOCKS_PROPERTY);
            try {
                long llMax = threshold == null ? DEFAULT_LL_MAX_BYTES : ByteSizes.parse("-D" + THRESHOLD_PROPERTY,
                        threshold.trim());
                int rsag = blocks == null ? DEFAULT_RSAG_BLOCKS : Integer.parseInt(blocks.trim());
                return new Tuning(llMax, rsag);
            } catch (NumberFormatException e) {
                throw usage("-D" + BLOCKS_PROPERTY + " needs a number of blocks, got '" + blocks + "'");
            } catch (IllegalArgumentException e) {
                throw usage(e.getMessage());
            }
        }
    }

    /** One run's kernel and grid; {@code blocks} 0 for a run with nothing to do (count 0). */
    record Launch(boolean packets, int blocks, int threads) {
    }

    static final int MAX_RANKS = 8;
    /** Threads per block of both kernels: their {@code __launch_bounds__}. */
    static final int THREADS = 512;
    /** Length of the LL16 kernel's run counter array, and so its largest grid. */
    static final int LL_MAX_BLOCKS = 128;
    /** The largest S of {@link Variant#LL16}: its scratch is 4 n S bytes. */
    static final long LL16_MAX_SIZE = 16L << 20;
    /** One block per SM at most (132 on an H100/H200): every RSAG block must be resident at once. */
    static final int RSAG_MAX_BLOCKS = 128;
    static final long DEFAULT_LL_MAX_BYTES = 256L << 10;
    static final int DEFAULT_RSAG_BLOCKS = 64;
    static final String THRESHOLD_PROPERTY = "jmscclpp.allreduce.ll16MaxBytes";
    static final String BLOCKS_PROPERTY = "jmscclpp.allreduce.rsagBlocks";
    /** The communicator tag of every setup step. */
    static final int TAG = 0xA11;
    static final String LL16_KERNEL = "allreduceLL16";
    static final String RSAG_KERNEL = "allreduceRSAG";

    private static final TransportFlags IPC = TransportFlags.of(Transport.CUDA_IPC);

    private final Variant variant;
    private final Tuning tuning;
    private final int rank;
    private final int ranks;
    private final long maxSize;
    private final Duration timeout;
    /** Everything this collective made and closes, newest first. */
    private final Deque<AutoCloseable> owned = new ArrayDeque<>();
    private final DeviceBuffer input;
    private final DeviceBuffer output;
    private final CudaStream stream;
    private final @Nullable Packets packets;
    private final @Nullable Direct direct;
    private boolean closed;

    /** The LL16 kernel's state: scratch, run counters, channel handles (dst: the peers' scratch). */
    private record Packets(Kernel kernel, DeviceBuffer scratch, long slotBytes, DeviceBuffer runs, long channels) {
    }

    /** The RSAG kernel's channel handles: the peers' inputs, and per block the peers' outputs with a semaphore. */
    private record Direct(Kernel kernel, long inChannels, long outChannels) {
    }

    /** {@link #create(CollectiveSetup, Variant, Tuning)} with {@link Tuning#fromProperties()}. */
    static CudaAllReduce create(CollectiveSetup setup, Variant variant) {
        return create(setup, variant, Tuning.fromProperties());
    }

    /**
     * Sets this rank's end up; every rank of the communicator must call this with the same
     * arguments, at the same point of its sequence of setups. Returns when the collective is
     * ready on every rank.
     *
     * @throws JmscclppException INVALID_USAGE when the backend is not CUDA, there are more than
     *         {@value #MAX_RANKS} ranks or maxSize is below 1; TIMEOUT when a step passed the
     *         setup's deadline; the backend's and communicator's errors. What was made is released
     *         before it throws.
     */
    static CudaAllReduce create(CollectiveSetup setup, Variant variant, Tuning tuning) {
        Objects.requireNonNull(variant, "variant");
        Objects.requireNonNull(tuning, "tuning");
        if (!(setup.backend() instanceof CudaBackend)) {
            throw usage("the " + variant.label() + " allreduce runs on the cuda backend, not " + setup.backend().name());
        }
        if (setup.size() > MAX_RANKS) {
            throw usage("the allreduce kernels take 1 to " + MAX_RANKS + " ranks, not " + setup.size());
        }
        if (setup.maxSize() < 1) {
            throw usage("the largest size must be at least 1 byte, got " + setup.maxSize());
        }
        return new CudaAllReduce(setup, variant, tuning);
    }

    private CudaAllReduce(CollectiveSetup setup, Variant variant, Tuning tuning) {
        this.variant = variant;
        this.tuning = tuning;
        this.rank = setup.rank();
        this.ranks = setup.size();
        this.maxSize = variant == Variant.LL16 ? Math.min(setup.maxSize(), LL16_MAX_SIZE) : setup.maxSize();
        this.timeout = setup.timeout();
        CudaBackend cuda = (CudaBackend) setup.backend();
        Communicator comm = setup.communicator();
        long llBytes = llCapacity(variant, maxSize, tuning);
        try {
            input = own(cuda.allocate(maxSize));
            output = own(cuda.allocate(maxSize));
            Links links = link(comm, cuda, llBytes);
            CudaModule module = SampleKernels.load(cuda, "allreduce");
            packets = llBytes == 0 ? null : new Packets(module.function(LL16_KERNEL),
                    Objects.requireNonNull(links.scratch(), "scratch"),
                    slotBytes(llBytes), own(cuda.allocate((long) LL_MAX_BLOCKS * Long.BYTES)),
                    upload(cuda, links.llChannels()));
            direct = variant == Variant.LL16 ? null : new Direct(module.function(RSAG_KERNEL),
                    upload(cuda, links.inChannels()), upload(cuda, links.outChannels()));
            stream = own(cuda.createStream("allreduce " + variant.label() + " of rank " + rank));
            // every rank has compiled its kernels: no first kernel waits out its deadline on a slow peer
            Blocking.done(setup.bootstrap().barrier(timeout), timeout.plusSeconds(5), rank, "allreduce setup barrier");
        } catch (RuntimeException e) {
            try {
                releaseAll();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** The channel handles of both kernels, encoded, and this rank's scratch (null without packets). */
    private record Links(@Nullable DeviceBuffer scratch, byte[] llChannels, byte[] inChannels, byte[] outChannels) {
    }

    /**
     * Registers the buffers, connects to every peer, exchanges the buffers and builds the
     * semaphores. Per peer, on its (peer, {@value #TAG}) chain and in this order on every rank:
     * the input and output (for RSAG), the scratch (for LL16), then the semaphores, block 0 first:
     * the communicator pairs the i-th step of each side.
     */
    private Links link(Communicator comm, CudaBackend cuda, long llBytes) {
        boolean withPackets = llBytes > 0;
        boolean withDirect = variant != Variant.LL16;
        int semaphoresPerPeer = withDirect ? tuning.rsagBlocks() : 1;
        @Nullable DeviceBuffer scratch = withPackets ? own(cuda.allocate(2L * ranks * slotBytes(llBytes))) : null;
        RegisteredMemory inputMemory = own(comm.registerMemory(input, IPC));
        RegisteredMemory outputMemory = own(comm.registerMemory(output, IPC));
        @Nullable RegisteredMemory scratchMemory = scratch == null ? null : own(comm.registerMemory(scratch, IPC));

        List<Integer> peers = new ArrayList<>();
        for (int p = 0; p < ranks; p++) {
            if (p != rank) {
                peers.add(p);
            }
        }
        Connection[] connections = new Connection[ranks];
        List<Mono<?>> connecting = new ArrayList<>();
        for (int p : peers) {
            connecting.add(comm.connect(p, TAG, EndpointConfig.of(Transport.CUDA_IPC), timeout)
                    .doOnNext(c -> connections[p] = c));
        }
        Blocking.done(Mono.when(connecting), timeout.plusSeconds(5), rank, "allreduce connect");

        RegisteredMemory[] peerInputs = new RegisteredMemory[ranks];
        RegisteredMemory[] peerOutputs = new RegisteredMemory[ranks];
        RegisteredMemory[] peerScratch = new RegisteredMemory[ranks];
        MemoryDevice2DeviceSemaphore[][] semaphores = new MemoryDevice2DeviceSemaphore[ranks][semaphoresPerPeer];
        List<Mono<?>> steps = new ArrayList<>();
        for (int p : peers) {
            if (withDirect) {
                steps.add(comm.sendMemory(inputMemory, p, TAG, timeout));
                steps.add(comm.sendMemory(outputMemory, p, TAG, timeout));
                steps.add(comm.recvMemory(p, TAG, timeout).doOnNext(m -> peerInputs[p] = m));
                steps.add(comm.recvMemory(p, TAG, timeout).doOnNext(m -> peerOutputs[p] = m));
            }
            if (scratchMemory != null) {
                steps.add(comm.sendMemory(scratchMemory, p, TAG, timeout));
                steps.add(comm.recvMemory(p, TAG, timeout).doOnNext(m -> peerScratch[p] = m));
            }
            for (int b = 0; b < semaphoresPerPeer; b++) {
                int block = b;
                steps.add(MemoryDevice2DeviceSemaphore.build(comm, connections[p])
                        .doOnNext(s -> semaphores[p][block] = s));
            }
        }
        // each step has the setup's deadline; they run concurrently, chained per peer
        Blocking.done(Mono.when(steps), timeout.multipliedBy(2).plusSeconds(5), rank, "allreduce exchange");

        int nPeers = peers.size();
        ByteBuffer ll = handles(withPackets ? nPeers : 0);
        ByteBuffer in = handles(withDirect ? nPeers : 0);
        ByteBuffer out = handles(withDirect ? semaphoresPerPeer * nPeers : 0);
        for (int p : peers) {
            if (scratchMemory != null) {
                new MemoryChannel(semaphores[p][0], peerScratch[p], scratchMemory, scratchMemory).encodeDeviceHandle(ll);
            }
            if (withDirect) {
                new MemoryChannel(semaphores[p][0], peerInputs[p], inputMemory, null).encodeDeviceHandle(in);
            }
        }
        if (withDirect) {
            // block b's handles for peers 0 .. nPeers - 1 at b * nPeers + i, as the kernel indexes them
            for (int b = 0; b < semaphoresPerPeer; b++) {
                for (int p : peers) {
                    new MemoryChannel(semaphores[p][b], peerOutputs[p], outputMemory, null).encodeDeviceHandle(out);
                }
            }
        }
        return new Links(scratch, ll.array(), in.array(), out.array());
    }

    private static ByteBuffer handles(int count) {
        return ByteBuffer.allocate(count * MemoryChannel.DEVICE_HANDLE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Device memory holding {@code bytes}, owned by this collective; 0 (the kernel reads nothing) when empty. */
    private long upload(CudaBackend cuda, byte[] bytes) {
        if (bytes.length == 0) {
            return 0;
        }
        DeviceBuffer buffer = own(cuda.allocate(bytes.length));
        cuda.copyFromHost(buffer, 0, MemorySegment.ofArray(bytes));
        return buffer.address();
    }

    private <T extends AutoCloseable> T own(T resource) {
        owned.push(resource);
        return resource;
    }

    // ---------------------------------------------------------------------------------------------
    // sizes and grids, shared with the tests

    /** Bytes of payload the LL16 scratch must hold: 0 when the variant sends no packets. */
    static long llCapacity(Variant variant, long maxSize, Tuning tuning) {
        return switch (variant) {
            case LL16 -> Math.min(maxSize, LL16_MAX_SIZE);
            case AUTO -> Math.min(maxSize, tuning.llMaxBytes());
            case RSAG -> 0;
        };
    }

    /** Bytes of one rank's slot of a scratch half: 16-byte packets of 8 payload bytes each. */
    static long slotBytes(long payloadBytes) {
        return (payloadBytes + 7) / 8 * 16;
    }

    /** 16-byte vectors in flight per source in each thread of the RSAG kernel for n ranks: its U. */
    static int rsagUnroll(int ranks) {
        return ranks <= 2 ? 4 : ranks <= 4 ? 2 : 1;
    }

    /**
     * The kernel and grid of one run of {@code count} elements of {@code type}.
     *
     * @throws JmscclppException INVALID_USAGE for a negative count, or a size beyond {@code maxSize}
     */
    static Launch plan(Variant variant, long count, DataType type, int ranks, long maxSize, Tuning tuning) {
        Objects.requireNonNull(type, "type");
        if (count < 0) {
            throw usage("the element count must not be negative, got " + count);
        }
        if (count > maxSize / type.bytes()) {
            throw usage(count + " elements of " + type + " (" + type.bytes() + " bytes each) exceed the " + maxSize
                    + " bytes the " + variant.label() + " allreduce was set up for");
        }
        long bytes = count * type.bytes();
        if (bytes == 0) {
            return new Launch(variant != Variant.RSAG, 0, 0);
        }
        boolean packets = switch (variant) {
            case LL16 -> true;
            case RSAG -> false;
            case AUTO -> bytes <= tuning.llMaxBytes();
        };
        if (packets) {
            long packetCount = (bytes + 7) / 8;
            int threads = (int) Math.min(THREADS, (packetCount + 31) / 32 * 32);
            int blocks = (int) Math.min(LL_MAX_BLOCKS, (packetCount + threads - 1) / threads);
            return new Launch(true, blocks, threads);
        }
        long vectors = bytes / 16;
        long slice = (vectors + ranks - 1) / ranks;
        long perBlock = (long) THREADS * rsagUnroll(ranks);
        int blocks = (int) Math.max(1, Math.min(tuning.rsagBlocks(), (slice + perBlock - 1) / perBlock));
        return new Launch(false, blocks, THREADS);
    }

    /** The LL16 kernel's parameters, in allreduce.cu's order. */
    static KernelArgs llArgs(long channels, long in, long out, long count, DataType type, long scratch, long slotBytes,
                             long runs, int rank, int ranks) {
        return KernelArgs.builder().pointer(channels).pointer(in).pointer(out).i64(count).i32(type.code())
                .pointer(scratch).i64(slotBytes).pointer(runs).i32(rank).i32(ranks).build();
    }

    /** The RSAG kernel's parameters, in allreduce.cu's order. */
    static KernelArgs rsagArgs(long inChannels, long outChannels, long in, long out, long count, DataType type,
                               boolean inPlace, int rank, int ranks) {
        return KernelArgs.builder().pointer(inChannels).pointer(outChannels).pointer(in).pointer(out).i64(count)
                .i32(type.code()).i32(inPlace ? 1 : 0).i32(rank).i32(ranks).build();
    }

    // ---------------------------------------------------------------------------------------------
    // Collective

    @Override
    public CollectiveKind kind() {
        return CollectiveKind.ALLREDUCE;
    }

    @Override
    public String algorithm() {
        return variant.label();
    }

    /** S of the setup, except for {@link Variant#LL16}: at most {@value #LL16_MAX_SIZE}. */
    @Override
    public long maxSize() {
        return maxSize;
    }

    @Override
    public DeviceBuffer input() {
        return input;
    }

    @Override
    public DeviceBuffer output() {
        return output;
    }

    /**
     * Enqueues one allreduce of {@code count} elements on {@link #stream()} and returns; a count
     * of 0 enqueues nothing.
     *
     * @throws JmscclppException INVALID_USAGE for a negative count, a size beyond
     *         {@link #maxSize()}, or a closed collective; the launch's errors
     */
    @Override
    public void enqueue(long count, DataType type, boolean inPlace) {
        if (closed) {
            throw usage("the " + variant.label() + " allreduce is closed");
        }
        Launch launch = plan(variant, count, type, ranks, maxSize, tuning);
        if (launch.blocks() == 0) {
            return;
        }
        long in = inPlace ? output.address() : input.address();
        LaunchConfig grid = LaunchConfig.of(launch.blocks(), launch.threads());
        if (launch.packets()) {
            Packets p = Objects.requireNonNull(packets, "packets");
            stream.launch(p.kernel(), grid, llArgs(p.channels(), in, output.address(), count, type,
                    p.scratch().address(), p.slotBytes(), p.runs().address(), rank, ranks));
        } else {
            Direct d = Objects.requireNonNull(direct, "direct");
            stream.launch(d.kernel(), grid, rsagArgs(d.inChannels(), d.outChannels(), in, output.address(), count,
                    type, inPlace, rank, ranks));
        }
    }

    @Override
    public void synchronize(Duration timeout) {
        stream.synchronize(timeout, "allreduce " + variant.label() + " on rank " + rank);
    }

    @Override
    public CudaStream stream() {
        return stream;
    }

    /** Closes the stream, the channel handles, the registrations and the buffers, newest first. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        releaseAll();
    }

    private void releaseAll() {
        RuntimeException first = null;
        while (!owned.isEmpty()) {
            try {
                owned.pop().close();
            } catch (Exception e) {
                if (first == null) {
                    first = e instanceof RuntimeException re ? re : new IllegalStateException(e);
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "CudaAllReduce[%s, rank %d of %d, up to %d bytes]", variant.label(), rank,
                ranks, maxSize);
    }

    static JmscclppException usage(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("allreduce").build();
    }
}
