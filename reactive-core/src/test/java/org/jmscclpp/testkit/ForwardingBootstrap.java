package org.jmscclpp.testkit;

import java.time.Duration;
import org.jmscclpp.core.Bootstrap;
import reactor.core.publisher.Mono;

/** A bootstrap that forwards everything to another; tests override an operation to break or observe it. */
public class ForwardingBootstrap implements Bootstrap {

    protected final Bootstrap delegate;

    public ForwardingBootstrap(Bootstrap delegate) {
        this.delegate = delegate;
    }

    @Override
    public int rank() {
        return delegate.rank();
    }

    @Override
    public int size() {
        return delegate.size();
    }

    @Override
    public int nRanksPerNode() {
        return delegate.nRanksPerNode();
    }

    @Override
    public Mono<byte[]> allGather(byte[] local, Duration timeout) {
        return delegate.allGather(local, timeout);
    }

    @Override
    public Mono<Void> barrier(Duration timeout) {
        return delegate.barrier(timeout);
    }

    @Override
    public Mono<byte[]> broadcast(int root, byte[] data, Duration timeout) {
        return delegate.broadcast(root, data, timeout);
    }

    @Override
    public Mono<Void> send(int peer, int tag, byte[] data, Duration timeout) {
        return delegate.send(peer, tag, data, timeout);
    }

    @Override
    public Mono<byte[]> recv(int peer, int tag, Duration timeout) {
        return delegate.recv(peer, tag, timeout);
    }

    @Override
    public void abort(String reason) {
        delegate.abort(reason);
    }

    @Override
    public void close() {
        delegate.close();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + delegate + "]";
    }
}
