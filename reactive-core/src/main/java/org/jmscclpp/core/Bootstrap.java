package org.jmscclpp.core;

import java.time.Duration;
import java.util.Collection;
import reactor.core.publisher.Mono;

/**
 * How the ranks of a job find each other and exchange small control messages before (and while)
 * they move real data: the same contract as MSCCL++'s {@code Bootstrap} and NCCL's bootstrap.
 *
 * <p>Every waiting operation returns a lazy {@link Mono}: nothing is sent before subscription, and
 * each subscription performs the operation once more. Each operation has a deadline (the
 * {@code timeout} argument, or {@link #defaultTimeout()}); when it passes, the Mono errors with a
 * {@link JmscclppException} of code {@link ErrorCode#TIMEOUT} naming rank, peer, tag and phase. A
 * dead peer gives {@link ErrorCode#REMOTE_ERROR}, bad arguments {@link ErrorCode#INVALID_USAGE},
 * {@link #abort(String)} {@link ErrorCode#ABORTED}.
 *
 * <p>Collectives ({@link #allGather}, {@link #barrier}, {@link #broadcast}) must be subscribed in the
 * same order on every rank, like MPI collectives. Point-to-point messages are matched per
 * (peer, tag): the i-th {@link #send} to (peer, tag) is the i-th {@link #recv} from (rank, tag) on the
 * peer; different tags are independent streams. Tags from 2^24 up are the library's own (the
 * communicators, collective engines and hierarchical engines built on this bootstrap send on them):
 * an application sharing the bootstrap uses tags in [0, 2^24), which nothing of the library uses.
 *
 * <p>Signals may be delivered on an I/O thread of the implementation: do not block in a
 * downstream operator; {@code publishOn} a scheduler for blocking work.
 *
 * <p>The interface is pluggable: an implementation over MPI, a key-value store or an in-memory
 * fake works wherever {@code TcpBootstrap} does.
 */
public interface Bootstrap extends AutoCloseable {

    /** The deadline operations use when none is given: 30 seconds. */
    Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    /** This rank, in [0, size). */
    int rank();

    /** Number of ranks in the job. */
    int size();

    /** Number of ranks on this rank's host (same host identity), in [1, size]. */
    int nRanksPerNode();

    /** The deadline used by the overloads without a timeout argument. */
    default Duration defaultTimeout() {
        return DEFAULT_TIMEOUT;
    }

    /**
     * Gathers every rank's {@code local} bytes: emits {@code size() * local.length} bytes where the
     * slice {@code [r * len, (r + 1) * len)} is rank r's contribution. Every rank must give the same
     * length, else {@link ErrorCode#INVALID_USAGE}.
     */
    Mono<byte[]> allGather(byte[] local, Duration timeout);

    default Mono<byte[]> allGather(byte[] local) {
        return allGather(local, defaultTimeout());
    }

    /** Completes once every rank has entered the barrier. */
    Mono<Void> barrier(Duration timeout);

    default Mono<Void> barrier() {
        return barrier(defaultTimeout());
    }

    /** Emits {@code root}'s {@code data} on every rank; the argument is ignored on the other ranks. */
    Mono<byte[]> broadcast(int root, byte[] data, Duration timeout);

    default Mono<byte[]> broadcast(int root, byte[] data) {
        return broadcast(root, data, defaultTimeout());
    }

    /** Sends {@code data} to {@code peer} on {@code tag}; completes when the bytes are handed to the transport. */
    Mono<Void> send(int peer, int tag, byte[] data, Duration timeout);

    default Mono<Void> send(int peer, int tag, byte[] data) {
        return send(peer, tag, data, defaultTimeout());
    }

    /** Emits the next message from {@code peer} on {@code tag}. */
    Mono<byte[]> recv(int peer, int tag, Duration timeout);

    default Mono<byte[]> recv(int peer, int tag) {
        return recv(peer, tag, defaultTimeout());
    }

    /**
     * Fails every pending and future operation with {@link ErrorCode#ABORTED}, here and on every
     * peer that can still be reached. Does not wait.
     */
    void abort(String reason);

    /**
     * Emits the job's first failure as this rank learns it: a peer that died
     * ({@link ErrorCode#REMOTE_ERROR} naming it), an {@link #abort} here or on a peer
     * ({@link ErrorCode#ABORTED}), or this bootstrap's {@link #close()}. Never completes while the
     * job is healthy; cancelling the subscription only stops listening. A {@link Communicator}
     * raises its {@link AbortSignal} with it. The default never emits, for implementations that
     * cannot tell.
     */
    default Mono<JmscclppException> failure() {
        return Mono.never();
    }

    /**
     * A new, smaller job of the ranks not in {@code excludedRanks}, as NCCL's
     * {@code ncclCommShrink}: every surviving rank calls it with the same set (typically the rank a
     * {@link ErrorCode#REMOTE_ERROR} named) and gets a bootstrap of {@code size() - excluded}
     * ranks, numbered in the order of their old ranks. Works on a bootstrap that failed; this one
     * stays as it is (close it). Build a new {@link Communicator} on the result. Errors with
     * INVALID_USAGE when this rank is excluded or a rank is out of range, TIMEOUT naming the
     * missing ranks when survivors disagree or do not call it within {@code timeout}. The default
     * errors with INVALID_USAGE: not every implementation can.
     */
    default Mono<? extends Bootstrap> shrink(Collection<Integer> excludedRanks, Duration timeout) {
        return Mono.error(JmscclppException.builder(ErrorCode.INVALID_USAGE, getClass().getSimpleName()
                + " cannot shrink").rank(rank()).phase("shrink").build());
    }

    /**
     * The bootstrap this one is a view of (one that groups some of another's ranks and travels on
     * its connections), else this one: transports that follow the bootstrap's choice of interface
     * look at it. Views override it; every other bootstrap keeps the default.
     */
    default Bootstrap base() {
        return this;
    }

    /** Releases every socket, thread and buffer. Pending operations fail; calling it twice is harmless. */
    @Override
    void close();
}
