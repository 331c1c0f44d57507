package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class MeshDemoTest {

    @TempDir
    Path shm;

    /** Three rank processes run the README's pipeline; rank 0 reports every slice checked. */
    @Test
    @Timeout(180)
    void threeRanksRunTheReadmePipeline() throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(3).sample(MeshDemo.NAME, List.of())
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString())).output(lines::add).start()) {
            assertTrue(job.waitFor(Duration.ofSeconds(120)), "ranks still running");
            String all = lines.stream().map(l -> "[rank " + l.rank() + "] " + l.text()).collect(Collectors.joining("\n"));
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + all);
            assertTrue(lines.stream().anyMatch(l -> l.rank() == 0 && l.text().equals(MeshDemo.NAME
                    + ": 3 ranks each wrote 65536 bytes into every peer over HOST_IPC; every slice checked: OK")), all);
        }
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList(), "every rank closed its shared memory");
        }
    }

    /** Three rank processes run the README's proxy example: flush completions drive the barrier. */
    @Test
    @Timeout(180)
    void threeRanksRunThePortChannelExample() throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(3).sample(PortChannelDemo.NAME, List.of())
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString())).output(lines::add).start()) {
            assertTrue(job.waitFor(Duration.ofSeconds(120)), "ranks still running");
            String all = lines.stream().map(l -> "[rank " + l.rank() + "] " + l.text()).collect(Collectors.joining("\n"));
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + all);
            assertTrue(lines.stream().anyMatch(l -> l.rank() == 0 && l.text().equals(PortChannelDemo.NAME
                    + ": 3 ranks; 2 flush completions of 65536 bytes each drove the barrier; every slice checked: OK")),
                    all);
        }
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList(), "every rank closed its shared memory");
        }
    }

    @Test
    void theCheckFindsAWrongByte() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment all = arena.allocate(2 * 16);
            all.asSlice(0, 16).fill((byte) 1);
            all.asSlice(16, 16).fill((byte) 2);
            MeshDemo.check(all, 2, 16, 0);
            all.set(ValueLayout.JAVA_BYTE, 20, (byte) 9);
            JmscclppException e = assertThrows(JmscclppException.class, () -> MeshDemo.check(all, 2, 16, 0));
            assertTrue(e.getMessage().contains("slice 1 byte 4 is 9"), e.getMessage());
        }
    }
}
