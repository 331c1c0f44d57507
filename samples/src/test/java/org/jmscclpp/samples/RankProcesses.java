package org.jmscclpp.samples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** What the tests of orphaned ranks ask about processes that are not their children. */
public final class RankProcesses {

    private RankProcesses() {
    }

    /**
     * Whether {@code pid} is a process that runs: a zombie (dead, not yet reaped by whoever
     * adopted it) does not count, since it holds no memory, no files and runs no code.
     */
    public static boolean running(long pid) {
        if (ProcessHandle.of(pid).isEmpty()) {
            return false;
        }
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
            // field 3, the state, follows the command name in parentheses
            char state = stat.substring(stat.lastIndexOf(')') + 1).strip().charAt(0);
            return state != 'Z' && state != 'X';
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException | RuntimeException e) {
            return true;   // no /proc: ProcessHandle's word
        }
    }

    /**
     * Waits until none of {@code pids} runs.
     *
     * @return how long it took
     * @throws AssertionError naming those still running, with {@code context}, after {@code timeout}
     */
    public static Duration awaitGone(List<Long> pids, Duration timeout, Supplier<String> context) {
        long start = System.nanoTime();
        awaitTrue(() -> pids.stream().noneMatch(RankProcesses::running), timeout, () -> {
            List<Long> left = new ArrayList<>();
            for (long p : pids) {
                if (running(p)) {
                    left.add(p);
                }
            }
            return "processes " + left + " still run after " + timeout.toMillis() + " ms; " + context.get();
        });
        return Duration.ofNanos(System.nanoTime() - start);
    }

    /** Polls {@code condition} until it holds; an {@link AssertionError} with {@code failure} after {@code timeout}. */
    public static void awaitTrue(BooleanSupplier condition, Duration timeout, Supplier<String> failure) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError(failure.get());
            }
            // watching other processes: there is nothing to block on, the park only spares the CPU
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
    }
}
