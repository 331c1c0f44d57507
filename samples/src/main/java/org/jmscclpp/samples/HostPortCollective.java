package org.jmscclpp.samples;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.PortChannel;
import org.jmscclpp.core.ProxyService;
import org.jmscclpp.core.RegisteredMemory;
import reactor.core.publisher.Mono;

/**
 * The {@code port} algorithms of the host backend: allgather, alltoall and sendrecv through
 * {@link PortChannel}s of a {@link ProxyService} the collective owns, driven by the calling thread
 * as a kernel drives them on a GPU. Each channel's destination is the peer's output. A run: a
 * ready round ({@code signal} to each rank that will write here, {@code wait} for each rank this
 * one writes to), the local part copied, a {@code putWithSignal} per destination, a
 * {@code flush} of each (so the source may change once the run returned) and a {@code wait} for
 * each rank that writes here (its data is here).
 * <ul>
 *   <li>allgather: slice {@code rank} of the output (the input copied there unless in place) into
 *       the same slice of every peer;</li>
 *   <li>alltoall: block {@code p} of the input into block {@code rank} of peer {@code p}'s output;</li>
 *   <li>sendrecv: the input into the output of rank + 1; the output filled by rank − 1.</li>
 * </ul>
 */
final class HostPortCollective extends HostCollective {

    /** Channels to the ranks this one writes to. */
    private final List<PortChannel> targets = new ArrayList<>();
    /** Channels to the ranks that write here. */
    private final List<PortChannel> sources = new ArrayList<>();

    HostPortCollective(CollectiveSetup setup, CollectiveKind kind) {
        super(setup, portKind(kind), "port", kind.label());
        try {
            RegisteredMemory in = own(links.register(input()));
            RegisteredMemory out = own(links.register(output()));
            ProxyService proxy = own(ProxyService.builder(links.backend).build());
            MemoryId src = proxy.addMemory(kind == CollectiveKind.ALLGATHER ? out : in);
            int n = links.n;
            int next = (links.rank + 1) % n;
            int prev = (links.rank + n - 1) % n;
            List<Integer> writeTo = kind == CollectiveKind.SENDRECV ? (n == 1 ? List.of() : List.of(next))
                    : links.peers();
            List<Integer> readFrom = kind == CollectiveKind.SENDRECV ? (n == 1 ? List.of() : List.of(prev))
                    : links.peers();
            LinkedHashSet<Integer> linked = new LinkedHashSet<>(writeTo);
            linked.addAll(readFrom);
            Map<Integer, PortChannel> channels = links.perPeer(List.copyOf(linked), peer -> links.connect(peer)
                    .flatMap(c -> proxy.buildAndAddSemaphore(links.comm, c)
                            .flatMap(sem -> Mono.zip(links.comm.sendMemory(out, peer, HostLinks.TAG, links.timeout)
                                            .thenReturn(Boolean.TRUE),
                                    links.comm.recvMemory(peer, HostLinks.TAG, links.timeout))
                                    .map(t -> proxy.portChannel(sem, proxy.addMemory(t.getT2()), src)))),
                    kind.label() + " setup");
            writeTo.forEach(p -> targets.add(channels.get(p)));
            readFrom.forEach(p -> sources.add(channels.get(p)));
            proxy.start();
        } catch (RuntimeException e) {
            throw failed(e);
        }
    }

    private static CollectiveKind portKind(CollectiveKind kind) {
        if (kind == CollectiveKind.ALLREDUCE) {
            throw new IllegalArgumentException("the port algorithms move data; allreduce is HostAllReduce's");
        }
        return kind;
    }

    @Override
    public void enqueue(long count, DataType type, boolean inPlace) {
        links.checkRun(this, count, type, inPlace);
        if (count == 0) {
            return;
        }
        long bytes = count * type.bytes();
        int r = links.rank;
        Duration timeout = links.timeout;
        sources.forEach(PortChannel::signal);
        targets.forEach(ch -> ch.wait(timeout));
        switch (kind()) {
            case ALLGATHER -> {
                if (!inPlace) {
                    links.backend.copy(output(), r * bytes, input(), 0, bytes);
                }
                targets.forEach(ch -> ch.putWithSignal(r * bytes, r * bytes, bytes));
            }
            case ALLTOALL -> {
                links.backend.copy(output(), r * bytes, input(), r * bytes, bytes);
                targets.forEach(ch -> {
                    long p = ch.context().remoteRank();
                    ch.putWithSignal(r * bytes, p * bytes, bytes);
                });
            }
            case SENDRECV -> {
                if (targets.isEmpty()) {
                    links.backend.copy(output(), 0, input(), 0, bytes);   // one rank sends to itself
                }
                targets.forEach(ch -> ch.putWithSignal(0, 0, bytes));
            }
            case ALLREDUCE -> throw new IllegalStateException("not a port kind");
        }
        targets.forEach(ch -> ch.flush(timeout));
        sources.forEach(ch -> ch.wait(timeout));
    }

}
