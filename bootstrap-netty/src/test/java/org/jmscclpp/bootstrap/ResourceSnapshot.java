package org.jmscclpp.bootstrap;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The open file descriptors of this process ({@code /proc/self/fd}) and its live platform threads
 * whose names start with {@code jmscclpp}: taken before a test, compared after it to prove that
 * closed bootstraps leave neither sockets nor threads behind.
 *
 * <p>Virtual threads are not listed (the JDK does not enumerate them); the bootstrap only uses
 * them for short blocking steps that end with the operation.
 */
public record ResourceSnapshot(Map<Integer, String> fds, List<String> threads) {

    static final String THREAD_PREFIX = "jmscclpp";
    private static final Path FD_DIR = Path.of("/proc/self/fd");

    /** Whether this platform lists descriptors under {@code /proc/self/fd}. */
    static boolean fdsVisible() {
        return Files.isDirectory(FD_DIR);
    }

    /** The descriptors and jmscclpp threads alive now. */
    static ResourceSnapshot take() {
        return new ResourceSnapshot(openFds(), threadNames(jmscclppThreads()));
    }

    /**
     * A baseline with no jmscclpp thread: first waits (at most {@code within}) for the threads of
     * bootstraps closed earlier to end, since their descriptors close with them.
     *
     * @throws AssertionError if jmscclpp threads are still alive at the deadline
     */
    public static ResourceSnapshot quiescent(Duration within) {
        joinJmscclppThreads(System.nanoTime() + within.toNanos());
        ResourceSnapshot s = take();
        if (!s.threads().isEmpty()) {
            throw new AssertionError("jmscclpp threads still alive before the test: " + s.threads());
        }
        return s;
    }

    /** Open descriptors and what each points at ({@code socket:[123]}, a file path, ...). */
    static Map<Integer, String> openFds() {
        Map<Integer, String> fds = new TreeMap<>();
        if (!fdsVisible()) {
            return fds;
        }
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(FD_DIR)) {
            for (Path p : dir) {
                String target;
                try {
                    target = Files.readSymbolicLink(p).toString();
                } catch (IOException closedMeanwhile) {
                    // the descriptor closed while we listed: it is not open any more
                    continue;
                }
                fds.put(Integer.parseInt(p.getFileName().toString()), target);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list " + FD_DIR, e);
        }
        // the directory stream's own descriptor is listed too; it is closed now
        fds.values().removeIf(t -> t.equals(FD_DIR.toString()) || t.startsWith("/proc/") && t.endsWith("/fd"));
        return fds;
    }

    /** Live platform threads whose name starts with {@code jmscclpp}. */
    static List<Thread> jmscclppThreads() {
        List<Thread> out = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith(THREAD_PREFIX)) {
                out.add(t);
            }
        }
        return out;
    }

    /**
     * Waits until every jmscclpp thread has ended (joining each, so this is not a guess) and the
     * number of open descriptors is back to this snapshot's, for at most {@code within}.
     *
     * @throws AssertionError naming the threads still alive and the descriptors opened since
     */
    void awaitReturnTo(Duration within) {
        long deadline = System.nanoTime() + within.toNanos();
        joinJmscclppThreads(deadline);
        // The kernel gives no signal when a descriptor closed on another thread: poll, bounded.
        Map<Integer, String> now = openFds();
        while (now.size() > fds.size() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            now = openFds();
        }
        List<String> alive = threadNames(jmscclppThreads());
        if (now.size() > fds.size() || !alive.isEmpty()) {
            Map<Integer, String> added = new TreeMap<>(now);
            added.entrySet().removeIf(e -> e.getValue().equals(fds.get(e.getKey())));
            added.replaceAll((fd, target) -> describe(target));
            throw new AssertionError("resources left behind after " + within.toMillis() + " ms: "
                    + now.size() + " open descriptors (baseline " + fds.size() + "), new or changed: " + added
                    + "; jmscclpp threads alive: " + alive + " (baseline " + threads + ")");
        }
    }

    /**
     * A socket descriptor's addresses and TCP state from {@code /proc/net}, so a leak report says
     * which connection or listener was left open.
     */
    private static String describe(String target) {
        if (!target.startsWith("socket:[")) {
            return target;
        }
        String inode = target.substring("socket:[".length(), target.length() - 1);
        for (String table : List.of("tcp", "tcp6", "udp", "udp6", "unix")) {
            try {
                for (String line : Files.readAllLines(Path.of("/proc/self/net", table))) {
                    String[] f = line.trim().split("\\s+");
                    boolean match = table.equals("unix") ? f.length > 6 && f[6].equals(inode)
                            : f.length > 9 && f[9].equals(inode);
                    if (match) {
                        return target + " " + table + (table.equals("unix") ? " " + line.trim()
                                : " local " + hexAddress(f[1]) + " remote " + hexAddress(f[2]) + " state " + f[3]);
                    }
                }
            } catch (IOException | RuntimeException e) {
                // that table is not readable here: try the next
            }
        }
        return target;
    }

    /** {@code 0100007F:1F90} (little-endian IPv4 as the kernel prints it) as {@code 127.0.0.1:8080}. */
    private static String hexAddress(String hex) {
        String[] parts = hex.split(":");
        int port = Integer.parseInt(parts[1], 16);
        if (parts[0].length() != 8) {
            return "[" + parts[0] + "]:" + port;
        }
        long ip = Long.parseLong(parts[0], 16);
        return (ip & 0xff) + "." + (ip >> 8 & 0xff) + "." + (ip >> 16 & 0xff) + "." + (ip >> 24 & 0xff) + ":" + port;
    }

    private static void joinJmscclppThreads(long deadlineNanos) {
        for (Thread t : jmscclppThreads()) {
            long left = deadlineNanos - System.nanoTime();
            if (left <= 0) {
                return;
            }
            try {
                t.join(Duration.ofNanos(left));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for " + t.getName() + " to end", e);
            }
        }
    }

    private static List<String> threadNames(List<Thread> threads) {
        List<String> names = new ArrayList<>();
        for (Thread t : threads) {
            names.add(t.getName());
        }
        return names;
    }
}
