package org.jmscclpp.testkit;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.proxy.FifoLayout;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.core.spi.Tokens;

/**
 * One or two ranks of one JVM wired for the proxy tests: an {@link InMemoryBootstrap} group over a
 * host backend, and per rank a buffer registered for HOST_IPC, a HOST_IPC connection to the other
 * rank (to itself for one rank), a {@link ProxyService} holding that connection's semaphore, and a
 * {@link PortChannel} whose source is the rank's buffer and whose destination is the peer's
 * buffer (with one rank: a second local buffer). Services are built but not started.
 * {@link #close()} closes services, then communicators, then buffers.
 */
public final class ProxyFixture implements AutoCloseable {

    public static final Duration WAIT = CommunicatorGroup.WAIT;
    public static final EndpointConfig HOST_IPC = EndpointConfig.of(Transport.HOST_IPC);

    public final CommunicatorGroup group;
    final List<DeviceBuffer> buffers = new ArrayList<>();
    public final List<RegisteredMemory> memories = new ArrayList<>();
    public final List<Connection> connections;
    public final List<ProxyService> proxies = new ArrayList<>();
    public final List<SemaphoreId> semaphores;
    public final List<MemoryId> dstIds = new ArrayList<>();
    public final List<MemoryId> srcIds = new ArrayList<>();
    public final List<PortChannel> channels = new ArrayList<>();
    /** The destination buffer of a one-rank fixture, else null. */
    final DeviceBuffer selfDestination;

    public ProxyFixture(Path dir, int ranks, long bytes, Consumer<ProxyService.Builder> options) {
        if (ranks != 1 && ranks != 2) {
            throw new IllegalArgumentException("one or two ranks, not " + ranks);
        }
        group = new CommunicatorGroup(ranks, dir);
        try {
            for (int r = 0; r < ranks; r++) {
                buffers.add(group.backend.allocate(bytes));
                memories.add(group.comm(r).registerMemory(buffers.get(r), TransportFlags.of(Transport.HOST_IPC)));
            }
            connections = group.onEveryRank(r -> group.comm(r).connect(peer(r), 0, HOST_IPC));
            for (int r = 0; r < ranks; r++) {
                ProxyService.Builder b = ProxyService.builder(group.backend);
                options.accept(b);
                proxies.add(b.build());
            }
            semaphores = group.onEveryRank(r -> proxies.get(r).buildAndAddSemaphore(group.comm(r), connections.get(r)));
            List<RegisteredMemory> destinations;
            if (ranks == 1) {
                selfDestination = group.backend.allocate(bytes);
                destinations = List.of(group.comm(0).registerMemory(selfDestination, TransportFlags.of(Transport.HOST_IPC)));
            } else {
                selfDestination = null;
                destinations = group.onEveryRank(r -> {
                    Communicator c = group.comm(r);
                    return c.recvMemory(peer(r), 1).zipWith(c.sendMemory(memories.get(r), peer(r), 1).thenReturn(0),
                            (m, x) -> m);
                });
            }
            for (int r = 0; r < ranks; r++) {
                dstIds.add(proxies.get(r).addMemory(destinations.get(r)));
                srcIds.add(proxies.get(r).addMemory(memories.get(r)));
                channels.add(proxies.get(r).portChannel(semaphores.get(r), dstIds.get(r), srcIds.get(r)));
            }
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    public ProxyFixture(Path dir, int ranks, long bytes) {
        this(dir, ranks, bytes, b -> { });
    }

    int peer(int rank) {
        return (rank + 1) % group.size();
    }

    public ProxyService proxy(int rank) {
        return proxies.get(rank);
    }

    public PortChannel channel(int rank) {
        return channels.get(rank);
    }

    /** The memory rank {@code rank}'s puts land in: the peer's buffer, or the second buffer of one rank. */
    public MemorySegment destination(int rank) {
        return selfDestination != null ? selfDestination.hostSegment() : buffers.get(peer(rank)).hostSegment();
    }

    public MemorySegment source(int rank) {
        return buffers.get(rank).hostSegment();
    }

    /** Runs {@code perRank} on a platform thread per rank and waits for all; the first failure is rethrown. */
    public void onEveryRankThread(IntFunction<FifoTesting.Body> perRank, Duration timeout) throws InterruptedException {
        try (FifoTesting.Workers workers = new FifoTesting.Workers()) {
            for (int r = 0; r < group.size(); r++) {
                workers.start("rank-" + r, perRank.apply(r));
            }
            workers.join(timeout);
        }
    }

    /** The fifo's head and tail words as producers see them (the consumer's own tail is its thread's). */
    public static long head(ProxyService p) {
        return Tokens.acquire(p.fifo().buffer().hostSegment(), FifoLayout.HEAD);
    }

    public static long tail(ProxyService p) {
        return Tokens.acquire(p.fifo().buffer().hostSegment(), FifoLayout.TAIL);
    }

    public static long flushedWord(ProxyService p, SemaphoreId id) {
        return Tokens.acquire(p.flushedSegment(), 8L * id.value());
    }

    @Override
    public void close() {
        RuntimeException first = null;
        for (ProxyService p : proxies) {
            try {
                p.close();
            } catch (RuntimeException e) {
                first = first == null ? e : first;
            }
        }
        group.close();
        memories.forEach(RegisteredMemory::close);
        buffers.forEach(DeviceBuffer::close);
        if (selfDestination != null) {
            selfDestination.close();
        }
        if (first != null) {
            throw first;
        }
    }
}
