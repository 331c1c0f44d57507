package org.jmscclpp.samples;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryChannel;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.function.Tuples;

/**
 * What the host collectives share: the job's communicator and deadline, buffers registered for
 * {@code HOST_IPC}, connections set up with every peer at once (a rank that waited for one peer
 * before asking the next could wait forever on a ring), the run checks of {@link Collective#enqueue},
 * and the "ready" round that keeps a fast rank from writing into a peer's buffers before the peer
 * has finished with them.
 */
final class HostLinks {

    /** The communicator tag of every host collective's connections (each collective makes its own, in creation order). */
    static final int TAG = 0x484331;   // "HC1"

    final CollectiveSetup setup;
    final Communicator comm;
    final Backend backend;
    final int rank;
    final int n;
    final Duration timeout;

    HostLinks(CollectiveSetup setup, String what) {
        this.setup = setup;
        this.comm = setup.communicator();
        this.backend = setup.backend();
        this.rank = setup.rank();
        this.n = setup.size();
        this.timeout = setup.timeout();
        if (!backend.connectionTransports().has(Transport.HOST_IPC) || !backend.ipcTransports().has(Transport.HOST_IPC)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, what + " runs on a backend that connects and "
                    + "shares memory over HOST_IPC; the " + backend.name() + " backend offers "
                    + backend.connectionTransports()).rank(rank).phase("collective setup").build();
        }
        if (setup.maxSize() < 1) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the largest size must be at least 1 byte, got "
                    + setup.maxSize()).rank(rank).phase("collective setup").build();
        }
    }

    /** Every rank but this one, in increasing order. */
    List<Integer> peers() {
        return java.util.stream.IntStream.range(0, n).filter(p -> p != rank).boxed().toList();
    }

    /** A buffer of at least {@code bytes}, rounded up to 16 so that packet verbs may read whole 8-byte words past a tail. */
    DeviceBuffer allocate(long bytes) {
        return backend.allocate(Math.max(16, (bytes + 15) & ~15L));
    }

    RegisteredMemory register(DeviceBuffer buffer) {
        return comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC));
    }

    Mono<Connection> connect(int peer) {
        return comm.connect(peer, TAG, EndpointConfig.of(Transport.HOST_IPC), timeout);
    }

    /** One end of a memory channel (see {@link MemoryChannel#build}) over {@code connection}. */
    Mono<MemoryChannel> memoryChannel(Connection connection, RegisteredMemory exposed, RegisteredMemory src,
                                      RegisteredMemory packets) {
        return MemoryChannel.build(comm, connection, exposed, src, packets);
    }

    Mono<MemoryChannel> memoryChannel(Connection connection, RegisteredMemory exposed, RegisteredMemory src) {
        return MemoryChannel.build(comm, connection, exposed, src, null);
    }

    /**
     * Runs {@code perPeer} for every one of {@code peers} at once and waits, up to twice the
     * deadline, for all of them; the results by peer.
     */
    <T> Map<Integer, T> perPeer(List<Integer> peers, IntFunction<Mono<T>> perPeer, String phase) {
        List<reactor.util.function.Tuple2<Integer, T>> done = Blocking.value(Flux.fromIterable(peers)
                .flatMap(p -> perPeer.apply(p).map(v -> Tuples.of(p, v)))
                .collectList(), timeout.multipliedBy(2).plusSeconds(5), rank, phase);
        Map<Integer, T> byPeer = new HashMap<>();
        done.forEach(t -> byPeer.put(t.getT1(), t.getT2()));
        return byPeer;
    }

    /** Checks one run's arguments against the collective, as {@link Collective#enqueue} promises. */
    void checkRun(Collective c, long count, DataType type, boolean inPlace) {
        CollectiveKind kind = c.kind();
        String problem = null;
        if (count < 0) {
            problem = "a count of " + count + " elements";
        } else if (inPlace && !kind.hasInPlace()) {
            problem = kind.label() + " has no in-place variant";
        } else if (count > Long.MAX_VALUE / 4 / n || kind.size(count, n, type) > c.maxSize()) {
            problem = count + " elements of " + type + " need more than the " + c.maxSize() + " bytes the "
                    + c.algorithm() + " " + kind.label() + " was set up for";
        }
        if (problem != null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, problem).rank(rank)
                    .phase(c.algorithm() + " " + kind.label()).build();
        }
    }

    /** Signals every handle's peer, then waits for every peer's signal: every rank entered this round. */
    static void ready(List<MemoryChannel.DeviceHandle> handles, Duration timeout) {
        handles.forEach(MemoryChannel.DeviceHandle::signal);
        handles.forEach(h -> h.wait(timeout));
    }
}
