package org.jmscclpp.core.hierarchy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Some ranks of a job as a job of their own: rank {@code i} here is {@code members[i]} of the parent
 * bootstrap, and every message travels on the parent's connections. A tag {@code t} of this view is
 * the parent's tag {@code t ^ }{@value #TAG_BIT}, so that the view's traffic (a communicator's
 * setup, a collective communicator's watch) never meets what the same two ranks exchange on the
 * parent with the same tag; two views with a pair of ranks in common must not be used at once. The
 * view's collectives run over its sends and receives, each on a tag of its own sequence (every
 * member calls them in the same order, as on any bootstrap). Failures and aborts are the parent's;
 * closing the view closes nothing.
 */
final class SubsetBootstrap implements Bootstrap {

    /** Flipped in every tag this view hands to the parent. */
    static final int TAG_BIT = 0x20000000;
    /**
     * Flipped instead by the views of a pair of ranks on two hosts ({@link HierarchicalComm}'s
     * links for sends and receives), which may share their pair with a rail's view: with the sign
     * bit set, their tags meet no other view's, nor the parent's own (all below it).
     */
    static final int LINK_TAG_FLIP = 0xA0000000;
    /** Flipped too by the view of a link from the higher rank to the lower (the pair's other direction). */
    static final int LINK_DOWN_BIT = 0x10000000;
    /** Tags of the view's own collectives: this prefix | the sequence number (low 24 bits). */
    private static final int COLLECTIVE_TAGS = 0x4D000000;

    private final Bootstrap parent;
    private final int[] members;
    private final int rank;
    private final int ranksPerNode;
    private final int tagFlip;
    private final AtomicLong collectives = new AtomicLong();

    /**
     * @param members      the parent ranks of the view, in the view's rank order; must hold the
     *                     parent's own rank
     * @param ranksPerNode what {@link #nRanksPerNode()} reports
     */
    SubsetBootstrap(Bootstrap parent, int[] members, int ranksPerNode) {
        this(parent, members, ranksPerNode, TAG_BIT);
    }

    /** As above, flipping {@code tagFlip} (instead of {@link #TAG_BIT}) in every tag handed to the parent. */
    SubsetBootstrap(Bootstrap parent, int[] members, int ranksPerNode, int tagFlip) {
        this.tagFlip = tagFlip;
        this.parent = Objects.requireNonNull(parent, "parent");
        this.members = members.clone();
        int me = -1;
        for (int i = 0; i < members.length; i++) {
            if (members[i] == parent.rank()) {
                me = i;
            }
        }
        if (me < 0) {
            throw new IllegalArgumentException("rank " + parent.rank() + " is not among " + Arrays.toString(members));
        }
        this.rank = me;
        this.ranksPerNode = ranksPerNode;
    }

    /** The parent rank of this view's rank {@code r}. */
    int member(int r) {
        return members[r];
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return members.length;
    }

    @Override
    public int nRanksPerNode() {
        return ranksPerNode;
    }

    @Override
    public Duration defaultTimeout() {
        return parent.defaultTimeout();
    }

    @Override
    public Mono<Void> send(int peer, int tag, byte[] data, Duration timeout) {
        return Mono.defer(() -> parent.send(member(checkPeer(peer, "send")), tag ^ tagFlip, data, timeout));
    }

    @Override
    public Mono<byte[]> recv(int peer, int tag, Duration timeout) {
        return Mono.defer(() -> parent.recv(member(checkPeer(peer, "recv")), tag ^ tagFlip, timeout));
    }

    /** Every member's {@code local} in rank order (all of the same length), sent directly to every member. */
    @Override
    public Mono<byte[]> allGather(byte[] local, Duration timeout) {
        Objects.requireNonNull(local, "local");
        return Mono.defer(() -> {
            int tag = nextCollectiveTag();
            List<Mono<Void>> sends = new ArrayList<>();
            List<Mono<byte[]>> recvs = new ArrayList<>();
            for (int p = 0; p < members.length; p++) {
                if (p != rank) {
                    sends.add(send(p, tag, local, timeout));
                    recvs.add(recv(p, tag, timeout));
                }
            }
            return Mono.when(sends).then(Flux.mergeSequential(recvs).collectList()).map(parts -> {
                byte[] all = new byte[local.length * members.length];
                int at = 0;
                for (int p = 0; p < members.length; p++) {
                    byte[] part = p == rank ? local : parts.get(p < rank ? p : p - 1);
                    if (part.length != local.length) {
                        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "allGather of " + local.length
                                + " bytes here, " + part.length + " from rank " + p).rank(rank).peer(p)
                                .phase("allGather").build();
                    }
                    System.arraycopy(part, 0, all, at, part.length);
                    at += part.length;
                }
                return all;
            });
        });
    }

    @Override
    public Mono<Void> barrier(Duration timeout) {
        return allGather(new byte[0], timeout).then();
    }

    @Override
    public Mono<byte[]> broadcast(int root, byte[] data, Duration timeout) {
        return Mono.defer(() -> {
            checkPeer(root, "broadcast");
            int tag = nextCollectiveTag();
            if (rank != root) {
                return recv(root, tag, timeout);
            }
            List<Mono<Void>> sends = new ArrayList<>();
            for (int p = 0; p < members.length; p++) {
                if (p != rank) {
                    sends.add(send(p, tag, data, timeout));
                }
            }
            return Mono.when(sends).thenReturn(data);
        });
    }

    @Override
    public void abort(String reason) {
        parent.abort(reason);
    }

    @Override
    public Bootstrap base() {
        return parent.base();
    }

    @Override
    public Mono<JmscclppException> failure() {
        return parent.failure();
    }

    /** Closes nothing: the parent belongs to whoever made this view. */
    @Override
    public void close() {
    }

    private int nextCollectiveTag() {
        return COLLECTIVE_TAGS | (int) (collectives.getAndIncrement() & 0xFFFFFF);
    }

    private int checkPeer(int peer, String phase) {
        if (peer < 0 || peer >= members.length) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "peer " + peer + " is outside [0, "
                    + members.length + ")").rank(rank).peer(peer).phase(phase).build();
        }
        return peer;
    }

    @Override
    public String toString() {
        return "SubsetBootstrap" + Arrays.toString(members) + " of " + parent;
    }
}
