package org.jmscclpp.testkit;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.host.HostBackend;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The ranks of one job in this JVM: an {@link InMemoryBootstrap} group, one host backend over a
 * test directory and a {@link Communicator} per rank. {@link #close()} closes communicators, then
 * bootstraps, then the backend.
 */
public final class CommunicatorGroup implements AutoCloseable {

    public static final Duration WAIT = Duration.ofSeconds(20);

    public final HostBackend backend;
    final List<InMemoryBootstrap> bootstraps;
    public final List<Communicator> comms = new ArrayList<>();

    public CommunicatorGroup(int n, Path shmDir) {
        this(n, shmDir, b -> b);
    }

    public CommunicatorGroup(int n, Path shmDir, java.util.function.Function<Bootstrap, Bootstrap> wrap) {
        backend = HostBackend.open(shmDir);
        bootstraps = InMemoryBootstrap.group(n);
        for (InMemoryBootstrap b : bootstraps) {
            comms.add(Communicator.create(wrap.apply(b), backend));
        }
    }

    public Communicator comm(int rank) {
        return comms.get(rank);
    }

    public int size() {
        return comms.size();
    }

    /** Runs {@code perRank} on every rank concurrently and collects the results by rank. */
    public <T> List<T> onEveryRank(IntFunction<Mono<T>> perRank) {
        return Flux.range(0, size()).flatMapSequential(r -> perRank.apply(r)).collectList().block(WAIT);
    }

    @Override
    public void close() {
        comms.forEach(Communicator::close);
        bootstraps.forEach(InMemoryBootstrap::close);
        backend.close();
    }
}
