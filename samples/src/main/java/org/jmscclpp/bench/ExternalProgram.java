package org.jmscclpp.bench;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * What the C baselines of the benchmarks ({@link ShmPingPongFloor}, {@link MpiBaseline}) share:
 * finding a tool on the PATH, compiling a C program of {@code src/main/c/org/jmscclpp/bench} into a
 * temporary directory, and running a child process with a deadline while capturing its output.
 * Blocking calls, for the calling thread of a benchmark.
 */
final class ExternalProgram {

    /** How long a stopped child gets to exit, and its output reader to finish, at each step. */
    private static final Duration GRACE = Duration.ofSeconds(5);
    private static final int TAIL_CHARS = 2000;
    private static final int COMPILE_TAIL_LINES = 12;
    /** Where the C sources are in the samples module: beside this package, as class-path resources. */
    private static final String SOURCES = "src/main/c/org/jmscclpp/bench";

    private ExternalProgram() {
    }

    /** How a child that outlived its deadline is stopped. */
    enum Stop {
        /**
         * Kill its descendants, then it: for a program that forks its own workers, which are out
         * of reach once their parent is gone.
         */
        KILL_TREE,
        /** Ask it to terminate, so that a launcher (mpirun) stops its ranks; after a grace period, kill its tree. */
        TERMINATE_THEN_KILL
    }

    /**
     * How a child ended.
     *
     * @param exitCode -1 when timed out
     * @param lines    the output lines that the caller asked to keep, in order
     * @param tail     the last few non-blank output lines, stripped and joined with " | " (at most
     *                 {@value #TAIL_CHARS} characters), or "(no output)"
     */
    record Run(boolean timedOut, int exitCode, List<String> lines, String tail) {
    }

    /** A compiled program, or why there is none ({@code binary} null). */
    record Compiled(@Nullable Path binary, String error) {
    }

    /** {@code executable} in the first directory of the PATH that holds it as an executable file, or empty. */
    static Optional<Path> findOnPath(String executable) {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        for (String dir : path.split(File.pathSeparator)) {
            if (dir.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(dir, executable);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /**
     * Compiles {@code sourceName} (C11, -O2) with {@code compiler} into {@code binaryName} in a new
     * temporary directory named from {@code tempPrefix}, all deleted on JVM exit. Never throws:
     * a missing source, a failed or timed-out compilation is an error in the result.
     */
    static Compiled compile(String compiler, String sourceName, String binaryName, String tempPrefix,
                            Duration timeout) {
        return compile(compiler, sourceName, binaryName, tempPrefix, timeout, List.of());
    }

    /** {@link #compile(String, String, String, String, Duration)} with {@code linkArgs} ({@code -ldl}) after the source. */
    static Compiled compile(String compiler, String sourceName, String binaryName, String tempPrefix,
                            Duration timeout, List<String> linkArgs) {
        try {
            Path dir = Files.createTempDirectory(tempPrefix);
            dir.toFile().deleteOnExit();
            Path source = dir.resolve(sourceName);
            source.toFile().deleteOnExit();
            if (!copySource(sourceName, source)) {
                return new Compiled(null, sourceName + " is neither on the classpath nor under samples/" + SOURCES);
            }
            Path binary = dir.resolve(binaryName);
            binary.toFile().deleteOnExit();
            List<String> command = new ArrayList<>(List.of(compiler, "-std=c11", "-O2", "-o", binary.toString(),
                    source.toString()));
            command.addAll(linkArgs);
            Run run = run(command, timeout, Stop.KILL_TREE, line -> false, COMPILE_TAIL_LINES, env -> { });
            if (run.timedOut()) {
                return new Compiled(null, compiler + " did not finish within " + timeout.toSeconds() + " s");
            }
            if (run.exitCode() != 0 || !Files.isExecutable(binary)) {
                return new Compiled(null, compiler + " exited with " + run.exitCode() + "; output tail: " + run.tail());
            }
            return new Compiled(binary, "");
        } catch (IOException | UncheckedIOException e) {
            return new Compiled(null, "cannot compile " + sourceName + ": " + e.getMessage());
        }
    }

    /** Copies the C source to {@code target}, preferring the classpath copy; false when neither exists. */
    private static boolean copySource(String sourceName, Path target) throws IOException {
        try (InputStream in = ExternalProgram.class.getResourceAsStream(sourceName)) {
            if (in != null) {
                Files.copy(in, target);
                return true;
            }
        }
        // Running from the source tree without the resources copied: the repository root or the module dir.
        for (Path candidate : List.of(Path.of("samples", SOURCES, sourceName), Path.of(SOURCES, sourceName))) {
            if (Files.isRegularFile(candidate)) {
                Files.copy(candidate, target);
                return true;
            }
        }
        return false;
    }

    /**
     * Runs {@code command} with stderr merged into stdout and no input, at most {@code timeout};
     * then stops it as {@code stop} says.
     *
     * @param keepLine    which output lines the result keeps (the tail sees every line)
     * @param tailLines   how many of the last non-blank lines the tail holds
     * @param environment adjusts the child's environment before it starts
     * @throws IOException when the process cannot start, or the calling thread is interrupted
     *                     while waiting (the child and its descendants are then killed)
     */
    static Run run(List<String> command, Duration timeout, Stop stop, Predicate<String> keepLine, int tailLines,
                   Consumer<Map<String, String>> environment) throws IOException {
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        environment.accept(builder.environment());
        Process process = builder.start();
        List<String> lines = new ArrayList<>();
        Deque<String> tail = new ArrayDeque<>();
        String name = Path.of(command.getFirst()).getFileName() + "-output";
        Thread reader = Thread.ofPlatform().daemon().name(name).start(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    synchronized (lines) {
                        if (keepLine.test(line)) {
                            lines.add(line);
                        }
                        if (!line.isBlank()) {
                            tail.addLast(line.strip());
                            if (tail.size() > tailLines) {
                                tail.removeFirst();
                            }
                        }
                    }
                }
            } catch (IOException e) {
                // The pipe closes under us when the process is killed; what was read so far stays.
            }
        });
        boolean finished;
        try {
            finished = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (!finished) {
                boolean exited = false;
                if (stop == Stop.TERMINATE_THEN_KILL) {
                    process.destroy();
                    exited = process.waitFor(GRACE.toMillis(), TimeUnit.MILLISECONDS);
                }
                if (!exited) {
                    killTree(process);
                    process.waitFor(GRACE.toMillis(), TimeUnit.MILLISECONDS);
                }
            }
            // Descendants left behind could hold the pipe open; the output is complete or never will be.
            reader.join(GRACE);
        } catch (InterruptedException e) {
            killTree(process);
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for " + command.getFirst(), e);
        }
        synchronized (lines) {
            String joined = tail.isEmpty() ? "(no output)" : String.join(" | ", tail);
            if (joined.length() > TAIL_CHARS) {
                joined = "..." + joined.substring(joined.length() - TAIL_CHARS);
            }
            return new Run(!finished, finished ? process.exitValue() : -1, List.copyOf(lines), joined);
        }
    }

    /** The descendants first: once their parent is gone they would be orphaned, out of reach. */
    private static void killTree(Process process) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
    }
}
