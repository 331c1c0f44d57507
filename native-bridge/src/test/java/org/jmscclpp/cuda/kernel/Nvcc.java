package org.jmscclpp.cuda.kernel;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The CUDA compiler for the tests that build device code on a machine without a GPU: found on
 * {@code PATH}, else at {@code /usr/local/cuda/bin/nvcc} or {@code /usr/local/bin/nvcc}. Tests
 * that need it call {@link #require()}, which aborts them (skipped, with the reason) where there
 * is none. Every command runs with a deadline; its output goes to a file, so a chatty compiler
 * cannot block on a full pipe.
 */
final class Nvcc {

    /** Longest compile or run: nvcc on a busy two-core machine takes tens of seconds for the biggest file. */
    static final Duration TIMEOUT = Duration.ofMinutes(4);

    private static final List<Path> FALLBACKS = List.of(Path.of("/usr/local/cuda/bin/nvcc"), Path.of("/usr/local/bin/nvcc"));

    /** What a command did: its exit status and its output (stdout and stderr together). */
    record Result(int exitCode, String output) {
        boolean ok() {
            return exitCode == 0;
        }
    }

    private Nvcc() {
    }

    /** nvcc's path, or empty when there is none on PATH nor in the usual CUDA directories. */
    static Optional<Path> find() {
        String path = System.getenv("PATH");
        List<Path> candidates = new ArrayList<>();
        if (path != null) {
            for (String dir : path.split(java.io.File.pathSeparator)) {
                if (!dir.isEmpty()) {
                    candidates.add(Path.of(dir, "nvcc"));
                }
            }
        }
        candidates.addAll(FALLBACKS);
        return candidates.stream().filter(p -> Files.isRegularFile(p) && Files.isExecutable(p)).findFirst();
    }

    /** nvcc's path; aborts the calling test, naming where it looked, when there is none. */
    static Path require() {
        Optional<Path> nvcc = find();
        if (nvcc.isEmpty()) {
            Assumptions.abort("nvcc not found: not on PATH (" + System.getenv("PATH") + ") nor at " + FALLBACKS
                    + "; the device headers are compiled only where the CUDA toolkit is installed");
        }
        return nvcc.get();
    }

    /**
     * Runs {@code command} in {@code dir} and returns its exit status and output.
     *
     * @throws IOException when it cannot start, or does not end within {@link #TIMEOUT} (it is then killed)
     */
    static Result run(List<String> command, Path dir) throws IOException, InterruptedException {
        Path log = Files.createTempFile(dir, "command", ".log");
        Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        try {
            if (!process.waitFor(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IOException(command + " did not end within " + TIMEOUT + "; output so far:\n"
                        + Files.readString(log, StandardCharsets.UTF_8));
            }
        } finally {
            process.destroyForcibly();
        }
        return new Result(process.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    }
}
