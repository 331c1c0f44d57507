package org.jmscclpp.samples;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.MemoryChannel;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.nativebridge.CudaStream;
import org.jspecify.annotations.Nullable;

/**
 * Allgather {@code memory} on the host backend: a memory channel to every peer whose {@code dst}
 * is the peer's output. A run: a ready round (signal and wait on every peer: each has finished
 * with its output), this rank's slice copied into slice {@code rank} of its own output (unless in
 * place), {@code put} of that slice into the same slice of every peer's output and a signal after
 * it, then a wait for every peer's signal: every slice is here.
 */
final class HostMemoryAllGather implements Collective {

    private final HostLinks links;
    private final long maxSize;
    private final DeviceBuffer input;
    private final DeviceBuffer output;
    private final List<AutoCloseable> owned = new ArrayList<>();
    private final List<MemoryChannel.DeviceHandle> handles = new ArrayList<>();

    HostMemoryAllGather(CollectiveSetup setup) {
        this.links = new HostLinks(setup, "the host allgather");
        this.maxSize = setup.maxSize();
        this.input = own(links.allocate(maxSize));
        try {
            this.output = own(links.allocate(maxSize));
            RegisteredMemory out = own(links.register(output));
            List<Integer> peers = links.peers();
            Map<Integer, MemoryChannel> channels = links.perPeer(peers, peer -> links.connect(peer)
                    .flatMap(c -> links.memoryChannel(c, out, out)), "allgather setup");
            for (int peer : peers) {
                handles.add(channels.get(peer).deviceHandle());
            }
        } catch (RuntimeException e) {
            HostCollectives.closeAfterFailure(owned, e);
            throw e;
        }
    }

    private <T extends AutoCloseable> T own(T resource) {
        owned.add(resource);
        return resource;
    }

    @Override
    public CollectiveKind kind() {
        return CollectiveKind.ALLGATHER;
    }

    @Override
    public String algorithm() {
        return "memory";
    }

    @Override
    public long maxSize() {
        return maxSize;
    }

    @Override
    public DeviceBuffer input() {
        return input;
    }

    @Override
    public DeviceBuffer output() {
        return output;
    }

    @Override
    public void enqueue(long count, DataType type, boolean inPlace) {
        links.checkRun(this, count, type, inPlace);
        if (count == 0) {
            return;
        }
        long bytes = count * type.bytes();
        long mine = links.rank * bytes;
        Duration timeout = links.timeout;
        HostLinks.ready(handles, timeout);
        if (!inPlace) {
            links.backend.copy(output, mine, input, 0, bytes);
        }
        for (MemoryChannel.DeviceHandle h : handles) {
            h.put(mine, mine, bytes);
            h.signal();
        }
        for (MemoryChannel.DeviceHandle h : handles) {
            h.wait(timeout);
        }
    }

    @Override
    public void synchronize(Duration timeout) {
        // enqueue ran the operation to its end on the calling thread
    }

    @Override
    public @Nullable CudaStream stream() {
        return null;
    }

    @Override
    public void close() {
        HostCollectives.closeAll(owned, links.rank, "allgather close");
    }
}
