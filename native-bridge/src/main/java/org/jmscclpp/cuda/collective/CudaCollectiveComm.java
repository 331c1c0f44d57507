package org.jmscclpp.cuda.collective;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.collective.AbstractCollectiveComm;
import org.jmscclpp.core.collective.Algorithm;
import org.jmscclpp.core.collective.CallDescriptor;
import org.jmscclpp.core.collective.CallOptions;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveGroup;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.TuningTable;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.core.spi.Closeables;
import org.jmscclpp.core.spi.Tunables;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.cuda.kernel.DeviceAbortFlag;
import org.jmscclpp.cuda.kernel.DeviceKernels;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;

/**
 * The CUDA backend's collective communicator: the GPUs of one host over CUDA IPC, with the kernels
 * of {@code collectives.cu} (whose header comment is the device side's contract).
 *
 * <h2>Two forms of every call</h2>
 * The {@link CollectiveComm} methods return Monos: the calls are enqueued on the communicator's own
 * stream when subscribed, followed by a write of the batch's number into pinned host memory that a
 * completion thread watches with plain loads, so a call costs one launch and no driver query to
 * complete. {@link #on(CudaStream)} gives the other form: the same calls enqueued on the caller's
 * stream (one of {@link CudaBackend#createStream} or, wrapped with {@link CudaBackend#wrapStream},
 * PyTorch's or JCuda's), returning at once, ordered with the caller's own work and capturable in a
 * CUDA graph: everything one call hands the next lives in device memory and is advanced by the
 * kernels.
 *
 * <h2>Algorithms</h2>
 * Per kind, {@code ll16} (one shot with LL16 packets through the communicator's scratch, on any
 * buffers) for small calls and a direct algorithm for large ones: on registered buffers the peers'
 * buffers are read and written in place; otherwise the data is staged through the scratch's IN and
 * OUT areas, in pieces of {@link #STAGED_BYTES} (copies on the stream before and after each piece).
 * An allToAll in place on registered buffers sends from a copy of the slots its peers overwrite, in
 * the IN and OUT areas (what they store would overtake what it has yet to send), staged only beyond.
 * A send stores into a registered receive buffer; otherwise the receiver copies (see the kernel
 * file's point-to-point section). For large allReduce, reduce and broadcast calls on registered
 * buffers, {@code push} crosses NVLink with stores only, in rounds of chunks (the kernel file's push
 * section). The committed tuning table ({@value #TUNING}) chooses between them.
 *
 * <h2>Errors</h2>
 * Ranks whose calls differ stop in the kernels (see the kernel file) and this rank's completion
 * reports INVALID_USAGE with both descriptors; a call past its deadline is TIMEOUT (its kernels'
 * waits give up at the same deadline on the device and return, see Abort below), a dead peer
 * REMOTE_ERROR, a stream that fails (a peer's memory went away) SYSTEM_ERROR. {@link #asyncError()}
 * reads the device's error record for the stream form, as {@code ncclCommGetAsyncError} does.
 *
 * <h2>Abort</h2>
 * The kernels' waits are given a {@link DeviceAbortFlag} of the communicator's
 * {@link org.jmscclpp.core.AbortSignal}: when the job fails (a dead peer: REMOTE_ERROR; an
 * {@link #abort} on any rank: ABORTED) the running kernels return within about a millisecond instead of
 * waiting for their device deadline, the calls that had not completed fail with the signal's
 * cause once the stream got past them, and the CUDA context stays usable: close this
 * communicator and its {@code Communicator} and build a new job on the same GPU. A kernel wait that
 * passes its device deadline returns the same way (TIMEOUT), without a trap.
 */
public final class CudaCollectiveComm extends AbstractCollectiveComm {

    /** The engine's committed tuning table, a class-path resource. */
    public static final String TUNING = "org/jmscclpp/cuda/collective/tuning-cuda.txt";
    static final String KERNELS = "org/jmscclpp/cuda/collective/collectives.cu";
    static final String TOPOLOGY = "nvlink";

    static final int MAX_RANKS = 8;
    static final int THREADS = 512;
    static final int LL_MAX_BLOCKS = 128;
    /**
     * The fewest blocks an ll16 kernel gets ({@value #LL_MIN_BLOCKS_PROPERTY}, 1 to 128): a tuning
     * knob. By default 16, and 64 for the stream form on two ranks. On 2 x H200 a 1 KiB allreduce took
     * 9.1 µs in one block, 6.1 in four and 5.3 in 16 (stop 26); from 16 to 64 blocks (stop 40, two
     * rounds, graph timing) 1 KiB took 5.12 -> 4.68 µs for allreduce, 5.44 -> 4.83 for reduce, 5.17 ->
     * 4.85 for reduceScatter, 5.29 -> 5.12 for allGather, 5.46 -> 5.27 for allToAll. A Mono call's
     * kernel writes a done word per block, which the host reads: there 64 blocks cost more than they
     * saved (allGather, three runs: 8.1-9.9 µs a call against 7.7-8.0 with 16). More ranks were not
     * measured with 64.
     */
    static final String LL_MIN_BLOCKS_PROPERTY = "jmscclpp.collectives.llMinBlocks";

    /** {@link #LL_MIN_BLOCKS_PROPERTY} where set, else the default for {@code ranks} and the form ({@code tells}: a Mono call's). */
    static int llMinBlocksFor(int ranks, boolean tells) {
        return Tunables.intValue(LL_MIN_BLOCKS_PROPERTY, ranks == 2 && !tells ? 64 : 16, 1, LL_MAX_BLOCKS);
    }
    /** The most blocks a direct kernel's state has room for (a semaphore per block and peer, a run word per block). */
    static final int MAX_BLOCKS = 128;
    /**
     * The most blocks of a direct kernel ({@value #DIRECT_BLOCKS_PROPERTY}, 16 to {@value #MAX_BLOCKS};
     * half of it up to 64 MiB except for the push algorithms), and of each send or receive of a
     * point-to-point wave: a tuning knob, the same on every rank of a job (set-up fails with
     * INVALID_USAGE where the ranks differ). Each block and peer has a semaphore built at set-up. By
     * default 128 (2 x H200, 1 GiB: broadcast 366 GB/s against 358 with 64, allGather 360 against 353,
     * reduce 353 against 348; 4 x H200, 256 MiB and 1 GiB, stop 41: rsag, rs, memory within 1-3 % of
     * 64 either way, and a block's stores run at about 5.4 GB/s, so the push algorithms need them all).
     */
    static final String DIRECT_BLOCKS_PROPERTY = "jmscclpp.collectives.directBlocks";

    static int directBlocksSetting() {
        return Tunables.intValue(DIRECT_BLOCKS_PROPERTY, MAX_BLOCKS, 16, MAX_BLOCKS);
    }
    /**
     * The blocks of a ce allReduce's kernel ({@value #CE_REDUCE_BLOCKS_PROPERTY}, 1 to
     * {@value #MAX_BLOCKS}, at most the direct kernels' most): they reduce what the copy engines
     * bring, beside the copy engines' traffic in the same memory, which more blocks slow down
     * (2 x H200, 1 GiB, stop 43: 16 blocks 384.7 GB/s, 24 384.1, 32 382.1, 12 359.5, too few to keep
     * up). Each rank reads its own; by default 16.
     */
    static final String CE_REDUCE_BLOCKS_PROPERTY = "jmscclpp.collectives.ceReduceBlocks";
    static final int CE_REDUCE_BLOCKS = 16;
    static final int MAX_REGISTRATIONS = 4096;
    static final int MAX_P2P = 32;
    /** The most blocks of one launch of the point-to-point kernel (a wave): fewer than the GPU holds at once. */
    static final int WAVE_BLOCKS = 256;
    /** From this size of a piece up, a sender stores into a registered receive buffer (collectives.cu's kPushMinBytes). */
    static final long PUSH_MIN_BYTES = 1L << 20;
    /**
     * Up to this size a message travels inline (collectives.cu's kP2pInlineBytes): the sender's kernel
     * writes it as LL16 packets into its area of the receiver's scratch, read from the caller's buffer
     * (no staging copy, no registration), and is done once the receiver's descriptor agrees: one
     * crossing of NVLink for each end. On 2 x H100 (sendrecv, CUDA-graph timing, NCCL in the same
     * run) up to 256 KiB at 4 KiB a block took 0.69-0.99 of NCCL's time from 1 to 256 KiB, up to 64 KiB
     * or at 8 KiB a block more (docs/collectives.md).
     */
    static final long INLINE_MAX_BYTES = 256L << 10;
    /** Bytes of an inline message per block on each end (4 KiB: 1 block at 4 KiB, 64 at 256 KiB). */
    static final long INLINE_BLOCK_BYTES = 4L << 10;
    static final int RUN_WORDS = 128;
    /** Bytes of payload one rank sends one peer in an ll16 call, at most. */
    static final long LL_MAX_BYTES = 1L << 20;
    /** Bytes of each staged area (IN and OUT) by default. */
    static final long STAGED_BYTES = 64L << 20;

    static final Algorithm ALL_REDUCE_LL = new Algorithm(CollectiveKind.ALL_REDUCE, "ll16", 1,
            "one shot: every rank sends its data to every peer as LL16 packets and reduces what it gets");
    static final Algorithm ALL_REDUCE_RSAG = new Algorithm(CollectiveKind.ALL_REDUCE, "rsag", 2,
            "rank r reduces its share of every rank's buffer over NVLink and stores the result into every rank's");
    static final Algorithm ALL_GATHER_LL = new Algorithm(CollectiveKind.ALL_GATHER, "ll16", 3,
            "one shot: every rank sends its slice to every peer as LL16 packets");
    static final Algorithm ALL_GATHER_MEMORY = new Algorithm(CollectiveKind.ALL_GATHER, "memory", 4,
            "every rank stores its slice into every peer's buffer over NVLink (16-byte stores)");
    static final Algorithm REDUCE_SCATTER_LL = new Algorithm(CollectiveKind.REDUCE_SCATTER, "ll16", 5,
            "one shot: every rank sends slot p to peer p as LL16 packets, each reduces its own");
    static final Algorithm REDUCE_SCATTER_RS = new Algorithm(CollectiveKind.REDUCE_SCATTER, "rs", 6,
            "rank r reduces slot r of every rank's buffer, read over NVLink");
    static final Algorithm BROADCAST_LL = new Algorithm(CollectiveKind.BROADCAST, "ll16", 7,
            "one shot: the root sends its data to every peer as LL16 packets");
    static final Algorithm BROADCAST_MEMORY = new Algorithm(CollectiveKind.BROADCAST, "memory", 8,
            "the root's data leaves it once over NVLink: with two ranks the root stores it into its peer's buffer;"
                    + " with more, each other rank reads its slice of it and stores that into every other rank's buffer");
    static final Algorithm REDUCE_LL = new Algorithm(CollectiveKind.REDUCE, "ll16", 9,
            "one shot: every rank sends its data to the root as LL16 packets");
    static final Algorithm REDUCE_RS = new Algorithm(CollectiveKind.REDUCE, "rs", 10,
            "each rank but the root (both ranks of two) reduces its share of every rank's buffer, read over NVLink,"
                    + " and stores it into the root's");
    static final Algorithm ALL_TO_ALL_LL = new Algorithm(CollectiveKind.ALL_TO_ALL, "ll16", 11,
            "one shot: slot p goes to peer p as LL16 packets");
    static final Algorithm ALL_TO_ALL_MEMORY = new Algorithm(CollectiveKind.ALL_TO_ALL, "memory", 12,
            "every rank stores slot p into peer p's buffer over NVLink");
    static final Algorithm ALL_REDUCE_PUSH = new Algorithm(CollectiveKind.ALL_REDUCE, "push", 14,
            "stores only: each rank stores the parts other ranks own into their scratch in rounds of chunks; each"
                    + " owner reduces its part and stores the result into every rank's buffer (staged calls run rsag)");
    static final Algorithm REDUCE_PUSH = new Algorithm(CollectiveKind.REDUCE, "push", 15,
            "stores only: on two ranks as allreduce's push, the results stored into the root's buffer; on more, a"
                    + " chain from rank 0 to the last, each adding its data to the partial sum and storing it into the"
                    + " next one's scratch, where the root is the first or the last rank and partial sums in the type"
                    + " change no bit (not avg, not fp16, bf16 or fp8 sums and products); otherwise, and staged, rs");
    static final Algorithm BROADCAST_PUSH = new Algorithm(CollectiveKind.BROADCAST, "push", 16,
            "stores only: a chain from the root round the ranks, each storing each chunk into the next one's buffer"
                    + " (staged calls run memory)");
    static final String CE = "ce";
    /** The most blocks of a ce kernel: its own slot's copy, beside the copy engines' traffic. */
    private static final int CE_BLOCKS = 16;
    private static final String BY_COPY_ENGINES = " by the GPU's copy engines, which the host's copy proxy starts at"
            + " the kernel's request";
    private static final String CE_SYNOPSIS = BY_COPY_ENGINES + " (staged calls run memory)";
    static final Algorithm ALL_REDUCE_CE = new Algorithm(CollectiveKind.ALL_REDUCE, CE, 21,
            "two ranks, both out of place: each rank's copy of the share the other reduces, in two chunks into"
                    + " the other's receive buffer, and the reduced chunks into the other's buffer" + BY_COPY_ENGINES
                    + "; each rank reduces its share as the chunks arrive, on few blocks (where a rank is in place,"
                    + " and on more ranks, it runs push; staged calls rsag)");
    static final Algorithm ALL_GATHER_CE = new Algorithm(CollectiveKind.ALL_GATHER, CE, 17,
            "every rank's slice copied into every peer's buffer" + CE_SYNOPSIS);
    static final Algorithm ALL_TO_ALL_CE = new Algorithm(CollectiveKind.ALL_TO_ALL, CE, 18,
            "slot p copied into peer p's buffer" + CE_SYNOPSIS);
    static final Algorithm BROADCAST_CE = new Algorithm(CollectiveKind.BROADCAST, CE, 19,
            "the root's data copied into every peer's buffer" + CE_SYNOPSIS);
    static final Algorithm SEND_CE = new Algorithm(CollectiveKind.SEND, CE, 20,
            "the sender's data copied into a registered receive buffer" + BY_COPY_ENGINES + " (as direct otherwise)");
    static final Algorithm RECV_CE = new Algorithm(CollectiveKind.RECV, CE, 20, SEND_CE.synopsis());
    static final Algorithm SEND_DIRECT = new Algorithm(CollectiveKind.SEND, "direct", 13,
            "the sender stores into a registered receive buffer over NVLink; otherwise the receiver copies from the"
                    + " sender's registered buffer or its staged copy");
    static final Algorithm RECV_DIRECT = new Algorithm(CollectiveKind.RECV, "direct", 13, SEND_DIRECT.synopsis());
    /** The direct algorithm of each kind first: it serves any size. */
    static final List<Algorithm> ALGORITHMS = List.of(ALL_REDUCE_RSAG, ALL_REDUCE_LL, ALL_GATHER_MEMORY, ALL_GATHER_LL,
            REDUCE_SCATTER_RS, REDUCE_SCATTER_LL, BROADCAST_MEMORY, BROADCAST_LL, REDUCE_RS, REDUCE_LL,
            ALL_TO_ALL_MEMORY, ALL_TO_ALL_LL, SEND_DIRECT, RECV_DIRECT, ALL_REDUCE_PUSH, REDUCE_PUSH, BROADCAST_PUSH,
            ALL_GATHER_CE, ALL_TO_ALL_CE, BROADCAST_CE, SEND_CE, RECV_CE, ALL_REDUCE_CE);

    // the Comm structure of the kernel file
    static final int COMM_BYTES = 216;
    /** The bit a kernel ORs into the abort word once one of its waits gave up (collectives.cu's kAbortSeen). */
    private static final long ABORT_SEEN = 1L << 8;
    /** How long the completion thread waits, after the abort word was set, for the kernels to end before it fails the call anyway. */
    private static final long ABORT_GRACE_NS = 2_000_000_000L;
    private static final int CALL_BYTES = 104;
    /**
     * Done words: one per block of the largest grid that tells the host, a wave of point-to-point
     * (WAVE_BLOCKS shared out, and at least one block for each of its calls).
     */
    private static final int DONE_WORDS = Math.max(WAVE_BLOCKS + MAX_P2P, Math.max(LL_MAX_BLOCKS, MAX_BLOCKS));
    // the P2p structure: count, pad, the operations, then a Done (word, value, system, pad)
    private static final int P2P_OP_BYTES = 80;
    private static final int P2P_DONE_AT = 8 + MAX_P2P * P2P_OP_BYTES;
    private static final int P2P_BYTES = P2P_DONE_AT + 24;
    // the device state buffer: runs, failed, p2p counters, registration table, semaphores, Comm
    private static final long STATE_RUNS = 0;
    private static final long STATE_FAILED = STATE_RUNS + RUN_WORDS * 8L;
    private static final long STATE_P2P_COUNT = STATE_FAILED + 8;
    private static final long STATE_P2P_DONE = STATE_P2P_COUNT + 2L * MAX_RANKS * 8;
    // finished blocks of the running send and receive with each rank, then the pieces of it still to skip
    private static final long STATE_REGISTRATIONS = STATE_P2P_DONE + 4L * MAX_RANKS * 4;
    private static final long STATE_SEMAPHORES = STATE_REGISTRATIONS + (long) MAX_REGISTRATIONS * (MAX_RANKS - 1) * 8;
    private static final long STATE_COMM = STATE_SEMAPHORES
            + (long) MAX_BLOCKS * (MAX_RANKS - 1) * MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES;
    /** Copy requests posted so far, then each block's progress in a ce allReduce (collectives.cu's Comm::ceHead). */
    private static final long STATE_CE_HEAD = STATE_COMM + COMM_BYTES;
    private static final long STATE_BYTES = STATE_CE_HEAD + 8 + MAX_BLOCKS * 8L;
    private static final int ERROR_WORDS = 11;

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    /** Where things lie in every rank's scratch. */
    record Layout(int n, long llSlotBytes, long stagedBytes) {
        static final long DESC = 0;
        static final long P2P_DESC = DESC + 2L * MAX_RANKS * 64;
        static final long P2P_REPLY = P2P_DESC + 2L * MAX_RANKS * 80;
        /** The copy-engine words (collectives.cu's kCeWords and ceWord): 8 kinds of [MAX_RANKS], up to LL. */
        static final long CE_WORDS = P2P_REPLY + 2L * MAX_RANKS * 80;
        static final long LL = 4096;

        long in() {
            return align(LL + 2L * n * llSlotBytes);
        }

        long out() {
            return in() + stagedBytes;
        }

        /** The inline areas: two of {@code 2 * INLINE_MAX_BYTES} (the packets) per sending rank, by message parity. */
        long inline() {
            return out() + stagedBytes;
        }

        long bytes() {
            return inline() + n * 2 * 2 * INLINE_MAX_BYTES;
        }

        private static long align(long x) {
            return (x + 4095) & ~4095L;
        }
    }

    private final CudaBackend backend;
    private final Layout layout;
    private final CudaStream stream;
    private final DeviceBuffer scratch;
    private final DeviceBuffer state;
    private final DeviceBuffer errorRecord;
    private final DeviceBuffer doneWords;
    private final DeviceAbortFlag abortFlag;
    private final CopyProxy copyProxy;
    /** The most blocks of a direct kernel ({@link #directBlocksSetting}), agreed at set-up. */
    private final int directBlocks;
    /** The blocks of a ce allReduce ({@link #CE_REDUCE_BLOCKS_PROPERTY}). */
    private final int ceReduceBlocks;
    /** The fewest blocks of an ll16 kernel ({@link #llMinBlocksFor}): in the stream form, and where it tells the host. */
    private final int llMinBlocks;
    private final int llMinBlocksTelling;
    private final List<AutoCloseable> owned;
    /** Loaded kernels: the moving module's two, and "collective" of each (type, op) module; guarded by themselves. */
    private @Nullable Kernel moveCollective;
    private @Nullable Kernel movePointToPoint;
    private final Kernel[] reducing = new Kernel[DataType.values().length * ReduceOp.values().length];
    private final Object enqueueLock = new Object();
    /** The parameters of every collective launch and of every point-to-point launch, rewritten per launch; guarded by enqueueLock. */
    private final KernelArgs collectiveArgs;
    private final KernelArgs pointToPointArgs;
    private long batchesIssued;
    private final ConcurrentLinkedQueue<Pending> pending = new ConcurrentLinkedQueue<>();
    private volatile @Nullable Thread poller;
    private volatile boolean pollerParked;

    /**
     * How a batch's last kernel tells the host that the batch is over (collectives.cu's Done): each
     * of its blocks writes {@code value} into its own word from {@code word} on (0: it does not tell),
     * with the system's ordering where one of the batch's buffers is host memory, else the GPU's.
     */
    private record Done(long word, long value, boolean system) {
        static final Done NONE = new Done(0, 0, false);

        boolean told() {
            return word != 0;
        }
    }

    /** A batch the completion thread watches: over once the first {@code words} done words hold {@code number}. */
    private record Pending(long number, MonoSink<Void> sink, long deadline, Batch batch, int words) {
        /** The batch as errors name it; made only for an error. */
        String what() {
            return describe(batch);
        }
    }

    private CudaCollectiveComm(Communicator communicator, CollectiveOptions options, TuningTable tuning,
                               CudaBackend backend, Layout layout, CudaStream stream, DeviceBuffer scratch,
                               DeviceBuffer state, DeviceBuffer errorRecord, DeviceBuffer doneWords,
                               DeviceAbortFlag abortFlag, CopyProxy copyProxy, int directBlocks,
                               List<AutoCloseable> owned) {
        super(communicator, options, ALGORITHMS, tuning, TOPOLOGY);
        this.backend = backend;
        this.layout = layout;
        this.stream = stream;
        this.scratch = scratch;
        this.state = state;
        this.errorRecord = errorRecord;
        this.doneWords = doneWords;
        this.abortFlag = abortFlag;
        this.copyProxy = copyProxy;
        this.directBlocks = directBlocks;
        this.ceReduceBlocks = Tunables.intValue(CE_REDUCE_BLOCKS_PROPERTY, CE_REDUCE_BLOCKS, 1, MAX_BLOCKS);
        this.llMinBlocks = llMinBlocksFor(layout.n(), false);
        this.llMinBlocksTelling = llMinBlocksFor(layout.n(), true);
        this.owned = owned;
        long comm = state.address() + STATE_COMM;
        this.collectiveArgs = KernelArgs.builder().pointer(comm).bytes(new byte[CALL_BYTES], 8).build();
        this.pointToPointArgs = KernelArgs.builder().pointer(comm).bytes(new byte[P2P_BYTES], 8).build();
    }

    // ---------------------------------------------------------------------------------------------
    // setup

    static Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options, TuningTable tuning) {
        return setUpOnVirtualThread(() -> setUp(communicator, options, tuning));
    }

    private static CudaCollectiveComm setUp(Communicator communicator, CollectiveOptions options, TuningTable tuning) {
        int rank = communicator.rank();
        int n = communicator.size();
        String phase = "collective setup";
        if (!(communicator.backend() instanceof CudaBackend cuda)) {
            throw invalid(rank, phase, "the CUDA collective engine runs on the cuda backend, not "
                    + communicator.backend().name());
        }
        if (n > MAX_RANKS) {
            throw invalid(rank, phase, "the CUDA collective engine runs 1 to " + MAX_RANKS + " ranks, not " + n);
        }
        if (communicator.bootstrap().nRanksPerNode() != n) {
            throw invalid(rank, phase, "the CUDA collective engine runs the GPUs of one host; this job has "
                    + communicator.bootstrap().nRanksPerNode() + " of its " + n + " ranks on this host");
        }
        Duration timeout = timeoutOf(communicator, options);
        long stagedBytes = options.scratchBytes() == 0 ? STAGED_BYTES : (options.scratchBytes() / 2) & ~4095L;
        if (stagedBytes < (1L << 20)) {
            throw invalid(rank, phase, "the CUDA engine needs at least 2 MiB of scratch, got " + options.scratchBytes());
        }
        // the IN and OUT areas, and the direct kernels' blocks: their block barriers pair block b of every rank
        int directBlocks = directBlocksSetting();
        SequencedMap<String, Long> settings = new LinkedHashMap<String, Long>();
        settings.put(DIRECT_BLOCKS_PROPERTY, (long) directBlocks);
        agree(communicator, 2 * stagedBytes, options.tag(), settings, timeout, phase);
        Layout layout = new Layout(n, 2 * LL_MAX_BYTES, stagedBytes);
        int tag = options.tag();
        List<AutoCloseable> owned = new ArrayList<>();
        try {
            CudaStream stream = own(owned, cuda.createStream("collectives of rank " + rank));
            DeviceBuffer scratch = own(owned, cuda.allocate(layout.bytes()));
            DeviceBuffer state = own(owned, cuda.allocate(STATE_BYTES));
            DeviceBuffer errorRecord = own(owned, cuda.allocateHostVisible(ERROR_WORDS * 8L));
            DeviceBuffer doneWords = own(owned, cuda.allocateHostVisible(DONE_WORDS * 8L));
            // set by the communicator's abort signal; every wait of the kernels looks at it
            DeviceAbortFlag abortFlag = own(owned, DeviceAbortFlag.create(communicator));
            // the copy-engine algorithms' request ring and a copy stream per peer, then their proxy
            // (closed first: it stops and waits for its copies before they go)
            DeviceBuffer ceRing = own(owned, CopyProxy.allocateRing(cuda));
            CopyProxy.Lane[] lanes = new CopyProxy.Lane[Math.max(0, n - 1)];
            for (int i = 0; i < lanes.length; i++) {
                lanes[i] = CopyProxy.Lane.of(own(owned, cuda.createStream("copy engine lane " + i + " of rank " + rank)));
            }
            CopyProxy copyProxy = own(owned, new CopyProxy(rank, ceRing.hostSegment(), lanes, abortFlag::raise,
                    timeout));
            stream.fillAsync(scratch.address(), (byte) 0, scratch.size());
            stream.fillAsync(state.address(), (byte) 0, state.size());
            stream.synchronize(timeout, "zeroing the collective scratch");
            RegisteredMemory mine = own(owned, communicator.registerMemory(scratch,
                    TransportFlags.of(Transport.CUDA_IPC)));

            long[] peerScratch = new long[MAX_RANKS - 1];
            Connection[] connections = new Connection[n];
            List<Mono<?>> steps = new ArrayList<>();
            for (int p = 0; p < n; p++) {
                if (p == rank) {
                    continue;
                }
                int peer = p;
                int i = peer < rank ? peer : peer - 1;
                steps.add(communicator.sendMemory(mine, peer, tag, timeout));
                steps.add(communicator.recvMemory(peer, tag, timeout).doOnNext(m -> peerScratch[i] = m.address()));
                steps.add(communicator.connect(peer, tag, EndpointConfig.of(Transport.CUDA_IPC), timeout)
                        .doOnNext(c -> connections[peer] = c));
            }
            Mono.when(steps).timeout(timeout.plusSeconds(5)).block();
            // a semaphore per block and peer, block 0 first, the same order on every rank
            MemoryDevice2DeviceSemaphore[][] semaphores = new MemoryDevice2DeviceSemaphore[directBlocks][n];
            List<Mono<?>> building = new ArrayList<>();
            for (int p = 0; p < n; p++) {
                if (p == rank) {
                    continue;
                }
                int peer = p;
                for (int b = 0; b < directBlocks; b++) {
                    int block = b;
                    building.add(MemoryDevice2DeviceSemaphore.build(communicator, connections[peer])
                            .doOnNext(s -> semaphores[block][peer] = s));
                }
            }
            Mono.when(building).timeout(timeout.multipliedBy(2).plusSeconds(5)).block();

            // the device state: semaphore handles and the Comm structure (the rest stays zero)
            int nPeers = n - 1;
            ByteBuffer sems = ByteBuffer.allocate(Math.max(1, directBlocks * nPeers
                    * MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES)).order(ByteOrder.LITTLE_ENDIAN);
            for (int b = 0; b < directBlocks; b++) {
                for (int p = 0; p < n; p++) {
                    if (p != rank) {
                        semaphores[b][p].deviceHandle().encode(sems);
                    }
                }
            }
            if (nPeers > 0) {
                cuda.copyFromHost(state, STATE_SEMAPHORES, MemorySegment.ofArray(sems.array()));
            }
            ByteBuffer c = ByteBuffer.allocate(COMM_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            long base = state.address();
            c.putLong(base + STATE_RUNS).putLong(base + STATE_FAILED).putLong(errorRecord.address())
                    .putLong(scratch.address());
            for (int i = 0; i < MAX_RANKS - 1; i++) {
                c.putLong(peerScratch[i]);
            }
            c.putLong(base + STATE_REGISTRATIONS).putLong(base + STATE_SEMAPHORES).putLong(base + STATE_P2P_COUNT)
                    .putLong(base + STATE_P2P_DONE).putInt(rank).putInt(n).putLong(Layout.DESC)
                    .putLong(Layout.P2P_DESC).putLong(Layout.P2P_REPLY).putLong(Layout.LL)
                    .putLong(layout.llSlotBytes()).putLong(layout.in()).putLong(layout.out())
                    .putLong(layout.stagedBytes())
                    .putLong(abortFlag.address()).putLong(ceRing.address()).putLong(base + STATE_CE_HEAD);
            if (c.position() != COMM_BYTES) {
                throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "the Comm structure is " + c.position()
                        + " bytes, not " + COMM_BYTES).rank(rank).phase(phase).build();
            }
            cuda.copyFromHost(state, STATE_COMM, MemorySegment.ofArray(c.array()));

            CudaCollectiveComm comm = new CudaCollectiveComm(communicator, options, tuning, cuda, layout, stream,
                    scratch, state, errorRecord, doneWords, abortFlag, copyProxy, directBlocks, owned);
            // the kernels every job needs, compiled before anyone's first call waits on a peer's compile
            comm.kernel(null, null, "collective");
            communicator.bootstrap().barrier(timeout).timeout(timeout.plusSeconds(5)).block();
            comm.startWatch();
            return comm;
        } catch (RuntimeException e) {
            Closeables.closeAll(owned.reversed(), e);
            owned.clear();
            throw e;
        }
    }

    private static <T extends AutoCloseable> T own(List<AutoCloseable> owned, T resource) {
        owned.add(resource);
        return resource;
    }

    private static JmscclppException invalid(int rank, String phase, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(rank).phase(phase).build();
    }

    // ---------------------------------------------------------------------------------------------
    // kernels

    /** The kernel {@code name} of the module for (type, op), or of the moving module for nulls; compiled on first use. */
    private Kernel kernel(@Nullable DataType type, @Nullable ReduceOp op, String name) {
        synchronized (reducing) {
            int slot = type == null ? -1 : type.ordinal() * ReduceOp.values().length + Objects.requireNonNull(op).ordinal();
            Kernel k;
            if (type == null) {
                k = name.equals("collective") ? moveCollective : movePointToPoint;
            } else {
                k = reducing[slot];
            }
            if (k != null) {
                return k;
            }
            String module = type == null ? "move" : type.label() + "-" + op.label();
            StringBuilder defines = new StringBuilder();
            defines.append("#define JMSCCLPP_NRANKS ").append(size).append('\n');
            defines.append("#define JMSCCLPP_DEVICE_TIMEOUT_NS ").append(timeout.toNanos()).append("ULL\n");
            defines.append("#define JMSCCLPP_CE_REDUCE_BLOCKS ").append(ceReduceBlocks).append('\n');
            if (type == null) {
                defines.append("#define JMSCCLPP_MOVE 1\n");
            } else {
                defines.append("#define JMSCCLPP_T ").append(type.code()).append('\n');
                defines.append("#define JMSCCLPP_OP ").append(op.code()).append('\n');
            }
            String source = defines + CudaKernelSource.get(KERNELS);
            k = DeviceKernels.load(backend, "collectives-" + module + "-n" + size, source)
                    .function(name);
            if (type == null) {
                if (name.equals("collective")) {
                    moveCollective = k;
                } else {
                    movePointToPoint = k;
                }
            } else {
                reducing[slot] = k;
            }
            return k;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // engine contract

    @Override
    protected Mono<Void> execute(Batch batch) {
        long number;
        int words;
        synchronized (enqueueLock) {
            number = ++batchesIssued;
            // where a kernel is the batch's last work on the stream, each of its blocks writes the batch
            // number into a word of its own; else a stream write after it writes the first word
            int blocks = enqueue(batch, stream, new Done(doneWords.address(), number, touchesHostMemory(batch)));
            if (blocks == 0) {
                stream.writeValueAsync(doneWords.address(), number);
            }
            words = Math.max(1, blocks);
        }
        long deadline = Waiting.deadline(batch.timeout());
        return Mono.create(sink -> track(new Pending(number, sink, deadline, batch, words)));
    }

    /** Whether a buffer of {@code batch} is host memory that host threads may read (pinned, mapped). */
    private static boolean touchesHostMemory(Batch batch) {
        for (Planned p : batch.calls()) {
            DeviceBuffer send = p.call().send();
            DeviceBuffer recv = p.call().recv();
            if (send != null && send.hostAccessible() || recv != null && recv.hostAccessible()) {
                return true;
            }
        }
        return false;
    }

    @Override
    protected Algorithm adjust(Planned planned) {
        // a table's ll16 for a call beyond its capacity gives way to the direct algorithm
        CollectiveCall call = planned.call();
        if (isLL(planned.algorithm()) && call.countBytes() > LL_MAX_BYTES) {
            return ALGORITHMS.stream().filter(a -> a.kind() == call.kind()).findFirst().orElseThrow();
        }
        return planned.algorithm();
    }

    /**
     * In place, an allToAll sends from a copy of the slots its peers overwrite, in the IN and OUT
     * areas (enqueueCollective: a direct call uses neither), so that what the peers store into its
     * buffer cannot overtake what it has yet to send, and it runs direct, as its peers out of place
     * do; only a buffer larger than the two areas is staged.
     */
    @Override
    protected boolean stagesInPlaceAllToAll(CollectiveCall call) {
        return call.sendBytes(rank, size) > 2 * layout.stagedBytes();
    }

    @Override
    protected void checkBuffer(DeviceBuffer buffer, String which) {
        checkGpuBuffer(backend, rank, buffer, which);
    }

    /** INVALID_USAGE naming {@code which} when {@code buffer} is not memory of {@code backend}'s GPU. */
    static void checkGpuBuffer(CudaBackend backend, int rank, DeviceBuffer buffer, String which) {
        if (!backend.owns(buffer)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the " + which + " buffer is not memory of this"
                    + " GPU (allocate it with the CUDA backend, or wrap a device pointer with CudaBackend.wrap): "
                    + buffer).rank(rank).phase("collective").build();
        }
    }

    @Override
    protected int maxRegistrations() {
        return MAX_REGISTRATIONS;
    }

    @Override
    protected TransportFlags registrationTransports() {
        return TransportFlags.of(Transport.CUDA_IPC);
    }

    @Override
    protected void onRegistered(Registration registration) {
        writeRegistration(registration, false);
    }

    @Override
    protected void onDeregistered(Registration registration) {
        writeRegistration(registration, true);
    }

    /** Writes (or clears) the peers' mapped bases of {@code registration} into the device table. */
    private void writeRegistration(Registration registration, boolean clear) {
        int index = registration.index();
        if (index >= MAX_REGISTRATIONS) {
            throw invalid(rank, "register", "the CUDA engine holds " + MAX_REGISTRATIONS + " registrations at most");
        }
        ByteBuffer row = ByteBuffer.allocate((MAX_RANKS - 1) * 8).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < MAX_RANKS - 1; i++) {
            int peer = i < rank ? i : i + 1;
            RegisteredMemory m = registration.peers().get(peer);
            row.putLong(clear || m == null ? 0 : m.address());
        }
        backend.copyFromHost(state, STATE_REGISTRATIONS + (long) index * (MAX_RANKS - 1) * 8,
                MemorySegment.ofArray(row.array()));
    }

    /** The completion thread completes the calls, so a close() from a call's callback runs there. */
    @Override
    protected boolean onCallThread() {
        return Thread.currentThread() == poller;
    }

    @Override
    protected void release() {
        Thread t = poller;
        if (t != null) {
            LockSupport.unpark(t);
        }
        RuntimeException first = null;
        try {
            stream.synchronize(timeout, "the collective communicator's last calls");
        } catch (RuntimeException e) {
            first = e;
        }
        Pending p;
        while ((p = pending.poll()) != null) {
            p.sink().error(invalid(rank, "close", "the collective communicator was closed before " + p.what()
                    + " completed"));
        }
        Closeables.closeAll(owned.reversed(), first);   // close failures ride on the timeout, if any, else are dropped
        owned.clear();
        if (first != null && first.getSuppressed().length == 0 && first instanceof JmscclppException j
                && j.code() == ErrorCode.TIMEOUT) {
            throw first;
        }
    }

    /**
     * The error the device recorded (ranks called different collectives, or named a registration
     * this rank lacks), as {@code ncclCommGetAsyncError} reports; empty while healthy. For the
     * stream form, whose calls have no completion of their own.
     */
    public Optional<JmscclppException> asyncError() {
        JmscclppException e = deviceError();
        if (e == null && !isClosed()) {
            e = abortFlag.failure("collective").orElse(null);
        }
        return Optional.ofNullable(e != null ? e : failure().orElse(null));
    }

    /**
     * The error of a batch whose kernels gave up: the abort signal's cause (ABORTED, REMOTE_ERROR
     * naming the rank that failed first), or TIMEOUT for a device wait past its deadline.
     */
    private JmscclppException abortError(Pending head) {
        JmscclppException proxy = copyProxy.failure();
        if (proxy != null) {
            return proxy;   // the copy proxy raised the flag: its error is this rank's cause
        }
        JmscclppException peer = peerFailure();
        JmscclppException e = peer != null ? peer : abortFlag.failure("collective").orElseThrow();
        if (e.code() == ErrorCode.TIMEOUT) {
            return JmscclppException.builder(ErrorCode.TIMEOUT, head.what() + ": a wait of its kernels passed the"
                    + " device deadline (" + timeout + "); the kernels returned early").rank(rank)
                    .tag(options.tag()).phase("collective").cause(e).build();
        }
        return e;
    }

    private @Nullable JmscclppException deviceError() {
        MemorySegment r = errorRecord.hostSegment();
        long code = (long) WORD.getAcquire(r, 0L);
        if (code == 0) {
            return null;
        }
        int peer = (int) r.get(LONG, 8);
        long[] mine = new long[4];
        long[] theirs = new long[4];
        for (int k = 0; k < 4; k++) {
            mine[k] = r.get(LONG, 16 + 8L * k);
            theirs[k] = r.get(LONG, 48 + 8L * k);
        }
        String detail;
        try {
            CallDescriptor m = CallDescriptor.decode(mine, rank);
            CallDescriptor t = CallDescriptor.decode(theirs, peer);
            boolean sending = m.kind() == CollectiveKind.SEND;
            detail = code == 2 ? "rank " + peer + " runs " + t.describe(this::algorithmName) + " on a registration"
                    + " this rank does not hold, or this rank named one rank " + peer + " lacks"
                    : code == 3 ? CallDescriptor.pointToPointMismatch(sending ? rank : peer, sending ? m : t,
                    sending ? peer : rank, sending ? t : m, this::algorithmName).orElse("sends and receives differ")
                    : m.kind().pointToPoint() != t.kind().pointToPoint()
                    ? CallDescriptor.crossedCalls(peer, t.describe(this::algorithmName), m.describe(this::algorithmName))
                    : "the ranks called different collectives: rank " + rank + " " + m.describe(this::algorithmName)
                    + ", rank " + peer + " " + t.describe(this::algorithmName);
        } catch (JmscclppException e) {
            detail = "the device recorded error " + code + " with rank " + peer;
        }
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(rank).peer(peer)
                .tag(options.tag()).phase("collective").build();
    }

    // ---------------------------------------------------------------------------------------------
    // completion

    /**
     * The highest batch number that the first {@code count} done words of {@code words} all reached:
     * a batch whose last kernel wrote a word per block is over once every block's word holds its
     * number (or a later one); words past {@code count}, left by wider grids, do not count.
     */
    static long doneUpTo(MemorySegment words, int count) {
        long done = Long.MAX_VALUE;
        for (int k = count - 1; k >= 0; k--) {
            done = Math.min(done, (long) WORD.getAcquire(words, 8L * k));
        }
        return done;
    }

    private void track(Pending p) {
        pending.add(p);
        Thread t = poller;
        if (t == null) {
            synchronized (pending) {
                if (poller == null) {
                    poller = Thread.ofVirtual().name("jmscclpp-collective-completion-r" + rank).start(this::poll);
                }
            }
        } else if (pollerParked) {
            LockSupport.unpark(t);
        }
    }

    /**
     * The completion thread: completes the pending calls whose batch number the stream has written,
     * in order, and fails them on errors. One per communicator, started by the first call, ended
     * by close: it spins while calls are pending and for a moment after, then parks until the
     * next call unparks it (so a call issued right after another finds it awake).
     */
    private void poll() {
        long idleSince = System.nanoTime();
        long lastQuery = idleSince;
        long park = 1_000;
        long abortSince = 0;
        while (!isClosed()) {
            Pending head = pending.peek();
            long now = System.nanoTime();
            if (head == null) {
                if (now - idleSince < 50_000) {
                    Thread.onSpinWait();
                } else {
                    pollerParked = true;
                    if (pending.isEmpty()) {
                        LockSupport.parkNanos(10_000_000);
                    }
                    pollerParked = false;
                    idleSince = System.nanoTime();
                }
                continue;
            }
            long done = doneUpTo(doneWords.hostSegment(), head.words());
            // read after done: a kernel sets its bit before the done word it writes after giving up
            long abortWord;
            try {
                abortWord = abortFlag.status();
            } catch (JmscclppException e) {
                continue;   // closed under this thread: the loop ends
            }
            // a batch the stream got past completes unless the device recorded an error
            JmscclppException error = deviceError();
            if (error == null && abortWord == DeviceAbortFlag.NONE && done < head.number() && peerFailure() != null) {
                // a peer left (in good order, so the job's abort signal stays down) while this batch
                // still needs it: end its kernels' waits too, then fail it as an abort
                abortFlag.raise();
                continue;
            }
            if (error == null && abortWord != DeviceAbortFlag.NONE) {
                if (done >= head.number()) {
                    // kernels that finished without needing the flag did their part (a peer that left
                    // after the batch completed, say); kernels that gave up left garbage
                    if ((abortWord & ABORT_SEEN) != 0) {
                        error = abortError(head);
                    }
                } else {
                    // the kernels return soon after the word was set: the call fails once they ended,
                    // so that its buffers are free, or after a grace if they do not
                    if (abortSince == 0) {
                        abortSince = now;
                    }
                    boolean ended;
                    try {
                        // the copy engines' copies too: a ce kernel that gave up leaves its copies running
                        ended = stream.isIdle() && copyProxy.idle();
                    } catch (JmscclppException e) {
                        ended = true;
                    }
                    if (ended || now - abortSince > ABORT_GRACE_NS) {
                        error = abortError(head);
                    }
                }
            }
            if (error == null && done < head.number() && now - lastQuery > 1_000_000) {
                lastQuery = now;
                try {
                    stream.isIdle();
                } catch (JmscclppException e) {
                    error = JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the collective stream failed (a kernel"
                            + " faulted, or a peer's memory went away): " + e.detail())
                            .rank(rank).phase("collective").cause(e).build();
                }
            }
            if (error == null && done < head.number() && now > head.deadline()) {
                error = JmscclppException.builder(ErrorCode.TIMEOUT, head.what() + " did not complete within the"
                        + " deadline").rank(rank).tag(options.tag()).phase("collective").build();
            }
            if (error != null) {
                breakWith(error);
                Pending p;
                while ((p = pending.poll()) != null) {
                    p.sink().error(error);
                }
                continue;
            }
            if (done >= head.number()) {
                pending.poll();
                head.sink().success();
                idleSince = System.nanoTime();
                park = 1_000;
                continue;
            }
            if (now - idleSince < 50_000) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(park);
                park = Math.min(park * 2, 50_000);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // enqueueing

    private static boolean isLL(Algorithm a) {
        return a.name().equals("ll16");
    }

    /**
     * Enqueues every call of {@code batch} on {@code on}: sends and receives first, then the
     * collectives in order. Where the batch's last work on the stream is a kernel, it tells the host
     * ({@code done}) when it ends; returns its blocks (the words it writes), else 0.
     */
    private int enqueue(Batch batch, CudaStream on, Done done) {
        List<Planned> p2p = new ArrayList<>();
        List<Planned> collectives = new ArrayList<>();
        for (Planned p : batch.calls()) {
            (p.call().kind().pointToPoint() ? p2p : collectives).add(p);
        }
        int told = 0;
        if (!p2p.isEmpty()) {
            told = enqueuePointToPoint(p2p, on, collectives.isEmpty() ? done : Done.NONE);
        }
        for (int k = 0; k < collectives.size(); k++) {
            told = enqueueCollective(collectives.get(k), on, k == collectives.size() - 1 ? done : Done.NONE);
        }
        return told;
    }

    /**
     * Enqueues one collective on {@code on}; where one kernel is the whole call, that kernel tells
     * the host ({@code done}) when it ends. Returns its blocks where it does, else 0.
     */
    private int enqueueCollective(Planned p, CudaStream on, Done done) {
        CollectiveCall call = p.call();
        DataType type = call.type();
        CollectiveKind kind = call.kind();
        Kernel kernel = kernel(kind.reduces() ? type : null, kind.reduces() ? call.op() : null, "collective");
        int w = type.bytes();
        long count = call.count();
        long send = call.send() == null ? 0 : call.send().address();
        long recv = call.recv() == null ? 0 : call.recv().address();
        if (isLL(p.algorithm())) {
            long packets = (count * w + 7) / 8;
            int blocks = (int) Math.clamp((packets + THREADS - 1) / THREADS,
                    done.told() ? llMinBlocksTelling : llMinBlocks, LL_MAX_BLOCKS);
            launch(on, kernel, blocks, callArgs(p, send, recv, count, 0, false, p.inPlace(), done));
            return done.told() ? blocks : 0;
        }
        if (p.descriptor().direct()) {
            // push kernels take every block at any size: each block stores at a few GB/s (its stores in
            // flight), and a chain's pipeline runs per block
            boolean push = p.algorithm().name().equals("push");
            boolean ce = p.algorithm().name().equals(CE);
            // a ce kernel copies only this rank's own slot (local memory) while the copy engines run; a ce
            // allReduce takes the push kernels' grid (where a rank is in place it runs push, deciding
            // in the kernel from both ranks' descriptors) and reduces on ceReduceBlocks of it
            int blocks = push || (ce && kind == CollectiveKind.ALL_REDUCE) ? directBlocks
                    : ce ? Math.min(CE_BLOCKS, directBlocks(call.size(size)))
                    : directBlocks(call.size(size));
            int algo = push ? 2 : ce ? 3 : 1;
            if (kind == CollectiveKind.ALL_TO_ALL && p.inPlace()) {
                // the peers store into this buffer as soon as they have this call's descriptor, which the kernel
                // sends after this copy: it sends from the copy, in the IN and OUT areas (stagesInPlaceAllToAll),
                // of the slots before and after its own (which no peer writes: the kernels leave it in place)
                long in = scratch.address() + layout.in();
                long slot = call.countBytes();
                on.copyAsync(in, send, rank * slot);
                on.copyAsync(in + (rank + 1) * slot, send + (rank + 1) * slot, (size - rank - 1L) * slot);
                send = in;
            }
            if (ce) {
                copyProxy.arm();
            }
            launch(on, kernel, blocks, callArgs(p, send, recv, count, algo, false, p.inPlace(), done));
            return done.told() ? blocks : 0;
        }
        // staged: pieces through this rank's IN and OUT areas
        int inBlocks = kind == CollectiveKind.REDUCE_SCATTER || kind == CollectiveKind.ALL_TO_ALL ? size : 1;
        int outBlocks = kind == CollectiveKind.ALL_GATHER || kind == CollectiveKind.ALL_TO_ALL ? size : 1;
        long perPiece = Math.max(1, layout.stagedBytes() / ((long) w * Math.max(inBlocks, outBlocks)));
        long in = scratch.address() + layout.in();
        long out = scratch.address() + layout.out();
        boolean readsSend = call.readsSend(rank);
        boolean writesRecv = call.writesRecv(rank);
        long first = 0;
        do {
            long m = Math.min(perPiece, count - first);
            long bytes = m * w;
            if (readsSend) {
                for (int j = 0; j < inBlocks; j++) {
                    on.copyAsync(in + j * bytes, send + (j * count + first) * w, bytes);
                }
            }
            launch(on, kernel, directBlocks(Math.max(inBlocks, outBlocks) * bytes),
                    callArgs(p, in, out, m, 1, true, false, Done.NONE));
            if (writesRecv) {
                for (int j = 0; j < outBlocks; j++) {
                    on.copyAsync(recv + (j * count + first) * w, out + j * bytes, bytes);
                }
            }
            first += m;
        } while (first < count);
        return 0;
    }

    /**
     * Blocks of a direct kernel moving {@code bytes}: as many as keep NVLink busy, half of
     * {@link #directBlocks} up to 64 MiB, then all of them.
     */
    private int directBlocks(long bytes) {
        long perBlock = (long) THREADS * 4 * 16;
        int cap = bytes <= (64L << 20) ? directBlocks / 2 : directBlocks;
        return (int) Math.clamp((bytes + perBlock - 1) / perBlock, 1, cap);
    }

    /** The reused parameters of a collective launch, rewritten for this one (under the enqueue lock). */
    private KernelArgs callArgs(Planned p, long send, long recv, long count, int algo, boolean staged,
                                boolean inPlace, Done done) {
        CollectiveCall call = p.call();
        ByteBuffer b = ByteBuffer.allocate(CALL_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (long word : p.descriptor().words()) {
            b.putLong(word);
        }
        b.putLong(send).putLong(recv).putLong(count).putInt(call.kind().code()).putInt(algo)
                .putInt(call.root()).putInt(inPlace ? 1 : 0).putInt(staged ? 1 : 0).putInt(call.type().bytes())
                .putLong(done.word()).putLong(done.value()).putInt(done.system() ? 1 : 0).putInt(0);
        collectiveArgs.set(1, b.array());
        return collectiveArgs;
    }

    private static void launch(CudaStream on, Kernel kernel, int blocks, KernelArgs args) {
        on.launch(kernel, LaunchConfig.of(blocks, THREADS), args);
    }

    /**
     * The sends and receives of a batch, in waves (the i-th send to and receive from each peer in
     * wave i, each wave one launch of the point-to-point kernel) and pieces of at most this rank's
     * share of the IN area. Sends and receives of this rank with itself are copies on the stream,
     * in order. The last launch tells the host ({@code done}) when it ends; returns its blocks, or 0
     * where there was none (every call is with this rank itself).
     */
    private int enqueuePointToPoint(List<Planned> calls, CudaStream on, Done done) {
        if (calls.stream().anyMatch(p -> p.algorithm().name().equals(CE))) {
            copyProxy.arm();
        }
        Map<Integer, List<Planned>> sends = new LinkedHashMap<>();
        Map<Integer, List<Planned>> recvs = new LinkedHashMap<>();
        for (Planned p : calls) {
            int peer = p.call().peer();
            (p.call().kind() == CollectiveKind.SEND ? sends : recvs).computeIfAbsent(peer, k -> new ArrayList<>()).add(p);
        }
        // sends to itself and receives from itself pair up, alike: the batch was checked when it was planned
        List<Planned> toSelf = sends.getOrDefault(rank, List.of());
        List<Planned> fromSelf = recvs.getOrDefault(rank, List.of());
        for (int k = 0; k < toSelf.size(); k++) {
            CollectiveCall s = toSelf.get(k).call();
            CollectiveCall r = fromSelf.get(k).call();
            long bytes = s.countBytes();
            if (bytes > 0) {
                on.copyAsync(Objects.requireNonNull(r.recv()).address(), Objects.requireNonNull(s.send()).address(),
                        bytes);
            }
        }
        sends.remove(rank);
        recvs.remove(rank);
        long slot = layout.stagedBytes() / size;
        int waves = 0;
        for (List<Planned> l : sends.values()) {
            waves = Math.max(waves, l.size());
        }
        for (List<Planned> l : recvs.values()) {
            waves = Math.max(waves, l.size());
        }
        Kernel kernel = kernel(null, null, "pointToPoint");
        int blocks = 0;
        for (int wave = 0; wave < waves; wave++) {
            // pieces: every message of the wave cut at the slot size, the same cuts on both ends
            long pieces = 1;
            List<Planned> ops = new ArrayList<>();
            for (List<Planned> l : sends.values()) {
                if (wave < l.size()) {
                    ops.add(l.get(wave));
                }
            }
            for (List<Planned> l : recvs.values()) {
                if (wave < l.size()) {
                    ops.add(l.get(wave));
                }
            }
            for (Planned p : ops) {
                pieces = Math.max(pieces, pieces(p, slot));
            }
            for (long piece = 0; piece < pieces; piece++) {
                // a message takes part in as many pieces as it needs, and both its ends count alike
                long number = piece;
                boolean last = wave == waves - 1 && piece == pieces - 1;
                blocks = launchWave(on, kernel, ops.stream().filter(p -> number < pieces(p, slot)).toList(), piece,
                        slot, last ? done : Done.NONE);
            }
        }
        return done.told() ? blocks : 0;
    }

    /** Pieces of at most {@code slot} bytes a message travels in: at least one (an empty message too). */
    private static long pieces(Planned p, long slot) {
        long bytes = p.call().countBytes();
        return Math.max(1, (bytes + slot - 1) / slot);
    }

    private int launchWave(CudaStream on, Kernel kernel, List<Planned> ops, long piece, long slot, Done done) {
        if (ops.size() > MAX_P2P) {
            throw invalid(rank, "send/recv", "a wave of more than " + MAX_P2P + " sends and receives");
        }
        ByteBuffer b = ByteBuffer.allocate(P2P_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(ops.size()).putInt(0);
        // blocks: as many as copying the piece wants on an end that may copy (a send always may; a receive
        // only into an unregistered buffer, else the sender stores and one block waits), 4 KiB a block
        // for an inline message and 64 KiB otherwise, at most
        // WAVE_BLOCKS in all; the ends need not agree, each counts its own
        int[] blocksOf = new int[ops.size()];
        int wanted = 0;
        for (int k = 0; k < ops.size(); k++) {
            Planned p = ops.get(k);
            long total = p.call().countBytes();
            long bytes = Math.min(slot, total - Math.min(total, piece * slot));
            boolean copies = p.call().kind() == CollectiveKind.SEND || !p.descriptor().direct() || bytes < PUSH_MIN_BYTES;
            long per = total <= INLINE_MAX_BYTES ? INLINE_BLOCK_BYTES : 64L << 10;
            blocksOf[k] = copies ? (int) Math.clamp((bytes + per - 1) / per, 1, directBlocks) : 1;
            wanted += blocksOf[k];
        }
        if (wanted > WAVE_BLOCKS) {
            int grid = 0;
            for (int k = 0; k < blocksOf.length; k++) {
                blocksOf[k] = Math.max(1, blocksOf[k] * WAVE_BLOCKS / wanted);
                grid += blocksOf[k];
            }
            wanted = grid;
        }
        // checked before anything is enqueued: each block of a telling wave writes a done word of its own
        if (done.told() && wanted > DONE_WORDS) {
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "a wave of " + wanted + " blocks, more than"
                    + " the " + DONE_WORDS + " done words").rank(rank).phase("send/recv").build();
        }
        int nextBlock = 0;
        for (int k = 0; k < ops.size(); k++) {
            Planned p = ops.get(k);
            CollectiveCall call = p.call();
            boolean isSend = call.kind() == CollectiveKind.SEND;
            long total = call.countBytes();
            long from = Math.min(total, piece * slot);
            long bytes = Math.min(slot, total - from);
            // an inline send: the kernel reads the caller's buffer itself and sends it as packets
            boolean inline = isSend && total <= INLINE_MAX_BYTES;
            long[] words = (inline ? p.descriptor().with(CallDescriptor.INLINE) : p.descriptor()).words();
            long buffer;
            if (isSend) {
                long src = Objects.requireNonNull(call.send()).address() + from;
                if (inline) {
                    words[2] = 0;
                    buffer = src;
                } else if (p.descriptor().direct()) {
                    words[2] = p.descriptor().sendLocation() + from;
                    buffer = src;
                } else {
                    buffer = scratch.address() + layout.in() + (long) call.peer() * slot;
                    on.copyAsync(buffer, src, bytes);
                    words[2] = 0;
                }
            } else {
                buffer = Objects.requireNonNull(call.recv()).address() + from;
                if (p.descriptor().direct()) {
                    words[3] = p.descriptor().recvLocation() + from;
                }
            }
            int blocks = blocksOf[k];
            for (long word : words) {
                b.putLong(word);
            }
            b.putLong(buffer).putLong(bytes).putInt(call.peer()).putInt(isSend ? 1 : 0).putInt(nextBlock)
                    .putInt(blocks).putLong(total).putInt(Math.toIntExact(piece)).putInt(Math.toIntExact(pieces(p, slot)));
            nextBlock += blocks;
        }
        b.putLong(P2P_DONE_AT, done.word()).putLong(P2P_DONE_AT + 8, done.value())
                .putInt(P2P_DONE_AT + 16, done.system() ? 1 : 0);
        pointToPointArgs.set(1, b.array());
        launch(on, kernel, nextBlock, pointToPointArgs);
        return nextBlock;
    }

    static String describe(Batch batch) {
        if (batch.calls().size() == 1) {
            return batch.calls().get(0).call().describe() + " #" + batch.number();
        }
        return "group #" + batch.number() + " of " + batch.calls().size() + " calls";
    }

    @Override
    public String toString() {
        return "CudaCollectiveComm[rank " + rank + " of " + size + ", " + backend + "]";
    }

    // ---------------------------------------------------------------------------------------------
    // the stream form

    /**
     * The calls of this communicator enqueued on {@code on} instead of its own stream: each method
     * returns once the work is enqueued (no completion, no wait), in order with whatever else the
     * caller enqueues there, and capturable in a CUDA graph. The same rules hold as for the Mono
     * form (every rank the same calls in the same order, counted together with the Mono calls);
     * errors that only the device can see show in {@link #asyncError()} once the stream got there,
     * and break the communicator. Argument errors throw INVALID_USAGE at once.
     */
    public StreamCollectives on(CudaStream on) {
        return on(on, CallOptions.defaults());
    }

    /** {@link #on(CudaStream)} with call options (an algorithm; the stream form has no deadline of its own). */
    public StreamCollectives on(CudaStream on, CallOptions callOptions) {
        return new StreamCollectives(this, Objects.requireNonNull(on, "on"), Objects.requireNonNull(callOptions,
                "callOptions"));
    }

    /** Plans and enqueues {@code calls} on {@code on} (the stream form). */
    void enqueueOn(CudaStream on, CallOptions callOptions, List<CollectiveCall> calls, boolean group) {
        Batch batch = planBatch(calls, callOptions, group);
        try {
            synchronized (enqueueLock) {
                enqueue(batch, on, Done.NONE);
            }
        } catch (RuntimeException e) {
            breakWith(e);
            throw e;
        }
    }

    /** The enqueue-on-a-stream form of the calls; see {@link CudaCollectiveComm#on}. */
    public static final class StreamCollectives {
        private final CudaCollectiveComm comm;
        private final CudaStream stream;
        private final CallOptions callOptions;

        StreamCollectives(CudaCollectiveComm comm, CudaStream stream, CallOptions callOptions) {
            this.comm = comm;
            this.stream = stream;
            this.callOptions = callOptions;
        }

        public CudaStream stream() {
            return stream;
        }

        public void allReduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type, ReduceOp op) {
            execute(CollectiveCall.allReduce(send, recv, count, type, op));
        }

        public void allGather(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long sendCount, DataType type) {
            execute(CollectiveCall.allGather(send, recv, sendCount, type));
        }

        public void reduceScatter(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long recvCount, DataType type, ReduceOp op) {
            execute(CollectiveCall.reduceScatter(send, recv, recvCount, type, op));
        }

        public void broadcast(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type, int root) {
            execute(CollectiveCall.broadcast(send, recv, count, type, root));
        }

        public void reduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type, ReduceOp op,
                           int root) {
            execute(CollectiveCall.reduce(send, recv, count, type, op, root));
        }

        public void allToAll(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type) {
            execute(CollectiveCall.allToAll(send, recv, count, type));
        }

        public void send(@Nullable DeviceBuffer send, long count, DataType type, int peer) {
            execute(CollectiveCall.send(send, count, type, peer));
        }

        public void recv(@Nullable DeviceBuffer recv, long count, DataType type, int peer) {
            execute(CollectiveCall.recv(recv, count, type, peer));
        }

        /** Enqueues one call. */
        public void execute(CollectiveCall call) {
            comm.enqueueOn(stream, callOptions, List.of(call), false);
        }

        /** Enqueues the calls {@code calls} records as one group (see {@link CollectiveComm#group}). */
        public void group(Consumer<CollectiveGroup> calls) {
            comm.enqueueOn(stream, callOptions, comm.record(calls), true);
        }
    }
}
