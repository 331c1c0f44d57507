package org.jmscclpp.samples;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import reactor.core.publisher.Mono;

/**
 * A {@link Bootstrap} whose ranks live in one JVM and meet in a shared hub: enough to drive the
 * benchmark's operations in tests without sockets. Collectives are matched by each rank's call count;
 * messages per (from, to, tag) in order.
 */
final class LoopbackBootstrap implements Bootstrap {

    private static final class Hub {
        final int size;
        final Map<Long, byte[][]> contributions = new HashMap<>();
        final Map<Long, CompletableFuture<byte[][]>> rounds = new HashMap<>();
        final Map<List<Integer>, ArrayDeque<byte[]>> mail = new HashMap<>();
        final Map<List<Integer>, ArrayDeque<CompletableFuture<byte[]>>> waiting = new HashMap<>();

        Hub(int size) {
            this.size = size;
        }

        synchronized CompletableFuture<byte[][]> contribute(long round, int rank, byte[] data) {
            byte[][] c = contributions.computeIfAbsent(round, k -> new byte[size][]);
            CompletableFuture<byte[][]> f = rounds.computeIfAbsent(round, k -> new CompletableFuture<>());
            c[rank] = data.clone();
            for (byte[] part : c) {
                if (part == null) {
                    return f;
                }
            }
            contributions.remove(round);
            rounds.remove(round);
            f.complete(c);
            return f;
        }

        synchronized void post(int from, int to, int tag, byte[] data) {
            List<Integer> key = List.of(from, to, tag);
            ArrayDeque<CompletableFuture<byte[]>> w = waiting.get(key);
            if (w != null && !w.isEmpty()) {
                w.poll().complete(data.clone());
            } else {
                mail.computeIfAbsent(key, k -> new ArrayDeque<>()).add(data.clone());
            }
        }

        synchronized CompletableFuture<byte[]> take(int from, int to, int tag) {
            List<Integer> key = List.of(from, to, tag);
            ArrayDeque<byte[]> m = mail.get(key);
            if (m != null && !m.isEmpty()) {
                return CompletableFuture.completedFuture(m.poll());
            }
            CompletableFuture<byte[]> f = new CompletableFuture<>();
            waiting.computeIfAbsent(key, k -> new ArrayDeque<>()).add(f);
            return f;
        }
    }

    private final Hub hub;
    private final int rank;
    private long collectives;

    private LoopbackBootstrap(Hub hub, int rank) {
        this.hub = hub;
        this.rank = rank;
    }

    /** {@code n} connected ranks. */
    static List<LoopbackBootstrap> group(int n) {
        Hub hub = new Hub(n);
        List<LoopbackBootstrap> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ranks.add(new LoopbackBootstrap(hub, r));
        }
        return ranks;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return hub.size;
    }

    @Override
    public int nRanksPerNode() {
        return hub.size;
    }

    private Mono<byte[][]> collective(byte[] data, Duration timeout) {
        return Mono.defer(() -> {
            long round;
            synchronized (this) {
                round = collectives++;
            }
            return Mono.fromFuture(hub.contribute(round, rank, data)).timeout(timeout, Mono.error(() ->
                    JmscclppException.builder(ErrorCode.TIMEOUT, "collective " + round).rank(rank).build()));
        });
    }

    @Override
    public Mono<byte[]> allGather(byte[] local, Duration timeout) {
        return collective(local, timeout).map(parts -> {
            byte[] all = new byte[parts.length * local.length];
            for (int r = 0; r < parts.length; r++) {
                System.arraycopy(parts[r], 0, all, r * local.length, local.length);
            }
            return all;
        });
    }

    @Override
    public Mono<Void> barrier(Duration timeout) {
        return collective(new byte[0], timeout).then();
    }

    @Override
    public Mono<byte[]> broadcast(int root, byte[] data, Duration timeout) {
        return collective(data, timeout).map(parts -> parts[root].clone());
    }

    @Override
    public Mono<Void> send(int peer, int tag, byte[] data, Duration timeout) {
        return Mono.fromRunnable(() -> hub.post(rank, peer, tag, data));
    }

    @Override
    public Mono<byte[]> recv(int peer, int tag, Duration timeout) {
        return Mono.defer(() -> Mono.fromFuture(hub.take(peer, rank, tag))).timeout(timeout, Mono.error(() ->
                JmscclppException.builder(ErrorCode.TIMEOUT, "recv").rank(rank).peer(peer).tag(tag).build()));
    }

    @Override
    public void abort(String reason) {
        throw new UnsupportedOperationException("the loopback bootstrap has nothing to abort");
    }

    @Override
    public void close() {
    }
}
