package org.jmscclpp.samples;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.MemoryChannel;
import org.jmscclpp.core.RegisteredMemory;

/**
 * Allgather {@code memory} on the host backend: a memory channel to every peer whose {@code dst}
 * is the peer's output(). A run: a ready round (signal and wait on every peer: each has finished
 * with its output()), this rank's slice copied into slice {@code rank} of its own output (unless in
 * place), {@code put} of that slice into the same slice of every peer's output and a signal after
 * it, then a wait for every peer's signal: every slice is here.
 */
final class HostMemoryAllGather extends HostCollective {

    private final List<MemoryChannel.DeviceHandle> handles = new ArrayList<>();

    HostMemoryAllGather(CollectiveSetup setup) {
        super(setup, CollectiveKind.ALLGATHER, "memory", "allgather");
        try {
            RegisteredMemory out = own(links.register(output()));
            List<Integer> peers = links.peers();
            Map<Integer, MemoryChannel> channels = links.perPeer(peers, peer -> links.connect(peer)
                    .flatMap(c -> links.memoryChannel(c, out, out)), "allgather setup");
            for (int peer : peers) {
                handles.add(channels.get(peer).deviceHandle());
            }
        } catch (RuntimeException e) {
            throw failed(e);
        }
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
            links.backend.copy(output(), mine, input(), 0, bytes);
        }
        for (MemoryChannel.DeviceHandle h : handles) {
            h.put(mine, mine, bytes);
            h.signal();
        }
        for (MemoryChannel.DeviceHandle h : handles) {
            h.wait(timeout);
        }
    }

}
