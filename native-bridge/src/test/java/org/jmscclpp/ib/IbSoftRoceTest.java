package org.jmscclpp.ib;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jmscclpp.core.spi.TransportProvider;
import org.jmscclpp.core.spi.TransportProviders;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.core.publisher.Mono;

/**
 * The IB connection for real, over IB0: an RDMA device if the host has one, else a soft-RoCE
 * device this test tries to create ({@code rdma link add rxe0 type rxe netdev lo}, which needs the
 * {@code rdma_rxe} module and CAP_NET_ADMIN). Skipped, printing the command and its error, where
 * neither works (every machine of this project so far: their kernels have no RDMA support).
 * Two ranks in this JVM, each with its own communicator, queue pair and registered memory, run
 * MSCCL++'s BasicWrite (each writes its half of a 1 MiB buffer into the other's, flushes, and a
 * semaphore signal tells the peer) and a 200-turn semaphore ping-pong, in Host (atomic) and
 * HostNoAtomic (write-with-immediate) modes.
 */
class IbSoftRoceTest {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int BYTES = 1 << 20;

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(value = EndpointConfig.IbMode.class, names = {"HOST", "HOST_NO_ATOMIC"})
    void basicWriteAndPingPongOverIb0(EndpointConfig.IbMode mode) throws Exception {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            TransportProvider provider = TransportProviders.find(Transport.IB0);
            Optional<String> reason = provider.unavailableReason(g.backend, Transport.IB0);
            if (reason.isPresent()) {
                String rxe = trySoftRoce();
                Optional<String> after = provider.unavailableReason(g.backend, Transport.IB0);
                String before = reason.get();
                if (after.isPresent()) {
                    System.out.println("IbSoftRoceTest skipped: IB0 is not usable here (" + before
                            + "), and soft-RoCE could not be made: " + rxe);
                }
                Assumptions.assumeTrue(after.isEmpty(), () -> "IB0 is not usable here (" + before
                        + "), and soft-RoCE could not be made: " + rxe);
            }
            run(g, mode);
        }
    }

    private static void run(CommunicatorGroup g, EndpointConfig.IbMode mode) {
        EndpointConfig config = EndpointConfig.builder(Transport.IB0)
                .ib(EndpointConfig.Ib.DEFAULT.withMode(mode)).build();
        TransportFlags flags = TransportFlags.of(Transport.IB0);
        try (DeviceBuffer b0 = g.backend.allocate(BYTES); DeviceBuffer b1 = g.backend.allocate(BYTES);
             Arena arena = Arena.ofConfined()) {
            List<DeviceBuffer> buffers = List.of(b0, b1);
            List<RegisteredMemory> locals = List.of(g.comm(0).registerMemory(b0, flags),
                    g.comm(1).registerMemory(b1, flags));
            List<Connection> connections = g.onEveryRank(r -> g.comm(r).connect(1 - r, 0, config));
            List<RegisteredMemory> remotes = g.onEveryRank(r -> g.comm(r).sendMemory(locals.get(r), 1 - r, 1)
                    .then(g.comm(r).recvMemory(1 - r, 1)));
            List<Host2HostSemaphore> semaphores = g.onEveryRank(r ->
                    Host2HostSemaphore.build(g.comm(r), connections.get(r)));
            int half = BYTES / 2;
            for (int r = 0; r < 2; r++) {
                MemorySegment fill = arena.allocate(BYTES);
                for (int i = 0; i < BYTES / Integer.BYTES; i++) {
                    fill.setAtIndex(ValueLayout.JAVA_INT, i, r * 1_000_000 + i);
                }
                g.backend.copyFromHost(buffers.get(r), 0, fill);
            }
            g.onEveryRank(r -> {
                connections.get(r).write(remotes.get(r), (long) r * half, locals.get(r), (long) r * half, half);
                return connections.get(r).flush(WAIT).then(Mono.fromRunnable(semaphores.get(r)::signal))
                        .then(semaphores.get(r).nextSignal(WAIT)).thenReturn(r);
            });
            for (int r = 0; r < 2; r++) {
                MemorySegment back = arena.allocate(BYTES);
                g.backend.copyToHost(back, buffers.get(r), 0);
                for (int i = 0; i < BYTES / Integer.BYTES; i++) {
                    int writer = i * Integer.BYTES < half ? 0 : 1;
                    assertEquals(writer * 1_000_000 + i, back.getAtIndex(ValueLayout.JAVA_INT, i),
                            "rank " + r + " int " + i + " (" + mode + ")");
                }
            }
            long start = System.nanoTime();
            int turns = 200;
            g.onEveryRank(r -> Mono.fromCallable(() -> {
                for (int t = 0; t < turns; t++) {
                    if (r == 0) {
                        semaphores.get(0).signal();
                        semaphores.get(0).nextSignal(WAIT).block(WAIT.plusSeconds(1));
                    } else {
                        semaphores.get(1).nextSignal(WAIT).block(WAIT.plusSeconds(1));
                        semaphores.get(1).signal();
                    }
                }
                return r;
            }).subscribeOn(reactor.core.scheduler.Schedulers.boundedElastic()));
            System.out.printf("IB0 %s: BasicWrite of %d bytes OK, %d ping-pong turns in %.1f us each (%s)%n", mode,
                    BYTES, turns, (System.nanoTime() - start) / 1e3 / turns, connections.get(0));
            connections.forEach(Connection::close);
            locals.forEach(RegisteredMemory::close);
        }
    }

    /** Tries to create soft-RoCE on loopback; returns what happened (the command and its output). */
    private static String trySoftRoce() throws IOException, InterruptedException {
        List<String> command = List.of("rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "lo");
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            return "'" + String.join(" ", command) + "' cannot run: " + e.getMessage();
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return "'" + String.join(" ", command) + "' did not finish in 30 s";
        }
        return "'" + String.join(" ", command) + "' exited " + p.exitValue() + (out.isEmpty() ? "" : ": " + out);
    }
}
