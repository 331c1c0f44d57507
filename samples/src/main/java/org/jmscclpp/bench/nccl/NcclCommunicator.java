package org.jmscclpp.bench.nccl;

import com.sun.jna.Memory;
import java.lang.System.Logger.Level;
import java.lang.ref.Reference;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.IntSupplier;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaContext;
import org.jmscclpp.cuda.CudaStream;

/**
 * One rank's NCCL communicator on one GPU ({@link CudaBackend}), for running the same collectives
 * as jmscclpp's through {@code libnccl} in the same job: the baseline column of
 * {@code jmscclpp bench coll}.
 *
 * <h2>Waiting</h2>
 * The communicator is created non-blocking ({@code ncclConfig_t.blocking = 0}): NCCL calls return
 * at once, possibly with {@code ncclInProgress}, and this class polls
 * {@code ncclCommGetAsyncError} with {@link Waiting}'s spin-then-park pacing until the call is
 * done, up to a deadline. So no call hangs: {@link #init} gives up after its {@code timeout} (a rank
 * that never joins), aborts the communicator and throws {@link ErrorCode#TIMEOUT}; each operation
 * waits at most that same {@code timeout} for NCCL to accept it. Operations are enqueued on a
 * {@link CudaStream} and return once enqueued; wait on the stream for the data.
 *
 * <h2>Errors</h2>
 * A failed call throws {@link JmscclppException} with {@code ncclGetErrorString} and
 * {@code ncclGetLastError} in the detail, the rank and the phase (the call): code
 * {@link ErrorCode#INVALID_USAGE} for {@code ncclInvalidArgument} / {@code ncclInvalidUsage},
 * {@link ErrorCode#REMOTE_ERROR} for {@code ncclRemoteError}, {@link ErrorCode#SYSTEM_ERROR} for
 * the rest. After an error or a timeout the communicator is broken: it is aborted
 * ({@code ncclCommAbort}) and later operations are {@link ErrorCode#INVALID_USAGE}.
 *
 * <h2>Threads and the environment</h2>
 * Every NCCL call follows {@code cuCtxSetCurrent} of the backend's context on the same OS thread
 * with no park in between (NCCL's runtime calls pick the device up from the current context).
 * Calls are serialised on this object. On hosts with NVLink multicast, start the process with
 * {@code NCCL_NVLS_ENABLE=0} (Java cannot set its own environment; {@link #init} logs a warning
 * when the variable is not set).
 */
public final class NcclCommunicator implements AutoCloseable {

    /** How long {@code ncclCommAbort} may take before the communicator is left behind (logged). */
    static final Duration ABORT_GRACE = Duration.ofSeconds(10);

    private static final System.Logger LOG = System.getLogger(NcclCommunicator.class.getName());

    private final CudaBackend backend;
    private final CudaContext context;
    private final long comm;
    private final int rank;
    private final int nRanks;
    private final Duration timeout;
    /** Guarded by this. */
    private boolean closed;
    /** Guarded by this: the communicator was aborted (after an error, a timeout or a failed close). */
    private boolean aborted;

    private NcclCommunicator(CudaBackend backend, long comm, int rank, int nRanks, Duration timeout) {
        this.backend = backend;
        this.context = backend.context();
        this.comm = comm;
        this.rank = rank;
        this.nRanks = nRanks;
        this.timeout = timeout;
    }

    /**
     * Why NCCL cannot be used in this process (the library named by {@code JMSCCLPP_NCCL_LIBRARY},
     * else {@code libnccl.so.2}, does not load: each attempt and its error), or empty when it can.
     */
    public static Optional<String> unavailableReason() {
        return Nccl.unavailableReason();
    }

    /**
     * The loaded library's version ({@code ncclGetVersion}), such as {@code 2.28.9}.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when the library is unavailable
     */
    public static String libraryVersion() {
        requireAvailable("version");
        int[] code = new int[1];
        int result = Nccl.ncclGetVersion(code);
        if (result != Nccl.SUCCESS) {
            throw error(result, 0, "ncclGetVersion", -1, "version");
        }
        return Nccl.versionString(code[0]);
    }

    /**
     * A new {@code ncclUniqueId} (128 bytes) from {@code ncclGetUniqueId}. Rank 0 calls it (it also
     * starts NCCL's bootstrap root in this process) and sends it to the other ranks, over the job's
     * bootstrap, before every rank calls {@link #init}.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when the library is unavailable or
     *                           NCCL finds no network interface for its bootstrap
     */
    public static byte[] uniqueId() {
        requireAvailable("uniqueId");
        byte[] id = new byte[Nccl.UNIQUE_ID_BYTES];
        int result = Nccl.ncclGetUniqueId(id);
        if (result != Nccl.SUCCESS) {
            throw error(result, 0, "ncclGetUniqueId", -1, "uniqueId");
        }
        return id;
    }

    /**
     * Creates this rank's communicator of {@code nRanks} on {@code backend}'s GPU
     * ({@code ncclCommInitRankConfig}, non-blocking) and returns once every rank has joined.
     * The communicator holds the backend's GPU context until {@link #close}.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} naming the reason when the library
     *                           is unavailable, or when NCCL fails; {@link ErrorCode#INVALID_USAGE}
     *                           for a rank outside {@code [0, nRanks)}, an id that is not 128 bytes,
     *                           a closed backend; {@link ErrorCode#TIMEOUT} naming the rank when
     *                           the communicator is not ready after {@code timeout} (a rank did not
     *                           join): it is then aborted
     */
    public static NcclCommunicator init(CudaBackend backend, int nRanks, byte[] uniqueId, int rank, Duration timeout) {
        requireAvailable("init");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(uniqueId, "uniqueId");
        Objects.requireNonNull(timeout, "timeout");
        if (nRanks < 1 || rank < 0 || rank >= nRanks) {
            throw invalid("init", rank, "rank " + rank + " is not in [0, " + nRanks + ")");
        }
        if (uniqueId.length != Nccl.UNIQUE_ID_BYTES) {
            throw invalid("init", rank, "an ncclUniqueId has " + Nccl.UNIQUE_ID_BYTES + " bytes, not " + uniqueId.length);
        }
        if (backend.isClosed()) {
            throw invalid("init", rank, "the CUDA backend is closed");
        }
        if (!"0".equals(System.getenv("NCCL_NVLS_ENABLE"))) {
            LOG.log(Level.WARNING, "NCCL_NVLS_ENABLE is not 0 in this process: on hosts with NVLink multicast NCCL may use it;"
                    + " start the process with NCCL_NVLS_ENABLE=0 where multicast must stay off");
        }
        long deadline = Waiting.deadline(timeout);
        Memory config = Nccl.config(false);
        long[] handle = new long[1];
        backend.retain();
        try {
            backend.context().makeCurrent();
            int result = Nccl.ncclCommInitRankConfig(handle, nRanks, new Nccl.UniqueId(uniqueId), rank, config);
            Reference.reachabilityFence(config);
            if (result != Nccl.SUCCESS && result != Nccl.IN_PROGRESS) {
                JmscclppException e = error(result, handle[0], "ncclCommInitRankConfig(" + nRanks + " ranks)", rank,
                        "init");
                if (handle[0] != 0) {
                    abortWithin(backend.context(), handle[0], rank);
                }
                throw e;
            }
            if (handle[0] == 0) {
                throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "ncclCommInitRankConfig gave no communicator")
                        .rank(rank).phase("init").build();
            }
        } catch (RuntimeException e) {
            backend.unretain();
            throw e;
        }
        NcclCommunicator c = new NcclCommunicator(backend, handle[0], rank, nRanks, timeout);
        synchronized (c) {
            c.awaitDone("init (" + nRanks + " ranks; a rank that never called init keeps the others waiting)",
                    deadline);
        }
        return c;
    }

    /** This rank. */
    public int rank() {
        return rank;
    }

    /** Ranks in the communicator. */
    public int size() {
        return nRanks;
    }

    /** The library's version, such as {@code 2.28.9}. */
    public String version() {
        return libraryVersion();
    }

    /**
     * Enqueues {@code ncclAllReduce} of {@code count} elements of {@code dataType}
     * ({@code ncclDataType_t}) with {@code redOp} ({@code ncclRedOp_t}) on {@code stream}; in place
     * when the pointers are equal. Returns once NCCL accepted it.
     *
     * @throws JmscclppException see the class's errors; {@link ErrorCode#TIMEOUT} when NCCL did not
     *                           accept the call within the communicator's timeout
     */
    public void allReduce(long sendPtr, long recvPtr, long count, int dataType, int redOp, CudaStream stream) {
        checkCount(count, "allReduce");
        enqueue("allReduce", stream, () -> Nccl.ncclAllReduce(sendPtr, recvPtr, count, dataType, redOp, comm,
                stream.handle()));
    }

    /**
     * Enqueues {@code ncclAllGather}: every rank's {@code sendCount} elements land at
     * {@code recvPtr + rank * sendCount} elements on every rank.
     */
    public void allGather(long sendPtr, long recvPtr, long sendCount, int dataType, CudaStream stream) {
        checkCount(sendCount, "allGather");
        enqueue("allGather", stream, () -> Nccl.ncclAllGather(sendPtr, recvPtr, sendCount, dataType, comm,
                stream.handle()));
    }

    /**
     * Enqueues {@code ncclReduceScatter}: rank r's {@code recvCount} elements at {@code recvPtr} are
     * the reduction with {@code redOp} of block r ({@code recvCount} elements at
     * {@code sendPtr + r * recvCount} elements) of every rank's send buffer; in place when
     * {@code recvPtr} is block r of {@code sendPtr}.
     */
    public void reduceScatter(long sendPtr, long recvPtr, long recvCount, int dataType, int redOp, CudaStream stream) {
        checkCount(recvCount, "reduceScatter");
        enqueue("reduceScatter", stream, () -> Nccl.ncclReduceScatter(sendPtr, recvPtr, recvCount, dataType, redOp,
                comm, stream.handle()));
    }

    /**
     * Enqueues {@code ncclBroadcast}: {@code count} elements of {@code root}'s {@code sendPtr} land
     * at {@code recvPtr} on every rank ({@code sendPtr} is read on the root only); in place when the
     * pointers are equal.
     */
    public void broadcast(long sendPtr, long recvPtr, long count, int dataType, int root, CudaStream stream) {
        checkCount(count, "broadcast");
        checkRank(root, "broadcast");
        enqueue("broadcast", stream, () -> Nccl.ncclBroadcast(sendPtr, recvPtr, count, dataType, root, comm,
                stream.handle()));
    }

    /**
     * Enqueues {@code ncclReduce}: the reduction with {@code redOp} of every rank's {@code count}
     * elements at {@code sendPtr} lands at {@code root}'s {@code recvPtr} ({@code recvPtr} is written
     * on the root only); in place when the pointers are equal.
     */
    public void reduce(long sendPtr, long recvPtr, long count, int dataType, int redOp, int root, CudaStream stream) {
        checkCount(count, "reduce");
        checkRank(root, "reduce");
        enqueue("reduce", stream, () -> Nccl.ncclReduce(sendPtr, recvPtr, count, dataType, redOp, root, comm,
                stream.handle()));
    }

    /**
     * Enqueues an all-to-all as nccl-tests does: one group of {@code ncclSend} of block {@code p}
     * of {@code sendPtr} to rank {@code p} and {@code ncclRecv} of rank {@code p}'s block into block
     * {@code p} of {@code recvPtr}, for every rank {@code p} (this one included); a block is
     * {@code countPerPeer} elements.
     */
    public void allToAll(long sendPtr, long recvPtr, long countPerPeer, int dataType, CudaStream stream) {
        checkCount(countPerPeer, "allToAll");
        long blockBytes = countPerPeer * elementBytes(dataType, rank);
        enqueue("allToAll", stream, () -> group(() -> {
            for (int peer = 0; peer < nRanks; peer++) {
                int result = Nccl.ncclSend(sendPtr + peer * blockBytes, countPerPeer, dataType, peer, comm,
                        stream.handle());
                if (result != Nccl.SUCCESS) {
                    return result;
                }
                result = Nccl.ncclRecv(recvPtr + peer * blockBytes, countPerPeer, dataType, peer, comm, stream.handle());
                if (result != Nccl.SUCCESS) {
                    return result;
                }
            }
            return Nccl.SUCCESS;
        }));
    }

    /**
     * Enqueues one group of {@code ncclSend} of {@code count} elements to {@code sendPeer} and
     * {@code ncclRecv} of {@code count} elements from {@code recvPeer} (nccl-tests' sendrecv: send
     * to the next rank, receive from the previous).
     */
    public void sendRecv(long sendPtr, int sendPeer, long recvPtr, int recvPeer, long count, int dataType,
                         CudaStream stream) {
        checkCount(count, "sendRecv");
        for (int peer : new int[] {sendPeer, recvPeer}) {
            if (peer < 0 || peer >= nRanks) {
                throw invalid("sendRecv", rank, "peer " + peer + " is not in [0, " + nRanks + ")");
            }
        }
        enqueue("sendRecv", stream, () -> group(() -> {
            int result = Nccl.ncclSend(sendPtr, count, dataType, sendPeer, comm, stream.handle());
            return result != Nccl.SUCCESS ? result
                    : Nccl.ncclRecv(recvPtr, count, dataType, recvPeer, comm, stream.handle());
        }));
    }

    /**
     * Frees the communicator: {@code ncclCommFinalize}, waited for up to the communicator's
     * timeout, then {@code ncclCommDestroy}; {@code ncclCommAbort} instead when it is broken, or
     * when finalizing fails or runs out of time (logged). Releases the hold on the backend's
     * context. Idempotent; never throws.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (aborted) {
            return;
        }
        try {
            long deadline = Waiting.deadline(timeout);
            context.makeCurrent();
            finish("close: ncclCommFinalize", Nccl.ncclCommFinalize(comm), deadline);
            context.makeCurrent();
            int result = Nccl.ncclCommDestroy(comm);
            if (result != Nccl.SUCCESS) {
                LOG.log(Level.WARNING, "rank " + rank + ": ncclCommDestroy failed: " + describe(result, comm));
            }
            backend.unretain();
        } catch (JmscclppException e) {
            // finish() aborted the communicator already
            LOG.log(Level.WARNING, "rank " + rank + ": closing the NCCL communicator failed, aborted it: " + e.getMessage());
        }
    }

    @Override
    public String toString() {
        return "NcclCommunicator[rank " + rank + " of " + nRanks + ", " + context + "]";
    }

    // ---------------------------------------------------------------------------------------------

    /** Makes one NCCL call (or group) on {@code stream} and waits, bounded, until NCCL accepted it. */
    private synchronized void enqueue(String op, CudaStream stream, IntSupplier call) {
        Objects.requireNonNull(stream, "stream");
        if (closed || aborted) {
            throw invalid(op, rank, "the NCCL communicator is " + (closed ? "closed" : "aborted after an earlier error"));
        }
        if (stream.context() != context) {
            throw invalid(op, rank, "the stream " + stream.name() + " belongs to " + stream.context()
                    + ", the communicator to " + context);
        }
        stream.checkOpen();
        long deadline = Waiting.deadline(timeout);
        context.makeCurrent();
        finish(op, call.getAsInt(), deadline);
    }

    /** {@code ncclGroupStart}, the calls, {@code ncclGroupEnd} (also after a failed call, which closes the group); the first failure wins. */
    private static int group(IntSupplier calls) {
        int result = Nccl.ncclGroupStart();
        if (result != Nccl.SUCCESS) {
            return result;
        }
        int inside = calls.getAsInt();
        int end = Nccl.ncclGroupEnd();
        return inside != Nccl.SUCCESS ? inside : end;
    }

    /** Turns what a call returned into done, a bounded wait for {@code ncclInProgress}, or a failure that aborts. */
    private void finish(String phase, int result, long deadline) {
        if (result == Nccl.SUCCESS) {
            return;
        }
        if (result == Nccl.IN_PROGRESS) {
            awaitDone(phase, deadline);
            return;
        }
        JmscclppException e = error(result, comm, phase, rank, phase);
        abort();
        throw e;
    }

    /**
     * Polls {@code ncclCommGetAsyncError} until it leaves {@code ncclInProgress} or
     * {@code deadline} passes; aborts and throws on a failure or the deadline.
     */
    private void awaitDone(String phase, long deadline) {
        int[] state = {Nccl.IN_PROGRESS};
        int[] query = {Nccl.SUCCESS};
        boolean done = Waiting.await(() -> {
            context.makeCurrent();
            query[0] = Nccl.ncclCommGetAsyncError(comm, state);
            return query[0] != Nccl.SUCCESS || state[0] != Nccl.IN_PROGRESS;
        }, deadline);
        if (!done) {
            abort();
            throw JmscclppException.builder(ErrorCode.TIMEOUT, "rank " + rank + ": NCCL " + phase
                    + " did not complete within " + timeout + "; the communicator was aborted").rank(rank)
                    .phase(phase).build();
        }
        int failure = query[0] != Nccl.SUCCESS ? query[0] : state[0];
        if (failure != Nccl.SUCCESS) {
            JmscclppException e = error(failure, comm, query[0] != Nccl.SUCCESS ? "ncclCommGetAsyncError during "
                    + phase : phase, rank, phase);
            abort();
            throw e;
        }
    }

    /** Aborts the communicator once; releases the context unless the abort itself hung. */
    private void abort() {
        if (aborted) {
            return;
        }
        aborted = true;
        if (abortWithin(context, comm, rank)) {
            backend.unretain();
        }
    }

    /**
     * {@code ncclCommAbort} on a platform thread of its own, waited for at most
     * {@link #ABORT_GRACE}: an abort that hangs (NCCL stuck in a network call) then stays behind,
     * logged, instead of hanging the caller. Returns whether it finished.
     */
    private static boolean abortWithin(CudaContext context, long comm, int rank) {
        Thread aborter = Thread.ofPlatform().daemon().name("jmscclpp-nccl-abort").start(() -> {
            try {
                context.makeCurrent();
            } catch (JmscclppException e) {
                // NCCL sets its own device for the abort; the context only spares it a switch
            }
            int result = Nccl.ncclCommAbort(comm);
            if (result != Nccl.SUCCESS) {
                LOG.log(Level.WARNING, "rank " + rank + ": ncclCommAbort failed: " + describe(result, comm));
            }
        });
        try {
            if (aborter.join(ABORT_GRACE)) {
                return true;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LOG.log(Level.WARNING, "rank " + rank + ": ncclCommAbort did not return within " + ABORT_GRACE
                + "; the communicator and its GPU context are left behind");
        return false;
    }

    static void requireAvailable(String phase) {
        Nccl.unavailableReason().ifPresent(reason -> {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, reason).phase(phase).build();
        });
    }

    /** Bytes of one element of {@code ncclDataType_t} {@code dataType}. */
    static int elementBytes(int dataType, int rank) {
        return switch (dataType) {
            case 0, 1, 10, 11 -> 1;      // int8, uint8, float8 e4m3, float8 e5m2
            case 6, 9 -> 2;              // float16, bfloat16
            case 2, 3, 7 -> 4;           // int32, uint32, float32
            case 4, 5, 8 -> 8;           // int64, uint64, float64
            default -> throw invalid("dataType", rank, dataType + " is not an ncclDataType_t");
        };
    }

    private void checkRank(int root, String op) {
        if (root < 0 || root >= nRanks) {
            throw invalid(op, rank, "root " + root + " is not in [0, " + nRanks + ")");
        }
    }

    private void checkCount(long count, String op) {
        if (count < 0) {
            throw invalid(op, rank, "a count is at least 0, not " + count);
        }
    }

    private static JmscclppException invalid(String phase, int rank, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(rank).phase(phase).build();
    }

    /** The exception for {@code ncclResult_t} {@code result} of {@code call}. */
    static JmscclppException error(int result, long comm, String call, int rank, String phase) {
        ErrorCode code = switch (result) {
            case Nccl.INVALID_ARGUMENT, Nccl.INVALID_USAGE -> ErrorCode.INVALID_USAGE;
            case Nccl.REMOTE_ERROR -> ErrorCode.REMOTE_ERROR;
            default -> ErrorCode.SYSTEM_ERROR;
        };
        JmscclppException.Builder b = JmscclppException.builder(code, call + " failed: " + describe(result, comm))
                .phase(phase);
        return (rank >= 0 ? b.rank(rank) : b).build();
    }

    /** {@code text (code)}, plus NCCL's last error message when it has one. */
    static String describe(int result, long comm) {
        String text = Nccl.ncclGetErrorString(result);
        String last = Nccl.ncclGetLastError(comm);
        return (text == null ? "ncclResult_t" : text) + " (" + result + ")"
                + (last == null || last.isBlank() ? "" : "; NCCL's last error: " + last.strip());
    }
}
