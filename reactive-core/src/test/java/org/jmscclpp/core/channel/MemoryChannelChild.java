package org.jmscclpp.core.channel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Semaphore;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.testkit.ChildJvm;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.jmscclpp.testkit.MemoryChannelPair;

/**
 * Rank 1 of {@link MemoryChannelProcessTest}, in its own JVM, and the code both ranks run.
 *
 * <p>{@code DIR MAILBOX_HEX ENDPOINT_HEX TOKEN_HEX PACKETS_HEX}: maps the parent's mailbox, token
 * and packet buffer through {@code HOST_IPC} (their serialized {@link RegisteredMemory}), makes its
 * own data, packet buffer and token, and answers through the mailbox (its endpoint, token and
 * packet buffer; see {@link #post}). Then it builds its end of the channel, plays rank 1 of
 * {@link #pingPong}, and the end of {@link #finale}; prints {@code done} and exits 0. Exit codes:
 * 1 bad arguments, 2 a check failed, 3 an exception (printed).
 */
public final class MemoryChannelChild {

    /** Ints per ping-pong stage and rounds of each; flags and roles run on across stages. */
    static final int[] SIZES = {2, 1024, 65_536};
    static final int[] ROUNDS = {2_000, 2_000, 40};
    static final int MAX_INTS = 65_536;
    static final long DATA_BYTES = 4L * MAX_INTS;
    static final long MAILBOX_BYTES = 4096;
    static final Duration STEP = Duration.ofSeconds(20);

    private static final int RANK1_OFFSET = 10_000_000;
    private static final VarHandle READY = ValueLayout.JAVA_LONG.varHandle();
    private static final int BLOBS = 8;

    private MemoryChannelChild() {
    }

    public static void main(String[] args) {
        if (args.length != 5) {
            System.out.println("usage: DIR MAILBOX_HEX ENDPOINT_HEX TOKEN_HEX PACKETS_HEX");
            System.exit(1);
        }
        HexFormat hex = HexFormat.of();
        try (HostBackend backend = HostBackend.open(Path.of(args[0]));
             Communicator comm = Communicator.create(InMemoryBootstrap.group(1).get(0), backend);
             DeviceBuffer data = backend.allocate(DATA_BYTES);
             DeviceBuffer packets = backend.allocate(2 * DATA_BYTES)) {
            TransportFlags ipc = TransportFlags.of(Transport.HOST_IPC);
            DeviceBuffer token = backend.allocateHostVisible(Semaphore.TOKEN_BYTES);
            RegisteredMemory tokenMemory = comm.registerMemory(token, ipc);
            RegisteredMemory dataMemory = comm.registerMemory(data, ipc);
            RegisteredMemory packetMemory = comm.registerMemory(packets, ipc);
            Endpoint mine = backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.HOST_IPC));
            try (RegisteredMemory mailbox = RegisteredMemory.deserialize(hex.parseHex(args[1]), backend)) {
                post(mailbox.hostSegment(), List.of(mine.serialize(), tokenMemory.serialize(), packetMemory.serialize()));
            }
            Connection connection = backend.ipcTransport().open(backend).connect(mine, Endpoint.deserialize(hex.parseHex(args[2])),
                    new ConnectionContext(1, 0, 0));
            Semaphore semaphore = new Semaphore(connection, token, tokenMemory,
                    RegisteredMemory.deserialize(hex.parseHex(args[3]), backend));
            RegisteredMemory dst = RegisteredMemory.deserialize(hex.parseHex(args[4]), backend);
            check(dst.isMapped() && !dst.isLocal(), "the parent's packet buffer is not mapped here: " + dst);
            try (MemoryDevice2DeviceSemaphore d2d = new MemoryDevice2DeviceSemaphore(semaphore, backend)) {
                MemoryChannel.DeviceHandle h = new MemoryChannel(d2d, dst, dataMemory, packetMemory).deviceHandle();
                pingPong(1, h, data.hostSegment());
                finale(1, h, data.hostSegment(), packets.hostSegment());
            }
            semaphore.close();
            dst.close();
            connection.close();
            dataMemory.close();
            packetMemory.close();
            System.out.println("done");
        } catch (AssertionError e) {
            System.out.println("check failed: " + e.getMessage());
            System.out.flush();
            System.exit(2);
        } catch (RuntimeException e) {
            e.printStackTrace(System.out);
            System.out.flush();
            System.exit(3);
        }
    }

    /**
     * The LL16 ping-pong of MSCCL++'s LL16PacketPingPong through each stage of {@link #SIZES}:
     * in global round {@code g} the rank with {@code rank == g % 2} fills its data and puts it as
     * packets with flag {@code g + 1} into the peer's packet buffer; the other unpacks them into
     * its data and checks every element.
     */
    static void pingPong(int rank, MemoryChannel.DeviceHandle h, MemorySegment data) {
        int putBase = rank == 0 ? 0 : RANK1_OFFSET;
        int getBase = rank == 0 ? RANK1_OFFSET : 0;
        int g = 0;
        for (int stage = 0; stage < SIZES.length; stage++) {
            int n = SIZES[stage];
            long bytes = 4L * n;
            for (int i = 0; i < ROUNDS[stage]; i++, g++) {
                if ((rank ^ (g & 1)) == 0) {
                    MemoryChannelPair.fill(data, 0, n, putBase + g);
                    h.putPackets(0, 0, bytes, g + 1);
                } else {
                    h.unpackPackets(0, 0, bytes, g + 1, STEP);
                    MemoryChannelPair.check(data, 0, n, getBase + g, "rank " + rank + ", " + n + " ints, round " + g);
                }
            }
        }
    }

    /**
     * After the ping-pong: rank 0 puts its whole data (plain {@code put}) into rank 1's packet
     * buffer and signals; rank 1 waits, checks, puts its own back the same way and signals; rank 0
     * waits and checks.
     */
    static void finale(int rank, MemoryChannel.DeviceHandle h, MemorySegment data, MemorySegment packets) {
        int mine = rank == 0 ? 30_000_000 : 40_000_000;
        int theirs = rank == 0 ? 40_000_000 : 30_000_000;
        if (rank == 1) {
            h.await(STEP);
            MemoryChannelPair.check(packets, 0, MAX_INTS, theirs, "rank 1, the parent's put");
        }
        MemoryChannelPair.fill(data, 0, MAX_INTS, mine);
        h.put(0, 0, DATA_BYTES);
        h.signal();
        if (rank == 0) {
            h.await(STEP);
            MemoryChannelPair.check(packets, 0, MAX_INTS, theirs, "rank 0, the child's put");
        }
    }

    /**
     * Writes {@code blobs} into the mailbox (each as a little-endian u32 length and the bytes,
     * from offset 8), then stores 1 at offset 0 with release.
     */
    static void post(MemorySegment mailbox, List<byte[]> blobs) {
        ByteBuffer out = ByteBuffer.allocate((int) MAILBOX_BYTES - 8).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(blobs.size());
        for (byte[] b : blobs) {
            out.putInt(b.length).put(b);
        }
        MemorySegment.copy(MemorySegment.ofArray(out.array()), 0, mailbox, 8, out.position());
        READY.setRelease(mailbox, 0L, 1L);
    }

    /**
     * Waits for {@link #post} in {@code mailbox} and returns the blobs.
     *
     * @throws AssertionError with the child's output when the child exits first or nothing comes within {@code timeout}
     */
    static List<byte[]> awaitPost(MemorySegment mailbox, ChildJvm child, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!Waiting.await(() -> (long) READY.getAcquire(mailbox, 0L) == 1,
                Math.min(deadline, System.nanoTime() + 100_000_000L))) {
            boolean gone = !child.process().isAlive();
            if ((long) READY.getAcquire(mailbox, 0L) == 1) {
                break;
            }
            if (gone || System.nanoTime() - deadline > 0) {
                throw new AssertionError("no answer in the mailbox" + (gone ? " and the child exited" : "")
                        + "; child output:\n" + child.output());
            }
        }
        ByteBuffer in = ByteBuffer.wrap(mailbox.asSlice(8, MAILBOX_BYTES - 8).toArray(ValueLayout.JAVA_BYTE))
                .order(ByteOrder.LITTLE_ENDIAN);
        int count = in.getInt();
        check(count >= 0 && count <= BLOBS, "blob count " + count);
        List<byte[]> blobs = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] b = new byte[in.getInt()];
            in.get(b);
            blobs.add(b);
        }
        return blobs;
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }
}
