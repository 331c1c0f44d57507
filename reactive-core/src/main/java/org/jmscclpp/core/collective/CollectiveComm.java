package org.jmscclpp.core.collective;

import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * NCCL's collectives on the caller's own buffers, as {@link Mono}s: a collective communicator is
 * set up once from a {@link Communicator} ({@link #create}: connections, scratch memory and
 * semaphores with every peer, reused by every call), then serves any number of calls.
 *
 * <h2>Calls</h2>
 * Each operation returns a lazy {@code Mono<Void>}: subscribing issues the call, and the Mono
 * completes when this rank's part is done and the result is in {@code recv}, ready for the caller.
 * Every rank must issue the same collectives in the same order, as with NCCL; subscription order is
 * issue order. Counts, in-place forms and buffer sizes follow NCCL ({@link CollectiveKind}).
 * Point-to-point calls match per peer: the i-th {@link #send} to a peer is the i-th {@link #recv}
 * from this rank on that peer. {@link #group} issues several calls as one, with NCCL's group
 * semantics: the sends and receives of a group never deadlock each other, whatever their order.
 *
 * <h2>Buffers</h2>
 * Any buffer of the communicator's backend, a {@linkplain DeviceBuffer#slice slice} of one (any
 * offset: no alignment is required), or memory the service already has (on the host backend
 * {@link DeviceBuffer#wrap} of a segment or array; on CUDA {@code CudaBackend.wrap} of a device
 * pointer from PyTorch, DJL, JCuda or JavaCPP). {@link #register} a buffer once (on every rank) and
 * calls on it are zero-copy: peers read and write it directly; calls on unregistered buffers are
 * staged through the communicator's own shared memory ({@link CollectiveOptions#scratchBytes()}).
 * Within a call, every rank must use registered buffers or every rank unregistered ones; an
 * in-place allToAll is always staged (a rank overwrites what its peers read). A buffer may be null
 * where the call moves nothing through it: a count of 0, a broadcast's send on a non-root, a
 * reduce's receive on a non-root.
 *
 * <h2>Errors</h2>
 * Bad arguments are {@link org.jmscclpp.core.ErrorCode#INVALID_USAGE} before anything moves: a
 * negative or overflowing count, a buffer too small, closed or of another backend, a root or peer
 * out of range. Each call carries a {@link CallDescriptor} that the peers compare before any data
 * moves: ranks that disagree on the kind, count, type, reduction, root or algorithm all fail the
 * call with INVALID_USAGE naming the ranks and the values. A call that passes its deadline fails
 * with TIMEOUT, a dead peer with REMOTE_ERROR. After a call failed (other than by a local argument
 * check) the communicator is broken, as an NCCL communicator with an asynchronous error is: every
 * later call fails with that error ({@link #failure()}); close it and create a new one.
 *
 * <h2>Cancellation and threads</h2>
 * A call that was issued runs to its end on every rank even when its subscriber cancels, so no
 * peer is left waiting for it; cancelling only stops the signals. Completion is signalled on a
 * thread of the engine (a virtual thread on the host backend, the completion poller on CUDA): do
 * blocking work after a {@code publishOn}.
 */
public interface CollectiveComm extends AutoCloseable {

    /** {@link #create(Communicator, CollectiveOptions)} with {@link CollectiveOptions#fromEnvironment()}. */
    static Mono<CollectiveComm> create(Communicator communicator) {
        return create(communicator, CollectiveOptions.fromEnvironment());
    }

    /**
     * Sets up a collective communicator over {@code communicator} with the engine of its backend
     * (found through {@link CollectiveEngine}'s service loader): every rank of the communicator must
     * subscribe, at the same point of its setup. Lazy; runs on a virtual thread (never on the
     * subscriber's, which may be a bootstrap event loop); completes when this rank is ready. Setups
     * on one bootstrap (two collective communicators of different tags, subscribed together with a
     * {@code Mono.zip}) run one after another, in subscription order: they exchange over the
     * bootstrap's collectives, which every rank must issue in the same order.
     *
     * @return errors with INVALID_USAGE when no engine serves the backend or the options differ
     *         between ranks, TIMEOUT or REMOTE_ERROR from the setup's exchanges
     */
    static Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options) {
        // finding the engine (a service loader reading the class path) and the engine's local set-up
        // block: they run on a virtual thread, never on the subscriber's (a bootstrap event loop, when
        // create is chained after TcpBootstrap.initialize)
        return AbstractCollectiveComm.inSubscriptionOrder(communicator.bootstrap(), Mono.defer(() -> {
            CollectiveEngine engine = CollectiveEngine.forBackend(communicator.backend());
            long start = System.nanoTime();
            return engine.create(communicator, options).doOnNext(c -> AbstractCollectiveComm.created(c, start));
        }).subscribeOn(Waiting.VIRTUAL));
    }

    int rank();

    int size();

    Communicator communicator();

    CollectiveOptions options();

    /** The algorithms of this communicator's engine, per kind, the default of each kind first. */
    List<Algorithm> algorithms();

    /** The algorithm {@code call} would run with these call options (the tuning table's choice, or an override). */
    Algorithm algorithmFor(CollectiveCall call);

    /**
     * Registers {@code buffer} (the whole allocation it is part of) with every peer, so that calls
     * on it, or on any slice of it, run zero-copy. Collective: every rank registers its buffer, in
     * the same order. Registering a buffer again costs one small exchange and no mapping.
     *
     * @return errors with INVALID_USAGE for memory that cannot be shared (a wrapped host segment,
     *         another backend's buffer), TIMEOUT or REMOTE_ERROR from the exchange
     */
    Mono<Void> register(DeviceBuffer buffer);

    /** Undoes {@link #register} on every rank (collective); calls on the buffer are staged again. */
    Mono<Void> deregister(DeviceBuffer buffer);

    /** Whether calls on {@code buffer} run zero-copy on this rank. */
    boolean isRegistered(DeviceBuffer buffer);

    /** {@code recv[i] = op(send_0[i], ..., send_{n-1}[i])} for {@code count} elements on every rank. */
    default Mono<Void> allReduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type,
                                 ReduceOp op) {
        return execute(CollectiveCall.allReduce(send, recv, count, type, op));
    }

    /** Slot r of every rank's {@code recv} (n × {@code sendCount} elements) is rank r's {@code send}. */
    default Mono<Void> allGather(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long sendCount, DataType type) {
        return execute(CollectiveCall.allGather(send, recv, sendCount, type));
    }

    /** Rank r's {@code recv} ({@code recvCount} elements) is the reduction of slot r of every rank's {@code send}. */
    default Mono<Void> reduceScatter(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long recvCount,
                                     DataType type, ReduceOp op) {
        return execute(CollectiveCall.reduceScatter(send, recv, recvCount, type, op));
    }

    /** Every rank's {@code recv} gets {@code root}'s {@code send} ({@code send} is ignored elsewhere and may be null). */
    default Mono<Void> broadcast(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type,
                                 int root) {
        return execute(CollectiveCall.broadcast(send, recv, count, type, root));
    }

    /** {@code root}'s {@code recv} gets the reduction of every rank's {@code send} ({@code recv} is ignored elsewhere and may be null). */
    default Mono<Void> reduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type,
                              ReduceOp op, int root) {
        return execute(CollectiveCall.reduce(send, recv, count, type, op, root));
    }

    /** Slot p of {@code send} ({@code count} elements) goes to slot r (this rank) of peer p's {@code recv}; in place when send = recv. */
    default Mono<Void> allToAll(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type) {
        return execute(CollectiveCall.allToAll(send, recv, count, type));
    }

    /** Sends {@code count} elements to {@code peer}, whose matching {@link #recv} receives them. */
    default Mono<Void> send(@Nullable DeviceBuffer send, long count, DataType type, int peer) {
        return execute(CollectiveCall.send(send, count, type, peer));
    }

    /** Receives {@code count} elements from {@code peer}'s matching {@link #send}. */
    default Mono<Void> recv(@Nullable DeviceBuffer recv, long count, DataType type, int peer) {
        return execute(CollectiveCall.recv(recv, count, type, peer));
    }

    /** Issues one call; every method of a kind above is this call of its {@link CollectiveCall}. */
    Mono<Void> execute(CollectiveCall call);

    /**
     * Issues the calls {@code calls} makes on the group as one (NCCL's {@code ncclGroupStart} /
     * {@code ncclGroupEnd}): sends and receives of the group progress together and never deadlock
     * each other; the collectives of the group run in the order given, after them. Completes when
     * every call of the group is done on this rank. Lazy: {@code calls} runs at subscription.
     */
    Mono<Void> group(Consumer<CollectiveGroup> calls);

    /** A view of this communicator whose calls use {@code options}; it shares everything else (closing it closes this). */
    CollectiveComm with(CallOptions options);

    /**
     * The error that broke this communicator, if any: a call's failure, or the job's as soon as this
     * rank knows of it (an abort on any rank, this one's included; a dead or departed peer). Calls
     * issued after a call's failure or an abort fail at once with it.
     */
    Optional<JmscclppException> failure();

    /**
     * Aborts the job ({@link org.jmscclpp.core.Communicator#abort(String)} of the communicator this
     * one was built on): the calls in flight here end with {@link ErrorCode#ABORTED}, and on every
     * other rank, whose bootstrap hears of it, with ABORTED naming this rank, also where a kernel
     * waits for a peer. Returns at once; close this communicator afterwards.
     */
    void abort(String reason);

    /**
     * Waits (up to the communicator's timeout) for the calls already issued, then releases the connections,
     * scratch memory, registrations and threads, as NCCL's {@code ncclCommDestroy} finalizes first. Calls
     * issued once it began fail with INVALID_USAGE. A call whose subscriber cancelled it is not waited for, and
     * one still waiting at the deadline (for a peer that never made its part) ends on this rank when the
     * communicator is released ({@link #abort} first to end the calls at once on every rank). It may be called
     * from a call's own callbacks (a {@code doFinally}): that call has ended by then. Idempotent.
     */
    @Override
    void close();
}
