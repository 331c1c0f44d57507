package org.jmscclpp.samples;

import java.time.Duration;
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
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.proxy.FlushCompletion;
import org.jmscclpp.core.proxy.ProxyService;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * {@code port-channel-demo}: the README's proxy example. Every rank builds a {@link PortChannel}
 * to every peer through its own {@link ProxyService}; a Java thread standing in for a kernel puts
 * this rank's slice into every peer and flushes; the service's {@link FlushCompletion}s (one per
 * peer: "my slice is in that peer's memory") drive the next step, a barrier, after which every
 * rank checks every slice.
 */
public final class PortChannelDemo implements Sample {

    public static final String NAME = "port-channel-demo";
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
        Mono<List<FlushCompletion>> job = env.join(tcp)
            .flatMap(bootstrap -> {
                Communicator comm = Communicator.create(bootstrap, backend);
                ProxyService proxy = ProxyService.builder(backend).build();
                DeviceBuffer buf = backend.allocate(nRanks * slice);
                buf.hostSegment().asSlice(rank * slice, slice).fill((byte) (rank + 1));
                RegisteredMemory local = comm.registerMemory(buf, TransportFlags.of(Transport.HOST_IPC));
                MemoryId src = proxy.addMemory(local);
                return comm.mesh(local, EndpointConfig.of(Transport.HOST_IPC))
                    .flatMapMany(mesh -> Flux.fromIterable(mesh.peers()).concatMap(peer ->
                        proxy.buildAndAddSemaphore(comm, mesh.connection(peer))
                            .map(sem -> proxy.portChannel(sem, proxy.addMemory(mesh.remoteMemory(peer)), src))))
                    .collectList()
                    .flatMap(channels -> {
                        // the "kernel": put my slice into every peer, then flush each channel
                        Mono<FlushCompletion> kernel = Mono.<FlushCompletion>fromRunnable(() -> channels.forEach(ch -> {
                            ch.put(rank * slice, slice);
                            ch.flush();
                        })).subscribeOn(Schedulers.boundedElastic());
                        proxy.start();
                        return Flux.merge(proxy.flushes().take(channels.size()), kernel)  // subscribe, then push
                            .collectList()                                  // every peer holds my slice ...
                            .flatMap(done -> bootstrap.barrier()            // ... and, after the barrier, I hold theirs
                                .then(Mono.fromCallable(() -> {
                                    MeshDemo.check(buf.hostSegment(), nRanks, slice, rank);
                                    return done;
                                })));
                    })
                    .doFinally(s -> { proxy.close(); comm.close(); buf.close(); bootstrap.close(); });
            });
        // --- end of the README's example ---
        List<FlushCompletion> done;
        try {
            done = Blocking.value(job.timeout(Duration.ofSeconds(60)), Duration.ofSeconds(65), rank, NAME);
        } finally {
            tcp.close();
            backend.close();
        }
        long bytes = done.stream().mapToLong(FlushCompletion::bytes).sum();
        if (done.size() != nRanks - 1 || bytes != (nRanks - 1) * slice) {
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "expected " + (nRanks - 1) + " flush completions of "
                    + slice + " bytes, got " + done).rank(rank).phase(NAME).build();
        }
        if (rank == 0) {
            System.out.printf("%s: %d ranks; %d flush completions of %d bytes each drove the barrier; every slice "
                    + "checked: OK%n", NAME, nRanks, done.size(), slice);
        }
        return 0;
    }
}
