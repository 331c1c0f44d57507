package org.jmscclpp.testkit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;
import java.util.function.IntPredicate;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * The k-th collective of an {@link InMemoryBootstrap} group: every rank's k-th {@code allGather},
 * {@code barrier} or {@code broadcast} lands in the same round, like MPI collectives matched by
 * call order.
 *
 * <p>The first rank to arrive fixes what the round is (operation, contribution length, root); a
 * later rank that disagrees fails the whole round with {@link ErrorCode#INVALID_USAGE} naming both
 * ranks, and so does every rank that arrives after. A rank that closed before arriving fails it with
 * {@link ErrorCode#REMOTE_ERROR}. When every rank has arrived the result is built once and every
 * still-waiting rank gets its own copy. A contribution stays once given, even if its rank stops
 * waiting (deadline, cancel): the bytes were "sent".
 */
final class InMemoryRound {

    /** What a rank called. */
    enum Kind {
        ALL_GATHER("allGather"), BARRIER("barrier"), BROADCAST("broadcast");

        final String phase;

        Kind(String phase) {
            this.phase = phase;
        }
    }

    /** Why the round failed: blamed on {@code culprit}; {@code other} is the rank it disagreed with, or -1. */
    private record Failure(ErrorCode code, String detail, int culprit, int other) {
        JmscclppException seenBy(InMemoryPending op) {
            int peer = op.rank == culprit ? other : culprit;
            return JmscclppException.builder(code, detail).rank(op.rank)
                    .peer(peer < 0 ? JmscclppException.NONE : peer).phase(op.phase).build();
        }
    }

    private static final byte[] EMPTY = new byte[0];

    private final long seq;
    private final int size;
    private final IntPredicate isClosed;
    private final Runnable onAllArrived;

    private final byte[][] contributions;
    private final boolean[] arrived;
    private final @Nullable InMemoryPending[] waiters;
    private int arrivedCount;
    private int first = -1;
    private @Nullable Kind kind;
    private int root;
    private int length;
    private @Nullable Failure failure;

    /**
     * @param isClosed     whether a rank has closed (a rank that closed before arriving never will)
     * @param onAllArrived runs once, when the last rank has arrived (the group forgets the round)
     */
    InMemoryRound(long seq, int size, IntPredicate isClosed, Runnable onAllArrived) {
        this.seq = seq;
        this.size = size;
        this.isClosed = isClosed;
        this.onAllArrived = onAllArrived;
        this.contributions = new byte[size][];
        this.arrived = new boolean[size];
        this.waiters = new InMemoryPending[size];
    }

    /**
     * Adds {@code op.rank}'s contribution ({@code data}, already a private copy; ignored off the root
     * of a broadcast) and makes {@code op} wait for the round's result. Ends every waiting operation
     * when this arrival completes or breaks the round.
     */
    void arrive(Kind what, int rootRank, byte[] data, InMemoryPending op) {
        List<InMemoryPending> ended = new ArrayList<>();
        byte[] result = null;
        Failure failed;
        boolean last;
        synchronized (this) {
            int r = op.rank;
            arrived[r] = true;
            arrivedCount++;
            waiters[r] = op;
            if (failure == null) {
                failure = mismatch(r, what, rootRank, data.length);
            }
            if (failure == null) {
                if (first < 0) {
                    first = r;
                    kind = what;
                    root = rootRank;
                    length = data.length;
                }
                contributions[r] = what == Kind.BROADCAST && r != rootRank ? EMPTY : data;
                failure = closedBeforeArriving();
            }
            last = arrivedCount == size;
            failed = failure;
            if (failed != null || last) {
                if (failed == null) {
                    result = assemble();
                }
                for (int i = 0; i < size; i++) {
                    InMemoryPending w = waiters[i];
                    waiters[i] = null;
                    if (w != null && w.claim()) {
                        ended.add(w);
                    }
                }
            }
        }
        if (last) {
            onAllArrived.run();
        }
        for (InMemoryPending w : ended) {
            if (failed != null) {
                w.failClaimed(failed.seenBy(w));
            } else {
                w.succeedClaimed(result.clone());
            }
        }
    }

    /** {@code rank} has closed: if it has not arrived, the round can never complete. */
    void memberClosed(int rank) {
        List<InMemoryPending> ended = new ArrayList<>();
        Failure failed;
        synchronized (this) {
            if (arrived[rank] || failure != null) {
                return;
            }
            failed = failure = closedFailure(rank);
            for (int i = 0; i < size; i++) {
                InMemoryPending w = waiters[i];
                waiters[i] = null;
                if (w != null && w.claim()) {
                    ended.add(w);
                }
            }
        }
        for (InMemoryPending w : ended) {
            w.failClaimed(failed.seenBy(w));
        }
    }

    /** Forgets a waiter that stopped waiting; its contribution stays. */
    synchronized void leave(InMemoryPending op) {
        if (waiters[op.rank] == op) {
            waiters[op.rank] = null;
        }
    }

    /** The deadline error for {@code op}: names the lowest rank that has not arrived as the peer. */
    synchronized JmscclppException timeout(InMemoryPending op, Duration timeout) {
        StringJoiner missing = new StringJoiner(", ", "[", "]");
        int firstMissing = JmscclppException.NONE;
        for (int i = 0; i < size; i++) {
            if (!arrived[i]) {
                missing.add(Integer.toString(i));
                if (firstMissing == JmscclppException.NONE) {
                    firstMissing = i;
                }
            }
        }
        String detail = firstMissing == JmscclppException.NONE
                ? "collective #" + seq + " did not complete within " + timeout.toMillis() + " ms"
                : "collective #" + seq + ": ranks " + missing + " did not join within " + timeout.toMillis() + " ms";
        return JmscclppException.builder(ErrorCode.TIMEOUT, detail).rank(op.rank).peer(firstMissing)
                .phase(op.phase).build();
    }

    private @Nullable Failure mismatch(int r, Kind what, int rootRank, int len) {
        if (first < 0) {
            return null;
        }
        if (what != kind) {
            return new Failure(ErrorCode.INVALID_USAGE, "collective #" + seq + " is " + kind.phase + " on rank "
                    + first + " but " + what.phase + " on rank " + r + " (collectives must be called in the same"
                    + " order on every rank)", r, first);
        }
        if (what == Kind.ALL_GATHER && len != length) {
            return new Failure(ErrorCode.INVALID_USAGE, "allGather #" + seq + ": rank " + first + " contributes "
                    + length + " bytes but rank " + r + " contributes " + len + " bytes", r, first);
        }
        if (what == Kind.BROADCAST && rootRank != root) {
            return new Failure(ErrorCode.INVALID_USAGE, "broadcast #" + seq + ": rank " + first + " names root "
                    + root + " but rank " + r + " names root " + rootRank, r, first);
        }
        return null;
    }

    private @Nullable Failure closedBeforeArriving() {
        for (int i = 0; i < size; i++) {
            if (!arrived[i] && isClosed.test(i)) {
                return closedFailure(i);
            }
        }
        return null;
    }

    private Failure closedFailure(int rank) {
        return new Failure(ErrorCode.REMOTE_ERROR,
                "rank " + rank + " closed before joining collective #" + seq, rank, -1);
    }

    private byte[] assemble() {
        return switch (kind) {
            case BARRIER -> EMPTY;
            case BROADCAST -> contributions[root];
            case ALL_GATHER -> {
                byte[] all = new byte[size * length];
                for (int i = 0; i < size; i++) {
                    System.arraycopy(contributions[i], 0, all, i * length, length);
                }
                yield all;
            }
            case null -> throw new IllegalStateException("round #" + seq + " completed with no arrival");
        };
    }
}
