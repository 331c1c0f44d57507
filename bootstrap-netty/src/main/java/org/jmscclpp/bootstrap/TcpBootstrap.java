package org.jmscclpp.bootstrap;

import java.time.Duration;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.UniqueId;
import reactor.core.publisher.Mono;

/** API outline; the implementation lands in the next commit. */
public final class TcpBootstrap implements Bootstrap {
    private TcpBootstrap() {
    }

    public static TcpBootstrap create(int rank, int nRanks) {
        throw new UnsupportedOperationException();
    }

    public static TcpBootstrap create(int rank, int nRanks, BootstrapOptions options) {
        throw new UnsupportedOperationException();
    }

    public static Mono<TcpBootstrap> initialize(int rank, int nRanks, UniqueId id, Duration timeout) {
        throw new UnsupportedOperationException();
    }

    public UniqueId createUniqueId() {
        throw new UnsupportedOperationException();
    }

    public Mono<TcpBootstrap> initialize(UniqueId id) {
        throw new UnsupportedOperationException();
    }

    public Mono<TcpBootstrap> initialize(String address) {
        throw new UnsupportedOperationException();
    }

    @Override public int rank() { throw new UnsupportedOperationException(); }
    @Override public int size() { throw new UnsupportedOperationException(); }
    @Override public int nRanksPerNode() { throw new UnsupportedOperationException(); }
    @Override public Mono<byte[]> allGather(byte[] local, Duration timeout) { throw new UnsupportedOperationException(); }
    @Override public Mono<Void> barrier(Duration timeout) { throw new UnsupportedOperationException(); }
    @Override public Mono<byte[]> broadcast(int root, byte[] data, Duration timeout) { throw new UnsupportedOperationException(); }
    @Override public Mono<Void> send(int peer, int tag, byte[] data, Duration timeout) { throw new UnsupportedOperationException(); }
    @Override public Mono<byte[]> recv(int peer, int tag, Duration timeout) { throw new UnsupportedOperationException(); }
    @Override public void abort(String reason) { throw new UnsupportedOperationException(); }
    @Override public void close() { }
}
