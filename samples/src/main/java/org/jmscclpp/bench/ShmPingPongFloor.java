package org.jmscclpp.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The C floor of {@code jmscclpp bench proxy}: compiles {@code shm_pingpong.c} with the first C
 * compiler on the PATH ({@code cc}, {@code gcc}, {@code clang}) into a temporary directory, once
 * per JVM, and runs it: two processes (fork) ping-ponging N ints through one shared mapping, a
 * memcpy and a 64-bit flag stored with release and spun on with acquire per direction. The
 * median round trip per size is this machine's floor for the PortChannel ping-pong.
 *
 * <p>The source comes from the classpath (the samples jar carries {@code src/main/c}) or, failing
 * that, from the source tree.
 */
final class ShmPingPongFloor {

    static final String SOURCE_NAME = "shm_pingpong.c";
    static final List<String> COMPILERS = List.of("cc", "gcc", "clang");
    static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);

    private static final Duration COMPILE_TIMEOUT = Duration.ofSeconds(60);
    private static final int TAIL_LINES = 8;
    private static final Pattern FLOOR_LINE = Pattern.compile(
            "FLOOR ints=(\\d+) iters=(\\d+) warmup=(\\d+) median_us=(\\S+) mean_us=(\\S+)");

    private ShmPingPongFloor() {
    }

    /** One size of the ping-pong: ints per direction, timed round trips, untimed ones before. */
    record Size(int ints, int iters, int warmup) {
        String arg() {
            return ints + ":" + iters + ":" + warmup;
        }
    }

    /**
     * What a run gave: the median round trip in µs by ints, or why there is none.
     *
     * @param medianUs by ints, in the order of the sizes asked for; empty when {@code problem} is set
     * @param problem  why the floor was not measured (no compiler, a failed compile or run), or null
     */
    record Outcome(Map<Integer, Double> medianUs, @Nullable String problem) {
    }

    /**
     * Compiles the program (first call only) and runs it with {@code sizes}. Blocks the calling
     * thread until it exits, at most {@link #RUN_TIMEOUT} (plus the compilation); on timeout both
     * of its processes are killed. Never throws for a missing compiler or a failed run: the
     * outcome says why.
     */
    static Outcome measure(List<Size> sizes) {
        if (sizes.isEmpty()) {
            throw new IllegalArgumentException("no size to measure");
        }
        ExternalProgram.Compiled compiled = CompiledHolder.COMPILED;
        Path binary = compiled.binary();
        if (binary == null) {
            return new Outcome(Map.of(), compiled.error());
        }
        List<String> command = new ArrayList<>();
        command.add(binary.toString());
        sizes.forEach(s -> command.add(s.arg()));
        ExternalProgram.Run run;
        try {
            run = ExternalProgram.run(command, RUN_TIMEOUT, ExternalProgram.Stop.KILL_TREE, line -> true, TAIL_LINES,
                    env -> { });
        } catch (IOException e) {
            return new Outcome(Map.of(), "cannot run " + binary + ": " + e.getMessage());
        }
        if (run.timedOut()) {
            return new Outcome(Map.of(), "did not finish within " + RUN_TIMEOUT.toSeconds() + " s and was killed; "
                    + "output tail: " + run.tail());
        }
        if (run.exitCode() != 0) {
            return new Outcome(Map.of(), "exited with " + run.exitCode() + "; output tail: " + run.tail());
        }
        try {
            return new Outcome(parse(run.lines(), sizes), null);
        } catch (IllegalStateException e) {
            return new Outcome(Map.of(), e.getMessage() + "; output tail: " + run.tail());
        }
    }

    /**
     * The median µs of each size from the program's {@code FLOOR} lines, other lines ignored.
     *
     * @throws IllegalStateException when a line is malformed, repeats a size, is for a size or an
     *                               iteration count not asked for, or a size has no line
     */
    static Map<Integer, Double> parse(List<String> lines, List<Size> sizes) {
        Map<Integer, Double> found = new LinkedHashMap<>();
        for (String line : lines) {
            Matcher m = FLOOR_LINE.matcher(line.strip());
            if (!m.matches()) {
                continue;
            }
            int ints = Integer.parseInt(m.group(1));
            Size asked = sizes.stream().filter(s -> s.ints() == ints).findFirst()
                    .orElseThrow(() -> new IllegalStateException("a line for " + ints + " ints, not asked for: " + line));
            if (asked.iters() != Integer.parseInt(m.group(2)) || asked.warmup() != Integer.parseInt(m.group(3))) {
                throw new IllegalStateException("asked for " + asked.arg() + ", the line says: " + line);
            }
            double median;
            try {
                median = Double.parseDouble(m.group(4));
            } catch (NumberFormatException e) {
                throw new IllegalStateException("unreadable median in: " + line, e);
            }
            if (found.put(ints, median) != null) {
                throw new IllegalStateException("two lines for " + ints + " ints");
            }
        }
        Map<Integer, Double> ordered = new LinkedHashMap<>();
        for (Size s : sizes) {
            Double v = found.get(s.ints());
            if (v == null) {
                throw new IllegalStateException("no line for " + s.ints() + " ints");
            }
            ordered.put(s.ints(), v);
        }
        return ordered;
    }

    /** The first C compiler on the PATH, or empty. */
    static Optional<Path> compiler() {
        return COMPILERS.stream().map(ExternalProgram::findOnPath).flatMap(Optional::stream).findFirst();
    }

    /** The compiled program, or why there is none; made on first use, once per JVM. */
    private static final class CompiledHolder {
        static final ExternalProgram.Compiled COMPILED = compile();

        private CompiledHolder() {
        }
    }

    private static ExternalProgram.Compiled compile() {
        Optional<Path> cc = compiler();
        if (cc.isEmpty()) {
            return new ExternalProgram.Compiled(null, "no C compiler (" + String.join(", ", COMPILERS)
                    + ") on the PATH");
        }
        return ExternalProgram.compile(cc.get().toString(), SOURCE_NAME, "shm_pingpong", "jmscclpp-floor-",
                COMPILE_TIMEOUT);
    }
}
