package org.jmscclpp.bootstrap;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.semaphore.SemaphoreId;
import reactor.core.publisher.Mono;

/**
 * One of the two ranks of the multi-process port channel test, run in a child JVM by
 * {@link RankProcesses}: MSCCL++'s {@code PortChannelOneToOneTest.PingPong} and
 * {@code PingPongWithPoll} between two processes. Each rank has a {@link TcpBootstrap}, its own
 * {@link HostBackend} over the test's directory, a {@link Communicator}, one in-place buffer of
 * {@value #MAX_INTS} ints registered for HOST_IPC, a HOST_IPC connection to the other rank, and a
 * {@link ProxyService} of its own whose {@link PortChannel} reads this rank's buffer and writes the
 * peer's (mapped here). Arguments are {@code key=value} pairs: {@code rank}, {@code address} (the
 * root's {@code ip:port}, hosted by rank 0), {@code shm-dir}, {@code poller}
 * ({@link ProxyService.Poller} name) and {@code modes} (a comma list of {@code wait} and
 * {@code poll}).
 *
 * <p>For each mode, for {@code nElem} in 1, 1K, 1M and 4M ints: {@link #turns} turns in which rank
 * 0 and then rank 1 each wait for the other's signal ({@link PortChannel#await} or a spin on
 * {@link PortChannel#poll()} with a deadline), check every one of the {@code nElem} ints the
 * other put, fill the ints with its own turn's values, {@code putWithSignal(0, bytes)} and
 * {@code flush()}. Element {@code j} of rank {@code r}'s turn {@code i} is
 * {@code offset(r) + i + j}, MSCCL++'s pattern (offsets 10,000,000 and 20,000,000), so a value of
 * another rank or of a stale turn fails the check.
 *
 * <p>Lines printed: {@code READY} after bootstrap initialization, {@code PINGPONG mode=M ints=N
 * turns=T ms=E} per size, {@code OK ping-pong} when every check passed and no signal was left
 * over, and {@code CLOSED-CLEAN files=0 fds=0 maps=0} once everything is closed and this process
 * holds nothing of the directory. A {@link JmscclppException} prints {@code FAILED <code> ...} and
 * exits with {@link RankMain#EXIT_FAILED} without closing (the exit hook deletes the files); a
 * wrong value is an {@link AssertionError} (exit {@link RankMain#EXIT_ERROR}).
 */
final class PortChannelRankMain {

    static final int MAX_INTS = 4 << 20;
    static final int[] SIZES = {1, 1 << 10, 1 << 20, 4 << 20};
    static final int RANK0_OFFSET = 10_000_000;
    static final int RANK1_OFFSET = 20_000_000;

    private static final EndpointConfig HOST_IPC = EndpointConfig.of(Transport.HOST_IPC);
    private static final Duration INIT_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;

    private final int rank;
    private final PortChannel channel;
    private final MemorySegment buffer;

    private PortChannelRankMain(int rank, PortChannel channel, MemorySegment buffer) {
        this.rank = rank;
        this.channel = channel;
        this.buffer = buffer;
    }

    /**
     * MSCCL++ runs 1000 turns per size; so do 1 and 1K ints. 1M and 4M ints are scaled down to 32
     * and 8 turns: every turn fills, copies and checks 4 or 16 MiB on each rank, in JVMs that run
     * C1 code only, on two shared cores, and the test should take seconds.
     */
    static int turns(int ints) {
        return ints <= 1 << 10 ? 1000 : ints <= 1 << 20 ? 32 : 8;
    }

    public static void main(String[] args) {
        RankMain.exit(args, PortChannelRankMain::run);
    }

    private static int run(Map<String, String> a) throws Exception {
        int rank = Integer.parseInt(RankMain.required(a, "rank"));
        Path dir = Path.of(RankMain.required(a, "shm-dir"));
        ProxyService.Poller poller = ProxyService.Poller.valueOf(RankMain.required(a, "poller"));
        List<String> modes = List.of(RankMain.required(a, "modes").split(","));
        for (String m : modes) {
            if (!m.equals("wait") && !m.equals("poll")) {
                throw new IllegalArgumentException("modes are wait and poll, got " + m);
            }
        }
        int peer = 1 - rank;
        TcpBootstrap bs = TcpBootstrap.create(rank, 2, BootstrapOptions.builder().initTimeout(INIT_TIMEOUT)
                .operationTimeout(TIMEOUT).build());
        try {
            bs.initialize(RankMain.required(a, "address")).block(INIT_TIMEOUT.plusSeconds(10));
            RankMain.say("READY");
            HostBackend backend = HostBackend.open(dir);
            Communicator comm = Communicator.create(bs, backend);
            DeviceBuffer buffer = backend.allocate(4L * MAX_INTS);
            RegisteredMemory local = comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC));
            Connection connection = comm.connect(peer, 0, HOST_IPC).block(TIMEOUT.plusSeconds(10));
            RegisteredMemory remote = comm.recvMemory(peer, 0)
                    .zipWith(comm.sendMemory(local, peer, 0).thenReturn(0), (m, x) -> m)
                    .block(TIMEOUT.plusSeconds(10));
            if (connection == null || remote == null || !remote.isMapped() || remote.size() != buffer.size()) {
                throw new AssertionError("setup gave connection " + connection + " and peer memory " + remote);
            }
            ProxyService proxy = ProxyService.builder(backend).poller(poller).build();
            SemaphoreId semaphore = proxy.buildAndAddSemaphore(comm, connection).block(TIMEOUT.plusSeconds(10));
            if (semaphore == null) {
                throw new AssertionError("no semaphore");
            }
            MemoryId dst = proxy.addMemory(remote);
            MemoryId src = proxy.addMemory(local);
            PortChannelRankMain r = new PortChannelRankMain(rank, proxy.portChannel(semaphore, dst, src),
                    buffer.hostSegment());
            proxy.start();
            for (String mode : modes) {
                for (int ints : SIZES) {
                    long start = System.nanoTime();
                    r.pingPong(ints, turns(ints), mode.equals("poll"));
                    RankMain.say("PINGPONG mode=" + mode + " ints=" + ints + " turns=" + turns(ints) + " ms="
                            + (System.nanoTime() - start) / 1_000_000);
                }
            }
            // every signal of both ranks was consumed before the barrier: nothing may be left
            bs.barrier(TIMEOUT).block(TIMEOUT.plusSeconds(10));
            if (r.channel.poll()) {
                throw new AssertionError("rank " + rank + ": a signal arrived beyond the turns");
            }
            RankMain.say("OK ping-pong");
            // nobody unmaps (or deletes files) while the peer's proxy may still write here
            bs.barrier(TIMEOUT).block(TIMEOUT.plusSeconds(10));
            proxy.stop().block(TIMEOUT);
            proxy.close();
            comm.close();
            local.close();
            buffer.close();
            backend.close();
            RankMain.say("CLOSED-CLEAN " + CommunicatorRankMain.leftovers(dir));
            return RankMain.EXIT_OK;
        } catch (JmscclppException e) {
            RankMain.say("FAILED " + e.code() + " peer=" + (e.peer() == JmscclppException.NONE ? "none" : e.peer())
                    + " message=" + e.getMessage().replace('\n', ' '));
            e.printStackTrace();
            return RankMain.EXIT_FAILED;
        } finally {
            bs.close();
        }
    }

    /**
     * One size: in turn {@code i}, rank 0 (from the second turn) and then rank 1 wait for the
     * other's turn, check it, and put their own with a signal and a flush; at the end rank 0 takes
     * rank 1's last turn.
     */
    private void pingPong(int ints, int turns, boolean withPoll) {
        int peer = 1 - rank;
        long bytes = 4L * ints;
        for (int i = 0; i < turns; i++) {
            if (rank == 1 || i > 0) {
                awaitSignal(withPoll);
                check(ints, peer, rank == 1 ? i : i - 1);
            }
            int base = offset(rank) + i;
            for (int j = 0; j < ints; j++) {
                buffer.setAtIndex(INT, j, base + j);
            }
            channel.putWithSignal(0, bytes);
            channel.flush(TIMEOUT);
        }
        if (rank == 0) {
            awaitSignal(withPoll);
            check(ints, 1, turns - 1);
        }
    }

    private void awaitSignal(boolean withPoll) {
        if (!withPoll) {
            channel.await(TIMEOUT);
            return;
        }
        // MSCCL++ spins on poll() with a cap; here the cap is a deadline, and the spinner yields now
        // and then so that the proxies and the peer get the two cores
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        for (int spins = 1; !channel.poll(); spins++) {
            if ((spins & 1023) == 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("rank " + rank + ": no signal polled within " + TIMEOUT.toMillis() + " ms");
                }
                Thread.yield();
            } else {
                Thread.onSpinWait();
            }
        }
    }

    private void check(int ints, int from, int turn) {
        int base = offset(from) + turn;
        for (int j = 0; j < ints; j++) {
            int got = buffer.getAtIndex(INT, j);
            if (got != base + j) {
                throw new AssertionError("rank " + rank + ", " + ints + " ints: element " + j + " of rank " + from
                        + "'s turn " + turn + " is " + got + ", expected " + (base + j));
            }
        }
    }

    private static int offset(int rank) {
        return rank == 0 ? RANK0_OFFSET : RANK1_OFFSET;
    }
}
