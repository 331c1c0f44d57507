package org.jmscclpp.core.channel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
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
import org.jmscclpp.core.spi.HostIdentity;
import org.jmscclpp.testkit.ChildJvm;
import org.jmscclpp.testkit.FifoTesting;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A memory channel between two processes: this JVM is rank 0, a child JVM rank 1
 * ({@link MemoryChannelChild}). Each maps the other's packet buffer and token through
 * {@code HOST_IPC}, so every packet, put and signal crosses into memory another process mapped,
 * unlike in-JVM ranks, where a peer's memory is the very buffer. The handles travel as the
 * child's arguments one way and through a mailbox in this process's shared memory the other.
 */
class MemoryChannelProcessTest {

    private static final Duration DEADLINE = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    @TempDir
    Path logs;

    @Test
    void ll16PacketPingPongAndPutsAcrossProcesses() throws Exception {
        HexFormat hex = HexFormat.of();
        TransportFlags ipc = TransportFlags.of(Transport.HOST_IPC);
        try (HostBackend backend = HostBackend.open(dir);
             Communicator comm = Communicator.create(InMemoryBootstrap.group(1).get(0), backend);
             DeviceBuffer data = backend.allocate(MemoryChannelChild.DATA_BYTES);
             DeviceBuffer packets = backend.allocate(2 * MemoryChannelChild.DATA_BYTES);
             DeviceBuffer mailbox = backend.allocate(MemoryChannelChild.MAILBOX_BYTES)) {
            DeviceBuffer token = backend.allocateHostVisible(Semaphore.TOKEN_BYTES);
            RegisteredMemory tokenMemory = comm.registerMemory(token, ipc);
            RegisteredMemory dataMemory = comm.registerMemory(data, ipc);
            RegisteredMemory packetMemory = comm.registerMemory(packets, ipc);
            RegisteredMemory mailboxMemory = comm.registerMemory(mailbox, ipc);
            Endpoint mine = backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.HOST_IPC));
            try (ChildJvm child = ChildJvm.start(logs.resolve("child.log"), MemoryChannelChild.class, dir.toString(),
                    hex.formatHex(mailboxMemory.serialize()), hex.formatHex(mine.serialize()),
                    hex.formatHex(tokenMemory.serialize()), hex.formatHex(packetMemory.serialize()))) {
                List<byte[]> answer = MemoryChannelChild.awaitPost(mailbox.hostSegment(), child, DEADLINE);
                assertEquals(3, answer.size());
                Connection connection = backend.ipcTransport().open(backend).connect(mine, Endpoint.deserialize(answer.get(0)),
                        new ConnectionContext(0, 1, 0));
                RegisteredMemory childToken = RegisteredMemory.deserialize(answer.get(1), backend);
                RegisteredMemory dst = RegisteredMemory.deserialize(answer.get(2), backend);
                assertTrue(dst.isMapped() && !dst.isLocal() && dst.pidHash() != HostIdentity.pidHash(),
                        "the child's packet buffer is a mapping of another process's memory: " + dst);
                Semaphore semaphore = new Semaphore(connection, token, tokenMemory, childToken);
                try (MemoryDevice2DeviceSemaphore d2d = new MemoryDevice2DeviceSemaphore(semaphore, backend)) {
                    MemoryChannel channel = new MemoryChannel(d2d, dst, dataMemory, packetMemory);
                    MemoryChannel.DeviceHandle h = channel.deviceHandle();
                    runRank0(child, () -> {
                        MemoryChannelChild.pingPong(0, h, data.hostSegment());
                        MemoryChannelChild.finale(0, h, data.hostSegment(), packets.hostSegment());
                    });
                    assertEquals(0, child.waitFor(DEADLINE), child::output);
                    assertTrue(child.output().contains("done"), child::output);
                    assertEquals(1, d2d.deviceHandle().expectedValue(), "one signal came, in the finale");
                    assertEquals(1, childToken.hostSegment().get(ValueLayout.JAVA_LONG, 0),
                            "this rank signalled the child's token, in its memory, once");
                    assertFalse(h.poll());
                }
                semaphore.close();
                dst.close();
                connection.close();
            }
            dataMemory.close();
            packetMemory.close();
            mailboxMemory.close();
        }
        assertNoFiles();
    }

    /**
     * Runs rank 0's kernel on a thread of its own while watching the child: a failure of either
     * ends the test at once with the child's output (the kernel is interrupted when the child
     * died under it, rather than left waiting for its packets).
     */
    private static void runRank0(ChildJvm child, FifoTesting.Body kernel) throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        try (FifoTesting.Workers rank0 = new FifoTesting.Workers()) {
            rank0.start("rank-0", kernel);
            while (true) {
                try {
                    rank0.join(Duration.ofMillis(100));
                    return;
                } catch (AssertionError running) {
                    if (running.getMessage().startsWith("worker failed")) {
                        throw new AssertionError(running.getMessage() + "; child output:\n" + child.output(), running);
                    }
                }
                if (!child.process().isAlive()) {
                    try {
                        rank0.join(Duration.ofSeconds(5));   // the child exits right after its last signal
                        return;
                    } catch (AssertionError e) {
                        throw new AssertionError("the child exited while rank 0 still ran; child output:\n"
                                + child.output(), e);
                    }
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("rank 0 still runs after " + DEADLINE + "; child output:\n" + child.output());
                }
            }
        }
    }

    private void assertNoFiles() {
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(List.of(), left.toList(), "every shared-memory file is gone");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
