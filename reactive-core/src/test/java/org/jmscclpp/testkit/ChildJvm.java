package org.jmscclpp.testkit;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.core.host.HostBackend;

/**
 * A JVM started from this one (same java binary, same class path) running a {@code main} class of
 * the test sources, its stdout and stderr going to a file. {@link #close()} kills it if it still
 * runs, so a failing test leaves no process behind. Public for the multi-process tests of other
 * packages (the fifo's).
 */
public final class ChildJvm implements AutoCloseable {

    /** Short-lived children on a small machine: C1 only and the serial collector start fastest. */
    private static final List<String> JVM_FLAGS = List.of("--enable-native-access=ALL-UNNAMED",
            "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m", "-Xss1m");

    private final Process process;
    private final Path log;

    private ChildJvm(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    /**
     * The command line of a JVM like this one (same java binary and class path) that runs
     * {@code mainClass} with {@code flags} and {@code args}; also used by other modules' tests.
     */
    public static List<String> command(List<String> flags, Class<?> mainClass, List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command()
                .orElseThrow(() -> new IllegalStateException("cannot tell which java binary runs this JVM")));
        command.addAll(flags);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(mainClass.getName());
        command.addAll(args);
        return command;
    }

    public static ChildJvm start(Path log, Class<?> mainClass, String... args) {
        return start(log, Map.of(), List.of(), mainClass, args);
    }

    /**
     * {@link #start(Path, Class, String...)} with {@code env} added to the child's environment (an empty value
     * removes the variable) and {@code extraClassPath} after this JVM's class path.
     */
    public static ChildJvm start(Path log, Map<String, String> env, List<Path> extraClassPath, Class<?> mainClass,
                                 String... args) {
        List<String> command = command(JVM_FLAGS, mainClass, List.of(args));
        if (!extraClassPath.isEmpty()) {
            int cp = command.indexOf("-cp") + 1;
            StringBuilder path = new StringBuilder(command.get(cp));
            extraClassPath.forEach(p -> path.append(File.pathSeparator).append(p));
            command.set(cp, path.toString());
        }
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        // the child picks its directory from its arguments, never from the environment
        pb.environment().remove(HostBackend.SHM_DIR_ENV);
        env.forEach((k, v) -> {
            if (v.isEmpty()) {
                pb.environment().remove(k);
            } else {
                pb.environment().put(k, v);
            }
        });
        try {
            return new ChildJvm(pb.start(), log);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + command, e);
        }
    }

    public Process process() {
        return process;
    }

    /**
     * Waits for the child to exit and returns its exit code.
     *
     * @throws AssertionError with the child's output when it still runs after {@code timeout}
     */
    public int waitFor(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("child pid " + process.pid() + " did not exit within " + timeout.toMillis()
                        + " ms; its output:\n" + output());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting for child pid " + process.pid(), e);
        }
        return process.exitValue();
    }

    /** What the child printed so far. */
    public String output() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
    }

    /** The lines the child printed that start with {@code prefix}, without it. */
    public List<String> linesStartingWith(String prefix) {
        List<String> out = new ArrayList<>();
        for (String line : output().split("\n")) {
            if (line.startsWith(prefix)) {
                out.add(line.substring(prefix.length()).strip());
            }
        }
        return out;
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        // the child's stdin pipe: the JDK closes it from its reaper thread, after waitFor has returned, so a
        // test that counts this process's descriptors right after would see it still open
        try {
            process.getOutputStream().close();
        } catch (java.io.IOException ignored) {
            // already closed: nothing left to release
        }
    }
}
