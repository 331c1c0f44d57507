package org.jmscclpp.core.host;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;

/**
 * When a process started, as a number that stays the same for the whole life of the process and
 * tells it apart from a later process that got the same pid: with the pid, the identity of the
 * owner of a shared-memory file ({@link SharedMemoryFiles} reclaims the files of owners that no
 * longer run).
 *
 * <p>On Linux it is field 22 of {@code /proc/<pid>/stat}, the start time in clock ticks since boot,
 * which no change of the wall clock moves (unlike {@link ProcessHandle.Info#startInstant()}, which
 * is computed from the boot time as the wall clock sees it now). Where there is no {@code /proc},
 * it is {@code startInstant()} in milliseconds. Every process of a host uses the same kind.
 */
final class ProcessStart {

    /** What is known of a process id now. */
    enum Liveness {
        /** A process of that pid runs and started at the given time. */
        ALIVE,
        /** No process has that pid, or the one that has it started at another time. */
        GONE,
        /** Cannot tell (the process table is not readable); treat as alive. */
        UNKNOWN
    }

    private static final Path PROC = Path.of("/proc");
    private static final boolean HAS_PROC = Files.isReadable(PROC.resolve("self").resolve("stat"));
    /** Index of field 22 (starttime) among the fields after the command name, which are fields 3 onwards. */
    private static final int START_FIELD = 22 - 3;

    private static final long CURRENT = startOf(ProcessHandle.current().pid()).orElse(0L);
    private static final long PID_NAMESPACE = readPidNamespace();

    private ProcessStart() {
    }

    /** This process's start time; 0 when it cannot be told (then its files are reclaimed only once its pid is free). */
    static long current() {
        return CURRENT;
    }

    /**
     * The inode of this process's pid namespace ({@code /proc/self/ns/pid} links to
     * {@code pid:[N]}), or 0 where it cannot be read: pids, and so the owners of files, mean
     * something only within one namespace.
     */
    static long pidNamespace() {
        return PID_NAMESPACE;
    }

    private static long readPidNamespace() {
        try {
            String link = Files.readSymbolicLink(PROC.resolve("self").resolve("ns").resolve("pid")).toString();
            if (link.startsWith("pid:[") && link.endsWith("]")) {
                return Long.parseLong(link.substring(5, link.length() - 1));
            }
        } catch (IOException | RuntimeException e) {
            // no /proc: 0, the same for every process of such a host
        }
        return 0;
    }

    /** Whether the process {@code pid} that started at {@code start} still runs. */
    static Liveness of(long pid, long start) {
        if (pid <= 0) {
            return Liveness.UNKNOWN;
        }
        if (HAS_PROC) {
            try {
                Optional<Long> now = procStart(pid);
                if (now.isEmpty()) {
                    return Liveness.UNKNOWN;
                }
                return now.get() == start || start == 0 ? Liveness.ALIVE : Liveness.GONE;
            } catch (NoSuchFileException e) {
                return Liveness.GONE;
            } catch (IOException | RuntimeException e) {
                return Liveness.UNKNOWN;
            }
        }
        Optional<ProcessHandle> handle = ProcessHandle.of(pid);
        if (handle.isEmpty()) {
            return Liveness.GONE;
        }
        Optional<Instant> started = handle.get().info().startInstant();
        if (started.isEmpty() || start == 0) {
            return Liveness.UNKNOWN;
        }
        return started.get().toEpochMilli() == start ? Liveness.ALIVE : Liveness.GONE;
    }

    private static Optional<Long> startOf(long pid) {
        if (HAS_PROC) {
            try {
                return procStart(pid);
            } catch (IOException | RuntimeException e) {
                return Optional.empty();
            }
        }
        return ProcessHandle.of(pid).flatMap(h -> h.info().startInstant()).map(Instant::toEpochMilli);
    }

    /**
     * Field 22 of {@code /proc/<pid>/stat}, empty when the line does not parse.
     *
     * @throws NoSuchFileException when there is no such process
     */
    private static Optional<Long> procStart(long pid) throws IOException {
        String stat = new String(Files.readAllBytes(PROC.resolve(Long.toString(pid)).resolve("stat")),
                StandardCharsets.US_ASCII);
        // the command name (field 2) is in parentheses and may itself hold spaces and parentheses
        int close = stat.lastIndexOf(')');
        if (close < 0) {
            return Optional.empty();
        }
        String[] fields = stat.substring(close + 1).strip().split(" ");
        if (fields.length <= START_FIELD) {
            return Optional.empty();
        }
        try {
            return Optional.of(Long.parseLong(fields[START_FIELD]));
        } catch (NumberFormatException e) {
            return Optional.empty();
        }
    }
}
