package org.jmscclpp.testkit;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.testkit.InMemoryRound.Kind;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Schedulers;

/**
 * A {@link Bootstrap} whose ranks live in one JVM and exchange messages through memory: the proof
 * that the SPI is pluggable, and a fast stand-in for {@code TcpBootstrap} in tests of the layers
 * above it.
 *
 * <p>It keeps the whole {@link Bootstrap} contract:
 * <ul>
 *   <li>every operation is lazy, and each subscription performs it once more;</li>
 *   <li>{@link #send} never waits (buffers are unbounded) and completes on the subscribing thread;
 *       the i-th send to (peer, tag) is the i-th {@link #recv} from (rank, tag) on the peer, and
 *       tags are independent streams;</li>
 *   <li>the k-th collective subscribed on each rank belongs to the same round (see
 *       {@link InMemoryRound}): a different operation, allGather length or broadcast root on some
 *       rank is {@link ErrorCode#INVALID_USAGE} naming both ranks;</li>
 *   <li>a deadline is a timer on {@link Schedulers#parallel()}, so {@code StepVerifier.withVirtualTime}
 *       controls it; it fails the operation with {@link ErrorCode#TIMEOUT} naming rank, peer (for a
 *       collective: the lowest rank that has not joined), tag and phase;</li>
 *   <li>{@link #abort} on any rank fails pending and future operations of every rank of the group
 *       with {@link ErrorCode#ABORTED};</li>
 *   <li>{@link #close} fails this rank's pending operations with {@link ErrorCode#ABORTED} and its
 *       future ones with {@link ErrorCode#INVALID_USAGE}; peers then get
 *       {@link ErrorCode#REMOTE_ERROR} for receives from it that nothing queued can satisfy, for
 *       sends to it, and for collectives it never joined.</li>
 * </ul>
 *
 * <p>Results and asynchronous errors are emitted on a {@link Schedulers#parallel()} worker, never
 * under a lock and never on the thread of the peer that completed them. Thread-safe; nothing
 * blocks or sleeps.
 */
public final class InMemoryBootstrap implements Bootstrap {

    private final InMemoryGroup group;
    private final int rank;
    private final Set<InMemoryPending> pending = ConcurrentHashMap.newKeySet();
    private final AtomicLong collectiveSeq = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();

    InMemoryBootstrap(InMemoryGroup group, int rank) {
        this.group = group;
        this.rank = rank;
    }

    /** Creates the {@code n} ranks of one job, all on one "host" ({@link #nRanksPerNode()} = n). */
    public static List<InMemoryBootstrap> group(int n) {
        return group(n, n);
    }

    /**
     * Creates the {@code n} ranks of one job, grouped into "hosts" of {@code ranksPerNode}
     * consecutive ranks (the last host may hold fewer); the list is indexed by rank.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when {@code n < 1} or
     *                           {@code ranksPerNode} is outside [1, n]
     */
    public static List<InMemoryBootstrap> group(int n, int ranksPerNode) {
        if (n < 1) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a group needs at least one rank, got " + n)
                    .phase("create").build();
        }
        if (ranksPerNode < 1 || ranksPerNode > n) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "ranks per node must be in [1, " + n + "], got " + ranksPerNode).phase("create").build();
        }
        return new InMemoryGroup(n, ranksPerNode).members();
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return group.size;
    }

    @Override
    public int nRanksPerNode() {
        return group.ranksOnNodeOf(rank);
    }

    @Override
    public Mono<byte[]> allGather(byte[] local, Duration timeout) {
        Objects.requireNonNull(local, "local");
        Objects.requireNonNull(timeout, "timeout");
        return collective(Kind.ALL_GATHER, JmscclppException.NONE, local, timeout);
    }

    @Override
    public Mono<Void> barrier(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return collective(Kind.BARRIER, JmscclppException.NONE, new byte[0], timeout).then();
    }

    @Override
    public Mono<byte[]> broadcast(int root, byte[] data, Duration timeout) {
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(timeout, "timeout");
        return collective(Kind.BROADCAST, root, data, timeout);
    }

    /**
     * Hands a copy of {@code data} to the peer's (rank, tag) stream and completes on the subscribing
     * thread. It never waits, so {@code timeout} is only validated.
     */
    @Override
    public Mono<Void> send(int peer, int tag, byte[] data, Duration timeout) {
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(timeout, "timeout");
        return Mono.create(sink -> {
            JmscclppException refused = refusal(peer, tag, "send", timeout, true);
            if (refused == null && peer != rank && group.isClosed(peer)) {
                refused = error(ErrorCode.REMOTE_ERROR, peer, tag, "send", "rank " + peer + " has closed");
            }
            if (refused != null) {
                sink.error(refused);
                return;
            }
            group.mailbox(rank, peer, tag).deliver(data.clone());
            sink.success();
        });
    }

    @Override
    public Mono<byte[]> recv(int peer, int tag, Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return Mono.create(sink -> {
            JmscclppException refused = refusal(peer, tag, "recv", timeout, true);
            if (refused != null) {
                sink.error(refused);
                return;
            }
            InMemoryMailbox box = group.mailbox(peer, rank, tag);
            InMemoryPending op = new InMemoryPending(sink, pending, rank, peer, tag, "recv", box::remove);
            if (!start(op)) {
                return;
            }
            box.receive(op, () -> peer != rank && group.isClosed(peer),
                    () -> op.error(ErrorCode.REMOTE_ERROR, "rank " + peer + " closed with no message pending"));
            op.armTimer(timeout, () -> op.error(ErrorCode.TIMEOUT,
                    "no message within " + timeout.toMillis() + " ms"));
        });
    }

    /** Aborts the whole group: this rank and every other one. Returns at once. */
    @Override
    public void abort(String reason) {
        group.abort(rank, Objects.requireNonNull(reason, "reason"));
    }

    /** Emits the group's abort (ABORTED, naming the rank that aborted); a peer's close is not a failure here. */
    @Override
    public Mono<JmscclppException> failure() {
        return group.whenAborted().map(a -> JmscclppException.builder(ErrorCode.ABORTED, InMemoryGroup.abortDetail(a))
                .rank(rank).peer(a.byRank()).phase("abort").build());
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            failPending(op -> op.error(ErrorCode.ABORTED, "rank " + rank + " was closed while the operation was pending"));
            group.memberClosed(rank);
        }
    }

    @Override
    public String toString() {
        return "InMemoryBootstrap[rank " + rank + " of " + group.size + "]";
    }

    boolean isClosed() {
        return closed.get();
    }

    /** Ends every pending operation of this rank with the error {@code why} builds for it. */
    void failPending(Function<InMemoryPending, JmscclppException> why) {
        for (InMemoryPending op : pending.toArray(InMemoryPending[]::new)) {
            op.fail(why.apply(op));
        }
    }

    private Mono<byte[]> collective(Kind kind, int root, byte[] data, Duration timeout) {
        return Mono.create((MonoSink<byte[]> sink) -> {
            JmscclppException refused = refusal(JmscclppException.NONE, JmscclppException.NONE, kind.phase, timeout, false);
            if (refused == null && kind == Kind.BROADCAST && (root < 0 || root >= group.size)) {
                refused = error(ErrorCode.INVALID_USAGE, JmscclppException.NONE, JmscclppException.NONE, kind.phase,
                        "root " + root + " is outside [0, " + group.size + ")");
            }
            if (refused != null) {
                sink.error(refused);
                return;
            }
            // the sequence number is taken only by a valid call, so that argument errors stay local
            InMemoryRound round = group.round(collectiveSeq.getAndIncrement());
            InMemoryPending op = new InMemoryPending(sink, pending, rank, JmscclppException.NONE,
                    JmscclppException.NONE, kind.phase, round::leave);
            if (!start(op)) {
                return;
            }
            byte[] contribution = kind == Kind.BROADCAST && root != rank ? new byte[0] : data.clone();
            round.arrive(kind, root, contribution, op);
            op.armTimer(timeout, () -> round.timeout(op, timeout));
        });
    }

    /**
     * Registers {@code op} with this rank, then looks at abort and close again: either they see it in
     * the pending set, or it sees their flag; false when it has already been failed.
     */
    private boolean start(InMemoryPending op) {
        op.register();
        InMemoryGroup.Abort a = group.aborted();
        if (a != null) {
            op.fail(op.error(ErrorCode.ABORTED, InMemoryGroup.abortDetail(a)));
        } else if (closed.get()) {
            op.fail(op.error(ErrorCode.INVALID_USAGE, "rank " + rank + " is closed"));
        }
        return !op.isDone();
    }

    /** Why an operation cannot even start, or null. */
    private @Nullable JmscclppException refusal(int peer, int tag, String phase, Duration timeout, boolean p2p) {
        if (closed.get()) {
            return error(ErrorCode.INVALID_USAGE, peer, tag, phase, "rank " + rank + " is closed");
        }
        InMemoryGroup.Abort a = group.aborted();
        if (a != null) {
            return error(ErrorCode.ABORTED, peer, tag, phase, InMemoryGroup.abortDetail(a));
        }
        if (p2p && (peer < 0 || peer >= group.size)) {
            return error(ErrorCode.INVALID_USAGE, peer, tag, phase, "peer " + peer + " is outside [0, " + group.size + ")");
        }
        if (timeout.isNegative()) {
            return error(ErrorCode.INVALID_USAGE, peer, tag, phase, "negative timeout " + timeout);
        }
        return null;
    }

    private JmscclppException error(ErrorCode code, int peer, int tag, String phase, String detail) {
        return JmscclppException.builder(code, detail).rank(rank).peer(peer).tag(tag).phase(phase).build();
    }
}
