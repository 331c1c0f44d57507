package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Many short communicator lifetimes in one JVM leave nothing behind: no shared-memory file, no
 * mapping, no file descriptor, no jmscclpp thread (platform threads, and the virtual
 * {@code jmscclpp-wait} threads, which only a thread dump lists).
 */
class CommunicatorHygieneTest {

    private static final int WARM_UP = 5;
    private static final int CYCLES = 200;
    private static final int BYTES = 4096;
    /** Descriptors the JVM itself may open meanwhile (class loading, JIT, a jar): fixed, not per cycle. */
    private static final int FD_SLACK = 4;
    private static final EndpointConfig HOST_IPC = EndpointConfig.of(Transport.HOST_IPC);
    private static final Duration WAIT = CommunicatorGroup.WAIT;
    private static final Pattern WAIT_THREAD = Pattern.compile("\"name\"\\s*:\\s*\"jmscclpp-wait\"");

    @TempDir
    Path dir;

    @TempDir
    Path dumps;

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void twoHundredCyclesLeaveNoFileMappingDescriptorOrThread() throws Exception {
        for (int i = 0; i < WARM_UP; i++) {
            cycle(i);
        }
        int fdsBefore = openFds();
        List<String> threadsBefore = jmscclppThreads();
        // other tests of this JVM may have left waits running until their deadlines: compare, not zero
        int waitThreadsBefore = waitThreads(0);
        long start = System.nanoTime();
        for (int i = 0; i < CYCLES; i++) {
            cycle(WARM_UP + i);
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        System.out.printf("hygiene: %d cycles in %d ms (%.2f ms each)%n", CYCLES, ms, ms / (double) CYCLES);

        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(), files.map(p -> p.getFileName().toString()).toList(), "files left in " + dir);
        }
        List<String> maps = Files.readAllLines(Path.of("/proc/self/maps")).stream()
                .filter(l -> l.contains(dir.toString())).toList();
        assertEquals(List.of(), maps, "mappings of " + dir + " left");
        int fdsAfter = awaitFdsAtMost(fdsBefore + FD_SLACK, Duration.ofSeconds(5));
        assertTrue(fdsAfter <= fdsBefore + FD_SLACK, "open descriptors grew from " + fdsBefore + " to " + fdsAfter
                + " over " + CYCLES + " cycles");
        List<String> threadsAfter = jmscclppThreads();
        assertTrue(threadsAfter.size() <= threadsBefore.size() && threadsBefore.containsAll(threadsAfter),
                "jmscclpp threads " + threadsAfter + ", before the cycles " + threadsBefore);
        int waitThreadsAfter = awaitWaitThreadsAtMost(waitThreadsBefore, Duration.ofSeconds(5));
        assertTrue(waitThreadsAfter <= waitThreadsBefore, waitThreadsAfter + " virtual jmscclpp-wait threads alive, "
                + waitThreadsBefore + " before the cycles");
    }

    /**
     * One lifetime: a backend, two in-memory ranks with a communicator each, a HOST_IPC connection
     * both ways, a buffer per rank exchanged with the peer, a host and a device semaphore per
     * connection, one write + flush + signal/wait each way (the wait subscribed before the signal,
     * so it parks a virtual thread), a check of the bytes, and everything closed.
     */
    private void cycle(int index) throws Exception {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            List<DeviceBuffer> bufs = List.of(g.backend.allocate(BYTES), g.backend.allocate(BYTES));
            List<RegisteredMemory> mine = new ArrayList<>();
            try {
                for (int r = 0; r < 2; r++) {
                    mine.add(g.comm(r).registerMemory(bufs.get(r), TransportFlags.of(Transport.HOST_IPC)));
                    bufs.get(r).hostSegment().fill((byte) (index * 2 + r + 1));
                }
                List<Connection> conns = g.onEveryRank(r -> g.comm(r).connect(1 - r, 0, HOST_IPC));
                List<RegisteredMemory> theirs = g.onEveryRank(r -> g.comm(r).sendMemory(mine.get(r), 1 - r, 0)
                        .then(g.comm(r).recvMemory(1 - r, 0)));
                List<Host2HostSemaphore> sems = g.onEveryRank(r -> Host2HostSemaphore.build(g.comm(r), conns.get(r)));
                List<Host2DeviceSemaphore> device = g.onEveryRank(r -> Host2DeviceSemaphore.build(g.comm(r),
                        conns.get(r)));
                for (int r = 0; r < 2; r++) {
                    int peer = 1 - r;
                    // the peer's slot is its second half: write my first half there
                    CompletableFuture<Void> arrived = sems.get(peer).nextSignal(WAIT).toFuture();
                    if (index == 0 && r == 0) {
                        // proves the dump sees a parked waiter, so the count after the cycles means something
                        assertTrue(waitThreads(-1) >= 1, "no jmscclpp-wait thread while a wait is pending");
                    }
                    conns.get(r).write(theirs.get(r), BYTES / 2, mine.get(r), 0, BYTES / 2);
                    conns.get(r).flush().block(WAIT);
                    sems.get(r).signal();
                    device.get(r).signal();
                    arrived.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    device.get(peer).deviceHandle().await(WAIT);
                    MemorySegment got = bufs.get(peer).hostSegment();
                    assertEquals((byte) (index * 2 + r + 1), got.get(ValueLayout.JAVA_BYTE, BYTES / 2));
                    assertEquals((byte) (index * 2 + r + 1), got.get(ValueLayout.JAVA_BYTE, BYTES - 1));
                    assertEquals((byte) (index * 2 + peer + 1), got.get(ValueLayout.JAVA_BYTE, BYTES / 2 - 1));
                }
            } finally {
                // the communicators go first (they own connections, mappings, semaphores), then what I registered
                g.comms.forEach(Communicator::close);
                mine.forEach(RegisteredMemory::close);
                bufs.forEach(DeviceBuffer::close);
            }
        }
    }

    private static int openFds() throws IOException {
        int count = 0;
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path ignored : fds) {
                count++;
            }
        }
        return count - 1;   // the directory stream's own descriptor
    }

    /** The kernel gives no signal when a descriptor closes on another thread: poll, bounded. */
    private static int awaitFdsAtMost(int limit, Duration within) throws IOException {
        long deadline = System.nanoTime() + within.toNanos();
        int now = openFds();
        while (now > limit && System.nanoTime() < deadline) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
            now = openFds();
        }
        return now;
    }

    private static List<String> jmscclppThreads() {
        List<String> names = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith("jmscclpp")) {
                names.add(t.getName());
            }
        }
        names.sort(null);
        return names;
    }

    /**
     * Waits (at most {@code within}) until no more than {@code limit} virtual threads named
     * {@code jmscclpp-wait} are alive, and returns how many are: a thread that completed its task
     * is still terminating for a moment, and nothing signals its end.
     */
    private int awaitWaitThreadsAtMost(int limit, Duration within) throws IOException {
        long deadline = System.nanoTime() + within.toNanos();
        for (int attempt = 1; ; attempt++) {
            int alive = waitThreads(attempt);
            if (alive <= limit || System.nanoTime() > deadline) {
                return alive;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
        }
    }

    /** Live virtual threads named {@code jmscclpp-wait}, from a JSON thread dump: the one API that lists virtual threads. */
    private int waitThreads(int attempt) throws IOException {
        Path dump = dumps.resolve("threads-" + attempt + ".json");
        ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                .dumpThreads(dump.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.JSON);
        Matcher m = WAIT_THREAD.matcher(Files.readString(dump));
        int alive = 0;
        while (m.find()) {
            alive++;
        }
        return alive;
    }
}
