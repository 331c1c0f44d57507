package org.jmscclpp.bootstrap;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import reactor.core.publisher.Mono;

/**
 * The bootstrap's collectives, written once over point-to-point messages of one collective
 * (identified by its sequence number, so consecutive collectives never mix).
 *
 * <p>allGather picks by size: recursive doubling (power-of-two rank counts) or Bruck (others) move
 * the data in ceil(log2 N) steps; above {@link #RING_THRESHOLD_BYTES} of output the ring of the
 * seeds takes over. barrier is the same log-step exchange with empty blocks; broadcast follows a
 * binomial tree. In every step the lower rank of a pair opens the connection if there is none.
 */
final class Collectives {

    /** Output size from which allGather uses the ring. */
    static final long RING_THRESHOLD_BYTES = 32L << 20;

    /**
     * Rank count from which small allGathers and barriers go up and down the binomial tree of rank 0
     * instead of exchanging pairwise: 2(N-1) messages over connections initialization already opened
     * (the address book travelled that tree), where recursive doubling needs N log N messages and
     * N log N / 2 new connections — on a few cores the message count is what costs.
     */
    static final int TREE_MIN_RANKS = 32;

    /**
     * From this many ranks the tree also serves hosts that run more ranks than cores: there every
     * message costs a context switch, and fewer messages beat fewer steps (measured with 4, 8 and 16
     * processes on 2 cores: the 4-rank allGather of 8 B fell from 71 to 45 µs, the 16-rank one
     * from 1756 to 895 µs, the 8-rank barrier from 322 to 116 µs). Up to {@link #CROWDED_TREE_MAX_BYTES}
     * of output; above, pairwise was faster (64 KiB per rank: 1703 against 2654 µs with 8 ranks,
     * 269 against 484 µs with 4).
     */
    static final int CROWDED_TREE_MIN_RANKS = 4;

    static final int CROWDED_TREE_MAX_BYTES = 64 << 10;

    /** Point-to-point messages of one collective. */
    interface Transport {
        int rank();

        int size();

        /** Sends {@code len} bytes of {@code data} from {@code off} to {@code peer}. */
        Mono<Void> send(int peer, long seq, byte[] data, int off, int len, long deadlineNanos, String phase);

        /** Receives the next message of collective {@code seq} from {@code peer}. */
        Mono<byte[]> recv(int peer, long seq, long deadlineNanos, String phase);

        /**
         * Whether some host of the job runs more ranks than it has cores; must be the same on every
         * rank, since it picks the algorithm.
         */
        boolean crowded();
    }

    private Collectives() {
    }

    static Mono<byte[]> allGather(Transport t, long seq, byte[] local, long deadline) {
        int n = t.size();
        int len = local.length;
        byte[] out = new byte[Math.multiplyExact(n, len)];
        System.arraycopy(local, 0, out, t.rank() * len, len);
        if (n == 1) {
            return Mono.just(out);
        }
        Mono<Void> run;
        if ((long) n * len >= RING_THRESHOLD_BYTES) {
            run = ring(t, seq, out, len, deadline);
        } else if (n >= TREE_MIN_RANKS || crowdedTree(t, (long) n * len)) {
            return treeAllGather(t, seq, out, len, deadline, "allGather");
        } else if (Integer.bitCount(n) == 1) {
            run = recursiveDoubling(t, seq, out, len, deadline, "allGather");
        } else {
            run = bruck(t, seq, local, out, len, deadline, "allGather");
        }
        return run.thenReturn(out);
    }

    static Mono<Void> barrier(Transport t, long seq, long deadline) {
        int n = t.size();
        if (n == 1) {
            return Mono.empty();
        }
        byte[] none = new byte[0];
        if (n >= TREE_MIN_RANKS || crowdedTree(t, 0)) {
            return treeAllGather(t, seq, none, 0, deadline, "barrier").then();
        }
        return Integer.bitCount(n) == 1
                ? recursiveDoubling(t, seq, none, 0, deadline, "barrier")
                : bruck(t, seq, none, none, 0, deadline, "barrier");
    }

    private static boolean crowdedTree(Transport t, long outputBytes) {
        return t.size() >= CROWDED_TREE_MIN_RANKS && outputBytes <= CROWDED_TREE_MAX_BYTES && t.crowded();
    }

    /**
     * Binomial-tree broadcast; {@code onReceived} sees the bytes on every rank before they are
     * forwarded (initialization installs the address book there, which the forwarding needs).
     */
    static Mono<byte[]> broadcast(Transport t, long seq, int root, byte[] data, long deadline,
                                  java.util.function.Consumer<byte[]> onReceived) {
        int n = t.size();
        int me = (t.rank() - root + n) % n;
        int mask = 1;
        Mono<byte[]> payload = Mono.just(data);
        while (mask < n) {
            if ((me & mask) != 0) {
                int parent = (me - mask + root) % n;
                payload = t.recv(parent, seq, deadline, "broadcast from rank " + root);
                break;
            }
            mask <<= 1;
        }
        int lowest = mask;
        return payload.flatMap(bytes -> {
            onReceived.accept(bytes);
            Mono<Void> sends = Mono.empty();
            for (int m = lowest >> 1; m > 0; m >>= 1) {
                if (me + m < n) {
                    int child = (me + m + root) % n;
                    sends = sends.and(t.send(child, seq, bytes, 0, bytes.length, deadline,
                            "broadcast from rank " + root));
                }
            }
            return sends.thenReturn(bytes);
        });
    }

    /**
     * Binomial gather to rank 0 (each rank collects the contiguous blocks of its subtree from its
     * children, then sends them to its parent), then a binomial broadcast of the whole result.
     */
    private static Mono<byte[]> treeAllGather(Transport t, long seq, byte[] out, int len, long deadline,
                                              String operation) {
        int n = t.size();
        int rank = t.rank();
        Mono<Void> gather = Mono.empty();
        int mask = 1;
        while (mask < n && (rank & mask) == 0) {
            int child = rank + mask;
            if (child < n) {
                int blocks = Math.min(mask, n - child);
                gather = gather.and(t.recv(child, seq, deadline, operation + " tree gather")
                        .doOnNext(in -> place(in, out, child * len, blocks * len, rank, child)).then());
            }
            mask <<= 1;
        }
        if (rank != 0) {
            int parent = rank - mask;
            int blocks = Math.min(mask, n - rank);
            gather = gather.then(Mono.defer(() -> t.send(parent, seq, out, rank * len, blocks * len, deadline,
                    operation + " tree gather")));
        }
        return gather.then(Mono.defer(() -> broadcast(t, seq, 0, out, deadline, in -> {
            if (in != out) {
                place(in, out, 0, out.length, rank, 0);
            }
        }))).thenReturn(out);
    }

    /**
     * Step k exchanges the 2^k blocks gathered so far with rank XOR 2^k. {@code operation} names
     * the phase in errors: a barrier is this exchange with empty blocks, and must say so.
     */
    private static Mono<Void> recursiveDoubling(Transport t, long seq, byte[] out, int len, long deadline,
                                                String operation) {
        int n = t.size();
        int rank = t.rank();
        Mono<Void> chain = Mono.empty();
        for (int dist = 1; dist < n; dist <<= 1) {
            int d = dist;
            chain = chain.then(Mono.defer(() -> {
                int partner = rank ^ d;
                int myStart = (rank & ~(d - 1)) * len;
                int theirStart = (partner & ~(d - 1)) * len;
                int bytes = d * len;
                String phase = operation + " recursive-doubling step " + Integer.numberOfTrailingZeros(d);
                return t.send(partner, seq, out, myStart, bytes, deadline, phase)
                        .and(t.recv(partner, seq, deadline, phase)
                                .doOnNext(in -> place(in, out, theirStart, bytes, rank, partner)));
            }));
        }
        return chain;
    }

    /**
     * Bruck: after step k a rank holds the blocks of ranks rank .. rank + 2^(k+1) - 1 (mod N), in
     * that order, in a scratch array; at the end the blocks are rotated into rank order.
     */
    private static Mono<Void> bruck(Transport t, long seq, byte[] local, byte[] out, int len, long deadline,
                                    String operation) {
        int n = t.size();
        int rank = t.rank();
        byte[] scratch = new byte[Math.multiplyExact(n, len)];
        System.arraycopy(local, 0, scratch, 0, len);
        Mono<Void> chain = Mono.empty();
        for (int dist = 1; dist < n; dist <<= 1) {
            int d = dist;
            chain = chain.then(Mono.defer(() -> {
                int blocks = Math.min(d, n - d);
                int to = (rank - d + n) % n;
                int from = (rank + d) % n;
                String phase = operation + " bruck step " + Integer.numberOfTrailingZeros(d);
                return t.send(to, seq, scratch, 0, blocks * len, deadline, phase)
                        .and(t.recv(from, seq, deadline, phase)
                                .doOnNext(in -> place(in, scratch, d * len, blocks * len, rank, from)));
            }));
        }
        return chain.then(Mono.fromRunnable(() -> {
            for (int i = 0; i < n; i++) {
                System.arraycopy(scratch, i * len, out, ((rank + i) % n) * len, len);
            }
        }));
    }

    /** The ring of the seeds: N - 1 steps, each forwarding one block to the next rank. */
    private static Mono<Void> ring(Transport t, long seq, byte[] out, int len, long deadline) {
        int n = t.size();
        int rank = t.rank();
        int next = (rank + 1) % n;
        int prev = (rank - 1 + n) % n;
        Mono<Void> chain = Mono.empty();
        for (int step = 0; step < n - 1; step++) {
            int s = step;
            chain = chain.then(Mono.defer(() -> {
                int sendBlock = (rank - s + n) % n;
                int recvBlock = (rank - s - 1 + n) % n;
                String phase = "allGather ring step " + s;
                return t.send(next, seq, out, sendBlock * len, len, deadline, phase)
                        .and(t.recv(prev, seq, deadline, phase)
                                .doOnNext(in -> place(in, out, recvBlock * len, len, rank, prev)));
            }));
        }
        return chain;
    }

    private static void place(byte[] in, byte[] out, int at, int expected, int rank, int peer) {
        if (in.length != expected) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "rank " + peer + " sent " + in.length
                            + " bytes where " + expected + " were expected: ranks called allGather with different sizes")
                    .rank(rank).peer(peer).phase("allGather").build();
        }
        System.arraycopy(in, 0, out, at, expected);
    }
}
