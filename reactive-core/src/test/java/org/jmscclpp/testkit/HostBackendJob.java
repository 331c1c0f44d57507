package org.jmscclpp.testkit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.host.HostBackend;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Signal;

/**
 * A job of n ranks in this JVM on the host backend: an in-memory bootstrap, a backend and a
 * communicator per rank, and the collective communicators that {@code setUp} makes of them, all
 * set up at once (as every rank of a job calls it at once). Closing it closes all of them.
 */
public final class HostBackendJob implements AutoCloseable {

    public final List<InMemoryBootstrap> bootstraps;
    public final List<HostBackend> backends = new ArrayList<>();
    public final List<Communicator> communicators = new ArrayList<>();
    /** Each rank's setup: its collective communicator, or its error. */
    public final List<Signal<CollectiveComm>> setups;

    /** Sets up {@code n} ranks with {@code setUp(rank, communicator)}, waiting at most {@code limit}. */
    public HostBackendJob(int n, BiFunction<Integer, Communicator, Mono<CollectiveComm>> setUp, Duration limit) {
        this.bootstraps = InMemoryBootstrap.group(n);
        List<Mono<Signal<CollectiveComm>>> all = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                backends.add(HostBackend.open());
                communicators.add(Communicator.create(bootstraps.get(r), backends.get(r)));
                all.add(setUp.apply(r, communicators.get(r)).materialize());
            }
            this.setups = Flux.mergeSequential(all).collectList().block(limit);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Every rank's collective communicator; throws the first rank's setup error. */
    public List<CollectiveComm> comms() {
        List<CollectiveComm> out = new ArrayList<>();
        for (Signal<CollectiveComm> s : setups) {
            if (s.getThrowable() != null) {
                throw new IllegalStateException("a rank's setup failed", s.getThrowable());
            }
            out.add(s.get());
        }
        return out;
    }

    @Override
    public void close() {
        if (setups != null) {
            setups.forEach(s -> {
                if (s.get() != null) {
                    s.get().close();
                }
            });
        }
        communicators.forEach(Communicator::close);
        bootstraps.forEach(InMemoryBootstrap::close);
        backends.forEach(HostBackend::close);
    }
}
