package org.jmscclpp.core.hierarchy;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Mesh;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jmscclpp.core.spi.Closeables;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;

/**
 * A rank's links to its rail (the ranks of the other hosts with its local index) for the steps
 * between hosts of {@link HierarchicalComm}: a communicator of the rail's members, one buffer
 * registered for the network transport ({@code ETHERNET}) and a mesh over it, so that every step
 * is a one-sided write into the peer's buffer followed by a semaphore signal, as a PortChannel's
 * put with signal is. The buffer is host memory of a host backend (the job's own on CPU ranks, one
 * opened for the rails on GPU ranks), so that the network transport sends it without staging.
 *
 * <p>The buffer holds {@code members} send slots and {@code members} receive slots of
 * {@value #SLOT} bytes. A step sends at most a slot to each member: the sender copies its data into
 * its send slot for the peer, writes it into its own receive slot at the peer and signals; the
 * receiver waits for the signal, copies the data out and signals back; the sender waits for that
 * answer before the step ends, so a slot is never written while its last data is still being read.
 * The order of the signals on each semaphore is the same on both ends (both run the same steps in
 * the same order), so every wait consumes the signal it expects.
 */
final class HostRail implements AutoCloseable {

    /** Bytes of one slot: the most a step sends to one member. */
    static final long SLOT = 2 << 20;

    private final int rank;
    private final int me;
    private final int[] members;
    private final Communicator communicator;
    private final DeviceBuffer buffer;
    private final RegisteredMemory memory;
    private final MemorySegment segment;
    private final Connection[] connections;
    private final RegisteredMemory[] remotes;
    private final Host2HostSemaphore[] semaphores;
    private final Supplier<@Nullable JmscclppException> failure;

    private HostRail(int rank, int me, int[] members, Communicator communicator, DeviceBuffer buffer,
                     RegisteredMemory memory, Mesh mesh, Supplier<@Nullable JmscclppException> failure) {
        this.rank = rank;
        this.me = me;
        this.members = members;
        this.communicator = communicator;
        this.buffer = buffer;
        this.memory = memory;
        this.segment = buffer.hostSegment();
        this.failure = failure;
        int n = members.length;
        this.connections = new Connection[n];
        this.remotes = new RegisteredMemory[n];
        this.semaphores = new Host2HostSemaphore[n];
        for (int p = 0; p < n; p++) {
            if (p != me) {
                connections[p] = mesh.connection(p);
                remotes[p] = mesh.remoteMemory(p);
                semaphores[p] = new Host2HostSemaphore(mesh.semaphore(p));
            }
        }
    }

    /**
     * Connects this rank with the other members of {@code rail} over {@code transport} (every
     * member calls it at once); {@code failure} tells the job's failure, which ends every wait.
     */
    static HostRail open(SubsetBootstrap rail, Backend backend, Transport transport, Duration timeout,
                         Supplier<@Nullable JmscclppException> failure) {
        int n = rail.size();
        int[] members = new int[n];
        for (int p = 0; p < n; p++) {
            members[p] = rail.member(p);
        }
        Communicator communicator = Communicator.create(rail, backend);
        DeviceBuffer buffer = null;
        RegisteredMemory memory = null;
        try {
            buffer = backend.allocate(2 * n * SLOT);
            memory = communicator.registerMemory(buffer, TransportFlags.of(transport));
            Mesh mesh = communicator.mesh(memory, peer -> EndpointConfig.of(transport), 0, timeout)
                    .timeout(timeout.multipliedBy(2).plusSeconds(5)).block();
            return new HostRail(members[rail.rank()], rail.rank(), members, communicator, buffer, memory,
                    Objects.requireNonNull(mesh, "mesh"), failure);
        } catch (RuntimeException e) {
            List<AutoCloseable> made = new ArrayList<>();
            if (memory != null) {
                made.add(memory);
            }
            made.add(communicator);
            if (buffer != null) {
                made.add(buffer);
            }
            Closeables.closeAll(made, e);
            throw e;
        }
    }

    /**
     * One step between hosts: sends {@code bytes} of {@code out(p)} to every other member {@code p}
     * and receives as many from each into {@code in(p)}; with a {@code from} of 0 or more, only
     * that member sends, to every other. In pieces of a slot.
     */
    void exchange(long bytes, IntFunction<MemorySegment> out, IntFunction<MemorySegment> in, int from, long deadline) {
        int n = members.length;
        for (long off = 0; off < bytes; off += SLOT) {
            long len = Math.min(SLOT, bytes - off);
            boolean sending = from < 0 || from == me;
            if (sending) {
                for (int p = 0; p < n; p++) {
                    if (p != me) {
                        MemorySegment.copy(out.apply(p), off, segment, sendSlot(p), len);
                        connections[p].write(remotes[p], receiveSlot(me), memory, sendSlot(p), len);
                        semaphores[p].signal();
                    }
                }
            }
            for (int p = 0; p < n; p++) {
                if (p != me && (from < 0 || from == p)) {
                    await(p, deadline, "data of a step between hosts");
                    MemorySegment.copy(segment, receiveSlot(p), in.apply(p), off, len);
                    semaphores[p].signal();
                }
            }
            if (sending) {
                for (int p = 0; p < n; p++) {
                    if (p != me) {
                        await(p, deadline, "the answer to a step between hosts");
                    }
                }
            }
        }
    }

    private long sendSlot(int p) {
        return p * SLOT;
    }

    private long receiveSlot(int p) {
        return (members.length + p) * SLOT;
    }

    /** Consumes member {@code p}'s next signal; the job's failure or the deadline ends the wait. */
    private void await(int p, long deadline, String what) {
        Host2HostSemaphore sem = semaphores[p];
        boolean got = Waiting.await(() -> sem.poll() || failure.get() != null, deadline);
        JmscclppException failed = failure.get();
        if (failed != null) {
            throw failed;
        }
        if (!got) {
            throw JmscclppException.builder(ErrorCode.TIMEOUT, "no signal from rank " + members[p] + " (" + what
                    + ") before the call's deadline").rank(rank).peer(members[p]).phase("collective").build();
        }
    }

    @Override
    public void close() {
        Closeables.closeAll(List.of(memory, communicator, buffer));
    }
}
