package org.jmscclpp.core.semaphore;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A semaphore wait whose communicator is closed under it ends at once with a typed error. */
class SemaphoreCloseTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    @Test
    void aWaitEndsTypedWhenItsCommunicatorCloses() throws Exception {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            List<Connection> conns = g.onEveryRank(r -> g.comm(r).connect(1 - r, 0, EndpointConfig.of(Transport.HOST_IPC)));
            List<Host2HostSemaphore> sems = g.onEveryRank(r -> Host2HostSemaphore.build(g.comm(r), conns.get(r)));
            CompletableFuture<Void> waiting = sems.get(0).nextSignal(WAIT).toFuture();
            endsTypedSoonAfterClose(g, waiting);
        }
    }

    /** The same for a device handle's await (a Java thread standing in for a kernel), on its own thread. */
    @Test
    void aDeviceHandleWaitEndsTypedWhenItsCommunicatorCloses() throws Exception {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            List<Connection> conns = g.onEveryRank(r -> g.comm(r).connect(1 - r, 0, EndpointConfig.of(Transport.HOST_IPC)));
            List<Host2DeviceSemaphore> sems = g.onEveryRank(r -> Host2DeviceSemaphore.build(g.comm(r), conns.get(r)));
            Host2DeviceSemaphore.DeviceHandle handle = sems.get(0).deviceHandle();
            CompletableFuture<Void> waiting = CompletableFuture.runAsync(() -> handle.await(WAIT),
                    r -> Thread.ofPlatform().name("kernel").start(r));
            // the wait spins briefly, then parks; close() may come before or during it: both must end typed
            endsTypedSoonAfterClose(g, waiting);
        }
    }

    /** After the close, a memory device handle's signals and waits are INVALID_USAGE, not a raw IllegalStateException. */
    @Test
    void aMemoryDeviceHandleSignalAfterItsCommunicatorClosedIsInvalidUsage() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            List<Connection> conns = g.onEveryRank(r -> g.comm(r).connect(1 - r, 0, EndpointConfig.of(Transport.HOST_IPC)));
            List<MemoryDevice2DeviceSemaphore> sems = g.onEveryRank(
                    r -> MemoryDevice2DeviceSemaphore.build(g.comm(r), conns.get(r)));
            MemoryDevice2DeviceSemaphore.DeviceHandle handle = sems.get(0).deviceHandle();
            handle.signal();
            g.comm(0).close();
            for (org.junit.jupiter.api.function.Executable call : List.<org.junit.jupiter.api.function.Executable>of(
                    handle::signal, handle::relaxedSignal, handle::poll, () -> handle.await(Duration.ofMillis(10)))) {
                JmscclppException e = org.junit.jupiter.api.Assertions.assertThrows(JmscclppException.class, call);
                org.junit.jupiter.api.Assertions.assertEquals(org.jmscclpp.core.ErrorCode.INVALID_USAGE, e.code(),
                        e.getMessage());
            }
        }
    }

    /** Closes rank 0's communicator: {@code waiting} then fails with a JmscclppException within 10 s. */
    private static void endsTypedSoonAfterClose(CommunicatorGroup g, CompletableFuture<Void> waiting) {
        long start = System.nanoTime();
        g.comm(0).close();
        ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                () -> waiting.get(WAIT.toSeconds() + 10, TimeUnit.SECONDS));
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertTrue(e.getCause() instanceof JmscclppException, "a JmscclppException, not " + e.getCause());
        assertTrue(took.compareTo(Duration.ofSeconds(10)) < 0, "the wait ended " + took + " after close()");
    }
}
