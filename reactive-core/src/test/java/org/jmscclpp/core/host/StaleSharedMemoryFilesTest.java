package org.jmscclpp.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shared-memory files of processes killed with SIGKILL are reclaimed by the next process that
 * creates one in the directory; files of processes that still run, links and other names are not.
 */
class StaleSharedMemoryFilesTest {

    private static final Duration CHILD_DEADLINE = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    @TempDir
    Path logs;
    @TempDir
    Path elsewhere;

    @Test
    void theStartTimeTellsThisProcessFromAnEarlierOneWithItsPid() throws IOException, InterruptedException {
        long pid = ProcessHandle.current().pid();
        long start = ProcessStart.current();
        assertTrue(start > 0, "the start time is known on this host");
        assertEquals(ProcessStart.Liveness.ALIVE, ProcessStart.of(pid, start));
        assertEquals(ProcessStart.Liveness.GONE, ProcessStart.of(pid, start - 1), "another process had this pid");
        Process child = new ProcessBuilder(ChildJvm.command(List.of(), ShmChild.class, List.of())).start();
        long childPid = child.pid();
        assertTrue(child.waitFor(CHILD_DEADLINE.toSeconds(), TimeUnit.SECONDS));
        assertEquals(ProcessStart.Liveness.GONE, ProcessStart.of(childPid, 1), "a reaped child's pid is free");
    }

    @Test
    void theNextProcessReclaimsTheFilesOfAKilledOneAndKeepsThoseOfLiveOnes() throws IOException {
        try (HostBackend backend = HostBackend.open(dir);
             DeviceBuffer mine = backend.allocate(4096);
             ChildJvm live = ChildJvm.start(logs.resolve("live.log"), ShmChild.class, "hold", dir.toString(), "1")) {
            Path myFile = ((SharedMemoryBuffer) mine).file();
            List<Path> liveFiles = holding(live, 1);

            List<Path> killedFiles;
            long pid;
            try (ChildJvm killed = ChildJvm.start(logs.resolve("killed.log"), ShmChild.class, "hold", dir.toString(),
                    "3")) {
                killedFiles = holding(killed, 3);
                pid = killed.process().pid();
                killed.process().destroyForcibly();
                assertEquals(137, killed.waitFor(CHILD_DEADLINE), killed::output);
            }
            for (Path f : killedFiles) {
                assertTrue(Files.isRegularFile(f), f + ": SIGKILL runs no exit hook, the file stays");
            }
            long stale = 0;
            for (Path f : killedFiles) {
                stale += Files.size(f);
            }
            // a pid reused: the live child's pid with another start time is a process that is gone
            SharedMemoryHandle.Owner liveOwner = SharedMemoryHandle.owner(liveFiles.getFirst().getFileName().toString())
                    .orElseThrow();
            Path reused = Files.write(dir.resolve(SharedMemoryHandle.fileName(liveOwner.pid(), liveOwner.start() - 1,
                    ProcessStart.pidNamespace(), "00000000000000aa", 0)), new byte[100]);
            stale += 100;
            // a name of version 1, with the pid only, of a process that no longer runs
            Path pidOnly = Files.write(dir.resolve("jmscclpp-" + pid + "-00000000000000cc-0"), new byte[30]);
            stale += 30;
            // what is never touched: a link named like a stale file, names of other forms, another live name
            Path target = Files.write(elsewhere.resolve("target"), new byte[10]);
            Path link = Files.createSymbolicLink(dir.resolve(SharedMemoryHandle.fileName(pid, 1,
                    ProcessStart.pidNamespace(), "00000000000000bb", 0)), target);
            // a file of a process of another pid namespace (a container sharing the directory): its pid means nothing here
            Path otherNamespace = Files.write(dir.resolve(SharedMemoryHandle.fileName(pid, 1,
                    ProcessStart.pidNamespace() + 1, "00000000000000ee", 0)), new byte[10]);
            Path oddName = Files.write(dir.resolve("jmscclpp-" + pid + "-1-nonce-0"), new byte[10]);
            Path pidOnlyLive = Files.write(dir.resolve("jmscclpp-" + liveOwner.pid() + "-00000000000000cc-0"),
                    new byte[10]);
            Path liveName = Files.write(dir.resolve(SharedMemoryHandle.fileName(liveOwner.pid(), liveOwner.start(),
                    ProcessStart.pidNamespace(), "00000000000000dd", 0)), new byte[10]);

            // the reclaim is an INFO line of the SHM subsystem: a library prints those only when asked
            try (ChildJvm next = ChildJvm.start(logs.resolve("next.log"), Map.of("MSCCLPP_DEBUG", "INFO",
                    "MSCCLPP_DEBUG_SUBSYS", "SHM"), List.of(), ShmChild.class, "leak", dir.toString(), "1", "return")) {
                assertEquals(0, next.waitFor(CHILD_DEADLINE), next::output);
                String reclaimed = "reclaimed " + (killedFiles.size() + 2) + " shared-memory files (" + stale
                        + " bytes) in " + dir.toAbsolutePath();
                assertTrue(next.output().contains(reclaimed), () -> "no '" + reclaimed + "' in:\n" + next.output());
            }
            for (Path f : killedFiles) {
                assertFalse(Files.exists(f, LinkOption.NOFOLLOW_LINKS), f + " was not reclaimed");
            }
            assertFalse(Files.exists(reused), "a file of a pid now used by another process is reclaimed");
            assertFalse(Files.exists(pidOnly), "a version 1 name of a free pid is reclaimed");
            for (Path kept : List.of(myFile, liveFiles.getFirst(), liveName, oddName, pidOnlyLive, otherNamespace)) {
                assertTrue(Files.isRegularFile(kept, LinkOption.NOFOLLOW_LINKS), kept + " was touched");
            }
            assertTrue(Files.isSymbolicLink(link), "a link is left alone");
            assertEquals(10, Files.size(target));
            Files.delete(link);
            assertTrue(live.process().isAlive(), live::output);
        }
    }

    /** Waits (bounded) until {@code child} printed {@code holding}; returns the files it created. */
    private List<Path> holding(ChildJvm child, int count) {
        long deadline = System.nanoTime() + CHILD_DEADLINE.toNanos();
        while (!child.output().contains("holding")) {
            if (!child.process().isAlive() || System.nanoTime() - deadline > 0) {
                throw new AssertionError("the child did not get to hold its files; its output:\n" + child.output());
            }
            // waiting for another JVM to start; the park only spares the CPU it needs
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
        List<Path> files = new ArrayList<>();
        for (String line : child.linesStartingWith("created ")) {
            files.add(dir.resolve(line.substring(0, line.indexOf(' '))));
        }
        assertEquals(count, files.size(), child::output);
        for (Path f : files) {
            assertEquals(child.process().pid(), SharedMemoryHandle.owner(f.getFileName().toString()).orElseThrow().pid(),
                    f::toString);
        }
        return files;
    }
}
