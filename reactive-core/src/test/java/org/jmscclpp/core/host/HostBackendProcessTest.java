package org.jmscclpp.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.testkit.ChildJvm;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The host backend between real processes: a child JVM maps, reads and writes the parent's memory; exit cleanup. */
class HostBackendProcessTest {

    private static final Duration CHILD_DEADLINE = Duration.ofSeconds(60);
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    @TempDir
    Path dir;
    @TempDir
    Path logs;

    @Test
    void childProcessMapsReadsAndWritesBackThroughHostIpc() {
        long half = 1 << 15;
        try (HostBackend backend = HostBackend.open(dir);
             Communicator comm = Communicator.create(InMemoryBootstrap.group(1).get(0), backend);
             DeviceBuffer buffer = backend.allocate(2 * half)) {
            MemorySegment mine = buffer.hostSegment();
            for (long i = 0; i < half; i++) {
                mine.set(ValueLayout.JAVA_BYTE, i, ShmChild.parentPattern(i));
            }
            RegisteredMemory memory = comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC));
            String endpoint = HexFormat.of().formatHex(backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.HOST_IPC))
                    .serialize());
            try (ChildJvm child = ChildJvm.start(logs.resolve("child.log"), ShmChild.class, "write-back",
                    dir.toString(), HexFormat.of().formatHex(memory.serialize()), endpoint, Long.toString(half))) {
                // the child's release store of the token publishes its reply: wait for it while the child runs
                long deadline = System.nanoTime() + CHILD_DEADLINE.toNanos();
                while ((long) WORD.getAcquire(mine, 2 * half - 8) != 1) {
                    boolean childGone = !child.process().isAlive();
                    if ((long) WORD.getAcquire(mine, 2 * half - 8) == 1) {
                        break;
                    }
                    if (childGone || System.nanoTime() - deadline > 0) {
                        throw new AssertionError("no token from the child" + (childGone ? " before it exited" : "")
                                + "; its output:\n" + child.output());
                    }
                    // polling a word another process writes; the park only spares the CPU the child needs
                    LockSupport.parkNanos(200_000);
                }
                for (long i = 0; i < half - 8; i++) {
                    byte b = mine.get(ValueLayout.JAVA_BYTE, half + i);
                    if (b != ShmChild.replyPattern(i)) {
                        throw new AssertionError("reply byte " + i + " is " + b + ", expected " + ShmChild.replyPattern(i)
                                + "; child output:\n" + child.output());
                    }
                }
                assertEquals(0, child.waitFor(CHILD_DEADLINE), child::output);
                assertTrue(child.output().contains("wrote reply"), child::output);
            }
            // the child unmapped and closed its own buffer: only this process's file is left
            Path file = ((SharedMemoryBuffer) buffer).file();
            assertEquals(List.of(file), files());
            memory.close();
        }
        assertEquals(List.of(), files(), "closing the buffer removes its file");
    }

    @ParameterizedTest
    @ValueSource(strings = {"exit", "return"})
    void filesOfBuffersNeverClosedAreRemovedWhenTheJvmExits(String how) {
        int count = 5;
        try (ChildJvm child = ChildJvm.start(logs.resolve("leak-" + how + ".log"), ShmChild.class, "leak",
                dir.toString(), Integer.toString(count), how)) {
            assertEquals(0, child.waitFor(CHILD_DEADLINE), child::output);
            List<String> created = child.linesStartingWith("created ");
            assertEquals(count, created.size(), child::output);
            for (String line : created) {
                assertTrue(line.endsWith(" exists=true"), () -> "the child did not see its file: " + line);
                String name = line.substring(0, line.indexOf(' '));
                assertTrue(SharedMemoryHandle.isValidName(name), name);
                assertTrue(name.startsWith("jmscclpp-" + child.process().pid() + "-"), name);
                assertFalse(Files.exists(dir.resolve(name)), name + " outlived its process");
            }
        }
        assertEquals(List.of(), files());
    }

    private List<Path> files() {
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
