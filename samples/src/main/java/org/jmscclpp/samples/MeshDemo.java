package org.jmscclpp.samples;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code mesh-demo}: the README's communicator pipeline, as one {@link Mono}: bootstrap, register a
 * buffer, build a mesh over HOST_IPC (connections, exchanged memories, semaphores), write this
 * rank's slice into every peer, flush, signal, wait; then every rank checks that each slice holds
 * its owner's pattern and rank 0 prints one line.
 */
public final class MeshDemo implements Sample {

    public static final String NAME = "mesh-demo";
    private static final long SLICE = 1 << 16;

    @Override
    public int run(RankEnvironment env, List<String> args) {
        Sample.requireNoArguments(NAME, args);
        int rank = env.rank();
        int nRanks = env.worldSize();
        long slice = SLICE;
        TcpBootstrap tcp = TcpBootstrap.create(rank, nRanks, BootstrapOptions.fromEnvironment());
        // --- the README's example, unchanged except for how the bootstrap starts, the pattern fill and the check ---
        Backend backend = Backends.named("host");
        Mono<Void> job = env.join(tcp)
            .flatMap(bootstrap -> {
                Communicator comm = Communicator.create(bootstrap, backend);
                DeviceBuffer buf = backend.allocate(nRanks * slice);              // this rank's slice at rank * slice
                buf.hostSegment().asSlice(rank * slice, slice).fill((byte) (rank + 1));
                RegisteredMemory local = comm.registerMemory(buf, TransportFlags.of(Transport.HOST_IPC));
                return comm.mesh(local, EndpointConfig.of(Transport.HOST_IPC))   // connect + exchange + semaphores, one Mono
                    .flatMap(mesh -> {
                        List<Host2HostSemaphore> sems = new ArrayList<>();
                        for (int peer : mesh.peers()) {
                            mesh.connection(peer).write(mesh.remoteMemory(peer), rank * slice, local, rank * slice, slice);
                            sems.add(new Host2HostSemaphore(mesh.semaphore(peer)));
                        }
                        return Flux.fromIterable(mesh.peers()).concatMap(p -> mesh.connection(p).flush())
                            .thenMany(Flux.fromIterable(sems)).doOnNext(Host2HostSemaphore::signal)
                            .thenMany(Flux.fromIterable(sems)).concatMap(Host2HostSemaphore::nextSignal)
                            .then(Mono.<Void>fromRunnable(() -> check(buf.hostSegment(), nRanks, slice, rank)));
                    })
                    .doFinally(s -> { comm.close(); buf.close(); bootstrap.close(); });
            });
        // --- end of the README's example ---
        try {
            Blocking.done(job.timeout(Duration.ofSeconds(60)), Duration.ofSeconds(65), rank, NAME);
        } finally {
            tcp.close();
            backend.close();
        }
        if (rank == 0) {
            System.out.printf("%s: %d ranks each wrote %d bytes into every peer over HOST_IPC; every slice checked: OK%n",
                    NAME, nRanks, slice);
        }
        return 0;
    }

    /** Every slice r of {@code all} must hold the byte r + 1. */
    static void check(MemorySegment all, int nRanks, long slice, int rank) {
        for (int r = 0; r < nRanks; r++) {
            for (long i = 0; i < slice; i++) {
                byte b = all.get(ValueLayout.JAVA_BYTE, r * slice + i);
                if (b != (byte) (r + 1)) {
                    throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "slice " + r + " byte " + i + " is " + b
                            + ", expected " + (r + 1)).rank(rank).phase(NAME + " check").build();
                }
            }
        }
    }
}
