package org.jmscclpp.testkit;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.channel.MemoryChannel;
import org.jspecify.annotations.Nullable;

/**
 * Two ranks of this JVM joined by a {@link MemoryChannel} each way, set up the way MSCCL++'s
 * MemoryChannelOneToOneTest does: a data buffer per rank and, for packet tests, a packet buffer
 * per rank that it exposes to the peer. {@link #run} starts one platform thread per rank (the
 * "kernels") and joins them with a deadline. {@link #close()} closes the communicators (which
 * unmap the peers' memories and free the semaphores), then the buffers.
 */
public final class MemoryChannelPair implements AutoCloseable {

    /** A wait of one step of a kernel: generous, since a failing peer makes the other wait this long. */
    public static final Duration STEP = Duration.ofSeconds(10);
    public static final Duration RUN = Duration.ofSeconds(60);
    public static final EndpointConfig HOST_IPC = EndpointConfig.of(Transport.HOST_IPC);

    /** The body of one rank's kernel. */
    @FunctionalInterface
    public interface Kernel {
        void run(int rank, MemoryChannel.DeviceHandle handle, MemorySegment data) throws Exception;
    }

    public final CommunicatorGroup group;
    public final List<DeviceBuffer> dataBuffers = new ArrayList<>();
    public final List<@Nullable DeviceBuffer> packetBuffers = new ArrayList<>();
    public final List<RegisteredMemory> registered = new ArrayList<>();
    public final List<MemoryChannel> channels;

    /**
     * @param packetBytes 0 for an in-place channel (each rank exposes its data buffer); else the
     *                    size of each rank's packet buffer, which it exposes instead
     */
    public MemoryChannelPair(Path dir, long dataBytes, long packetBytes) {
        group = new CommunicatorGroup(2, dir);
        List<RegisteredMemory> data = new ArrayList<>();
        List<@Nullable RegisteredMemory> packets = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            DeviceBuffer d = group.backend.allocate(dataBytes);
            dataBuffers.add(d);
            data.add(register(r, d));
            DeviceBuffer p = packetBytes > 0 ? group.backend.allocate(packetBytes) : null;
            packetBuffers.add(p);
            packets.add(p == null ? null : register(r, p));
        }
        List<Connection> connections = group.onEveryRank(r -> group.comm(r).connect(1 - r, 0, HOST_IPC));
        channels = group.onEveryRank(r -> {
            RegisteredMemory p = packets.get(r);
            return MemoryChannel.build(group.comm(r), connections.get(r), p != null ? p : data.get(r), data.get(r), p);
        });
    }

    private RegisteredMemory register(int rank, DeviceBuffer buffer) {
        RegisteredMemory m = group.comm(rank).registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC));
        registered.add(m);
        return m;
    }

    public MemorySegment data(int rank) {
        return dataBuffers.get(rank).hostSegment();
    }

    public MemorySegment packets(int rank) {
        DeviceBuffer p = packetBuffers.get(rank);
        if (p == null) {
            throw new IllegalStateException("this pair has no packet buffers");
        }
        return p.hostSegment();
    }

    /** Runs {@code kernel} on both ranks at once, each on its own thread, and rethrows the first failure. */
    public void run(Kernel kernel) throws Exception {
        try (FifoTesting.Workers workers = new FifoTesting.Workers()) {
            for (int r = 0; r < 2; r++) {
                int rank = r;
                MemoryChannel.DeviceHandle handle = channels.get(r).deviceHandle();
                workers.start("rank-" + r, () -> kernel.run(rank, handle, data(rank)));
            }
            awaitAll(workers, RUN);
        }
    }

    /**
     * Joins {@code workers}, rethrowing a failure as soon as one is known: closing the workers
     * then interrupts the other kernel, whose wait for the failed one ends at once.
     */
    public static void awaitAll(FifoTesting.Workers workers, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            workers.check();
            try {
                workers.join(Duration.ofMillis(20));
                return;
            } catch (AssertionError stillRunning) {
                workers.check();
                if (System.nanoTime() - deadline > 0) {
                    throw stillRunning;
                }
            }
        }
    }

    /** Sets ints {@code first} to {@code end - 1} of {@code data} to {@code base + j}, {@code j} the index. */
    public static void fill(MemorySegment data, long first, long end, int base) {
        for (long j = first; j < end; j++) {
            data.setAtIndex(ValueLayout.JAVA_INT, j, base + (int) j);
        }
    }

    /** Checks that ints {@code first} to {@code end - 1} of {@code data} are {@code base + j}. */
    public static void check(MemorySegment data, long first, long end, int base, String what) {
        for (long j = first; j < end; j++) {
            int v = data.getAtIndex(ValueLayout.JAVA_INT, j);
            if (v != base + (int) j) {
                throw new AssertionError(what + ": element " + j + " is " + v + ", expected " + (base + (int) j));
            }
        }
    }

    @Override
    public void close() {
        group.close();
        registered.forEach(RegisteredMemory::close);
        dataBuffers.forEach(DeviceBuffer::close);
        packetBuffers.forEach(b -> {
            if (b != null) {
                b.close();
            }
        });
    }
}
