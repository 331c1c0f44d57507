package org.jmscclpp.samples;

import java.io.IOException;
import java.io.InputStream;
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
 * nvcc for the samples' tests that compile device code without a GPU: on {@code PATH}, else at
 * {@code /usr/local/cuda/bin/nvcc} or {@code /usr/local/bin/nvcc}; tests {@link #nvcc()} aborts
 * (skipped, with the reason) where there is none. Commands run with a deadline and their output
 * goes to a file. Public for the NCCL binding's layout test ({@code org.jmscclpp.bench.nccl}), which builds
 * and runs a C program with {@link #run}.
 */
public final class CudaTools {

    static final Duration TIMEOUT = Duration.ofMinutes(4);
    private static final List<Path> FALLBACKS = List.of(Path.of("/usr/local/cuda/bin/nvcc"),
            Path.of("/usr/local/bin/nvcc"));

    public record Result(int exitCode, String output) {
        public boolean ok() {
            return exitCode == 0;
        }
    }

    private CudaTools() {
    }

    static Path nvcc() {
        List<Path> candidates = new ArrayList<>();
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(java.io.File.pathSeparator)) {
                if (!dir.isEmpty()) {
                    candidates.add(Path.of(dir, "nvcc"));
                }
            }
        }
        candidates.addAll(FALLBACKS);
        Optional<Path> found = candidates.stream().filter(p -> Files.isRegularFile(p) && Files.isExecutable(p))
                .findFirst();
        if (found.isEmpty()) {
            Assumptions.abort("nvcc not found on PATH nor at " + FALLBACKS + ": device code is compiled only where "
                    + "the CUDA toolkit is installed");
        }
        return found.get();
    }

    /** Runs {@code command} in {@code dir}, stdin from {@code input} (or nothing); IOException past {@link #TIMEOUT}. */
    public static Result run(List<String> command, Path dir, @org.jspecify.annotations.Nullable Path input) throws IOException, InterruptedException {
        Path log = Files.createTempFile(dir, "command", ".log");
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile());
        if (input != null) {
            builder.redirectInput(input.toFile());
        }
        Process process = builder.start();
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

    /** Copies the class-path resource {@code resource} to {@code dir/fileName}. */
    static Path copyResource(String resource, Path dir, String fileName) throws IOException {
        try (InputStream in = CudaTools.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IOException("no resource " + resource);
            }
            Path target = dir.resolve(fileName);
            Files.copy(in, target);
            return target;
        }
    }
}
