package org.jmscclpp.testkit;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.jmscclpp.core.ErrorCode;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * What the ranks of one {@link InMemoryBootstrap} group share: the mailboxes of every
 * (from, to, tag) stream, the collective rounds in flight, and the abort that ends them all.
 */
final class InMemoryGroup {

    /** One direction of one tag between two ranks. */
    private record Route(int from, int to, int tag) {
    }

    /** Who aborted the group and why. */
    record Abort(int byRank, String reason) {
    }

    final int size;
    final int ranksPerNode;

    private final List<InMemoryBootstrap> members;
    private final Map<Route, InMemoryMailbox> mailboxes = new ConcurrentHashMap<>();
    private final Map<Long, InMemoryRound> rounds = new ConcurrentHashMap<>();
    private final AtomicReference<@Nullable Abort> abort = new AtomicReference<>();
    private final Sinks.One<Abort> aborts = Sinks.one();

    InMemoryGroup(int size, int ranksPerNode) {
        this.size = size;
        this.ranksPerNode = ranksPerNode;
        InMemoryBootstrap[] ranks = new InMemoryBootstrap[size];
        for (int r = 0; r < size; r++) {
            ranks[r] = new InMemoryBootstrap(this, r);
        }
        this.members = List.of(ranks);
    }

    List<InMemoryBootstrap> members() {
        return members;
    }

    /** Ranks on {@code rank}'s "host": blocks of {@link #ranksPerNode} consecutive ranks, the last maybe shorter. */
    int ranksOnNodeOf(int rank) {
        int nodeStart = rank / ranksPerNode * ranksPerNode;
        return Math.min(ranksPerNode, size - nodeStart);
    }

    boolean isClosed(int rank) {
        return members.get(rank).isClosed();
    }

    InMemoryMailbox mailbox(int from, int to, int tag) {
        return mailboxes.computeIfAbsent(new Route(from, to, tag), k -> new InMemoryMailbox());
    }

    InMemoryRound round(long seq) {
        return rounds.computeIfAbsent(seq, k -> new InMemoryRound(k, size, this::isClosed, () -> rounds.remove(k)));
    }

    /** Emits the group's abort once it happens. */
    Mono<Abort> whenAborted() {
        return aborts.asMono();
    }

    @Nullable Abort aborted() {
        return abort.get();
    }

    /** The first abort wins; it fails every pending operation of every rank (later ones see {@link #aborted()}). */
    void abort(int byRank, String reason) {
        Abort a = new Abort(byRank, reason);
        if (abort.compareAndSet(null, a)) {
            aborts.tryEmitValue(a);
            for (InMemoryBootstrap m : members) {
                m.failPending(op -> op.error(ErrorCode.ABORTED, abortDetail(a)));
            }
        }
    }

    static String abortDetail(Abort a) {
        return "rank " + a.byRank() + " aborted the group: " + a.reason();
    }

    /**
     * {@code rank} has closed (its flag is already set): receivers waiting on it with nothing queued,
     * and rounds it never joined, fail with {@link ErrorCode#REMOTE_ERROR}.
     */
    void memberClosed(int rank) {
        mailboxes.forEach((route, box) -> {
            if (route.from() == rank && route.to() != rank) {
                box.senderClosed(op -> op.error(ErrorCode.REMOTE_ERROR,
                        "rank " + rank + " closed with no message pending"));
            }
        });
        rounds.values().forEach(round -> round.memberClosed(rank));
    }
}
