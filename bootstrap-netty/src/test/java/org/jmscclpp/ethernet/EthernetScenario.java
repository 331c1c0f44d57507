package org.jmscclpp.ethernet;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.core.spi.Waiting;
import reactor.core.publisher.Mono;

/**
 * One rank's side of the ETHERNET scenarios, shared by the in-JVM test (a thread per rank), the
 * child JVMs ({@link EthernetRankMain}) and the network-namespace test: a communicator over
 * {@code ETHERNET} only, an in-place buffer exchanged with the peer, one connection, and a proxy
 * with a {@link PortChannel} over it. Blocking; every wait has {@link #TIMEOUT}.
 *
 * <ul>
 *   <li>{@link #basicWrite()}: MSCCL++'s BasicWrite — ten 1 MiB writes of a pattern of this rank
 *       into the peer's buffer, a flush, a barrier, then every int of what the peer wrote here
 *       is checked;</li>
 *   <li>{@link #pingPong(int, int)}: PortChannelOneToOneTest.PingPongEthernet — turns of
 *       wait, check every int, fill, {@code putWithSignal}, flush.</li>
 * </ul>
 */
final class EthernetScenario implements AutoCloseable {

    static final EndpointConfig ETHERNET = EndpointConfig.of(Transport.ETHERNET);
    static final Duration TIMEOUT = Duration.ofSeconds(30);
    static final int WRITES = 10;
    static final int WRITE_BYTES = 1 << 20;
    static final long BUFFER_BYTES = (long) WRITES * WRITE_BYTES;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    private static final VarHandle TOKEN = ValueLayout.JAVA_LONG.varHandle();

    final int rank;
    final int peer;
    final Bootstrap bootstrap;
    final Communicator comm;
    final DeviceBuffer buffer;
    final DeviceBuffer source;
    final RegisteredMemory local;
    final RegisteredMemory localSource;
    final RegisteredMemory remote;
    final Connection connection;
    final ProxyService proxy;
    final PortChannel channel;

    private EthernetScenario(Bootstrap bootstrap, Backend backend) {
        this.bootstrap = bootstrap;
        this.rank = bootstrap.rank();
        this.peer = 1 - rank;
        this.comm = Communicator.create(bootstrap, backend);
        this.buffer = backend.allocate(BUFFER_BYTES);
        this.source = backend.allocate(BUFFER_BYTES);
        TransportFlags eth = TransportFlags.of(Transport.ETHERNET);
        this.local = comm.registerMemory(buffer, eth);
        this.localSource = comm.registerMemory(source, TransportFlags.NONE);
        this.connection = comm.connect(peer, 0, ETHERNET).block(TIMEOUT.plusSeconds(5));
        this.remote = comm.recvMemory(peer, 0).zipWith(comm.sendMemory(local, peer, 0).thenReturn(0), (m, x) -> m)
                .block(TIMEOUT.plusSeconds(5));
        this.proxy = ProxyService.builder(backend).build();
        SemaphoreId semaphore = proxy.buildAndAddSemaphore(comm, connection).block(TIMEOUT.plusSeconds(5));
        MemoryId dst = proxy.addMemory(remote);
        MemoryId src = proxy.addMemory(local);
        this.channel = proxy.portChannel(semaphore, dst, src);
        proxy.start();
    }

    /** Sets up this rank's side; the peer must do so at the same time. */
    static EthernetScenario open(Bootstrap bootstrap, Backend backend) {
        return new EthernetScenario(bootstrap, backend);
    }

    private static int value(int rank, int write, int index) {
        return rank * 100_000_000 + write * 1_000_000 + index;
    }

    void basicWrite() {
        MemorySegment src = source.hostSegment();
        for (int w = 0; w < WRITES; w++) {
            for (int i = 0; i < WRITE_BYTES / 4; i++) {
                src.setAtIndex(INT, (long) w * (WRITE_BYTES / 4) + i, value(rank, w, i));
            }
        }
        for (int w = 0; w < WRITES; w++) {
            connection.write(remote, (long) w * WRITE_BYTES, localSource, (long) w * WRITE_BYTES, WRITE_BYTES);
        }
        connection.flush(TIMEOUT).block(TIMEOUT.plusSeconds(5));
        bootstrap.barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
        MemorySegment got = buffer.hostSegment();
        for (int w = 0; w < WRITES; w++) {
            for (int i = 0; i < WRITE_BYTES / 4; i++) {
                int v = got.getAtIndex(INT, (long) w * (WRITE_BYTES / 4) + i);
                if (v != value(peer, w, i)) {
                    throw new AssertionError("rank " + rank + ": write " + w + " int " + i + " is " + v
                            + ", expected " + value(peer, w, i));
                }
            }
        }
        // nobody writes the next scenario's data before both have checked this one
        bootstrap.barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
    }

    /**
     * Both ranks at once: {@link Connection#writeAndUpdate} of sizes 0, 5 and a chunk and a half,
     * each followed at the peer by its token (the buffer's last word); the waiter sees every byte
     * of a write once it sees the write's token. A misaligned token is refused before anything goes
     * out: the bytes of that call never arrive.
     */
    void writeAndUpdate() {
        long tokenAt = BUFFER_BYTES - Long.BYTES;
        long[] sizes = {0, 5, EthernetWire.MAX_CHUNK + EthernetWire.MAX_CHUNK / 2 + 3};
        MemorySegment src = source.hostSegment();
        MemorySegment mine = buffer.hostSegment();
        AtomicLong token = new AtomicLong();
        JmscclppException refused = null;
        try {
            src.set(ValueLayout.JAVA_BYTE, 0, (byte) 0x5A);
            connection.writeAndUpdate(remote, 0, localSource, 0, 1, remote, tokenAt - 4, token, 99);
        } catch (JmscclppException e) {
            refused = e;
        }
        if (refused == null || refused.code() != ErrorCode.INVALID_USAGE || token.get() != 0) {
            throw new AssertionError("rank " + rank + ": a misaligned token was not refused: " + refused);
        }
        for (int k = 0; k < sizes.length; k++) {
            long size = sizes[k];
            for (long i = 0; i < size; i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + k + rank));
            }
            connection.writeAndUpdate(remote, 0, localSource, 0, size, remote, tokenAt, token, k + 1);
            long want = k + 1;
            if (token.get() != want) {
                throw new AssertionError("rank " + rank + ": the local token is " + token.get() + ", not " + want);
            }
            if (!Waiting.await(() -> (long) TOKEN.getAcquire(mine, tokenAt) == want, Waiting.deadline(TIMEOUT))) {
                throw new AssertionError("rank " + rank + ": token " + want + " never came");
            }
            for (long i = 0; i < size; i++) {
                byte b = mine.get(ValueLayout.JAVA_BYTE, i);
                if (b != (byte) (i * 7 + k + peer)) {
                    throw new AssertionError("rank " + rank + ": byte " + i + " of write " + k + " is " + b
                            + " when its token was seen");
                }
            }
            if (size == 0 && mine.get(ValueLayout.JAVA_BYTE, 0) == (byte) 0x5A) {
                throw new AssertionError("rank " + rank + ": the refused call's byte arrived");
            }
            // the peer rewrites the source only after this rank checked
            bootstrap.barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
        }
    }

    /** Turns per size: MSCCL++ runs 1000; larger sizes fewer, to keep the test to seconds. */
    static int turns(int ints) {
        return ints <= 1 << 10 ? 300 : 8;
    }

    void pingPong(int ints, int turns) {
        MemorySegment b = buffer.hostSegment();
        long bytes = 4L * ints;
        for (int i = 0; i < turns; i++) {
            if (rank == 1 || i > 0) {
                channel.await(TIMEOUT);
                check(b, ints, peer, rank == 1 ? i : i - 1);
            }
            int base = offset(rank) + i;
            for (int j = 0; j < ints; j++) {
                b.setAtIndex(INT, j, base + j);
            }
            channel.putWithSignal(0, bytes);
            channel.flush(TIMEOUT);
        }
        if (rank == 0) {
            channel.await(TIMEOUT);
            check(b, ints, 1, turns - 1);
        }
        // every signal of these turns was flushed, so applied, before its sender reached this barrier
        bootstrap.barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
        if (channel.poll()) {
            throw new AssertionError("rank " + rank + ": a signal arrived beyond the turns");
        }
        // and the peer starts its next turns, whose first signal would land here, only after this check
        bootstrap.barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
    }

    private void check(MemorySegment b, int ints, int from, int turn) {
        int base = offset(from) + turn;
        for (int j = 0; j < ints; j++) {
            int got = b.getAtIndex(INT, j);
            if (got != base + j) {
                throw new AssertionError("rank " + rank + ", " + ints + " ints: element " + j + " of rank " + from
                        + "'s turn " + turn + " is " + got + ", expected " + (base + j));
            }
        }
    }

    private static int offset(int rank) {
        return rank == 0 ? 10_000_000 : 20_000_000;
    }

    /** Stops the proxy after a barrier (the peer's proxy may still write here until then), then closes all. */
    @Override
    public void close() {
        bootstrap.barrier(TIMEOUT).onErrorResume(e -> Mono.empty()).block(TIMEOUT.plusSeconds(5));
        proxy.stop().onErrorResume(e -> Mono.empty()).block(TIMEOUT);
        proxy.close();
        comm.close();
        local.close();
        localSource.close();
        buffer.close();
        source.close();
    }
}
