package org.jmscclpp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jmscclpp.samples.Version;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs {@code bin/jmscclpp} as a user would; needs the packaged jar, hence an integration test. */
class BinScriptIT {

    private static final Path SAMPLES = Path.of("").toAbsolutePath();
    private static final Path ROOT = SAMPLES.getParent();
    private static final Path SCRIPT = ROOT.resolve("bin/jmscclpp");

    private record Result(int code, String out, String err) {
    }

    @BeforeAll
    static void needsBash() {
        boolean bash = Stream.of("/bin/bash", "/usr/bin/bash").anyMatch(p -> Files.isExecutable(Path.of(p)));
        if (!bash) {
            System.out.println("BinScriptIT skipped: bash is not installed");
        }
        Assumptions.assumeTrue(bash, "bash is not installed");
        assertTrue(Files.isExecutable(SCRIPT), SCRIPT + " must be executable");
    }

    private static Result run(Map<String, String> env, String... args) throws Exception {
        return runIn(SAMPLES, env, args);
    }

    private static Result runIn(Path directory, Map<String, String> env, String... args) throws Exception {
        return runScript(SCRIPT, directory, env, args);
    }

    private static Result runScript(Path script, Path directory, Map<String, String> env, String... args)
            throws Exception {
        List<String> command = new ArrayList<>(List.of(script.toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).directory(directory.toFile());
        // the jar was packaged moments ago by this build; never start a nested build from a test
        pb.environment().put("JMSCCLPP_NO_BUILD", "1");
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()));
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("bin/jmscclpp " + String.join(" ", args) + " still running after 60 s");
        }
        return new Result(p.exitValue(), out.get(10, TimeUnit.SECONDS), err.get(10, TimeUnit.SECONDS));
    }

    private static String read(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "<unreadable: " + e + ">";
        }
    }

    /** A relative path the user gives is the user's: the script runs Java in the caller's directory, not the checkout. */
    @Test
    void relativePathsAreTheCallersDirectorys(@TempDir Path dir) throws Exception {
        Result r = runIn(dir, Map.of(), "bench", "coll", "allreduce", "--ranks", "2", "-b", "1K", "-e", "1K", "-n", "1",
                "-w", "1", "--json", "out.json");
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(Files.size(dir.resolve("out.json")) > 0, r.err());
        assertTrue(Files.notExists(ROOT.resolve("out.json")), "written into the checkout instead");
    }

    @Test
    void helpPrintsUsage() throws Exception {
        Result r = run(Map.of(), "help");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().startsWith("Usage: jmscclpp"), r.out());
    }

    @Test
    void versionPrintsTheProjectVersion() throws Exception {
        Result r = run(Map.of(), "--version");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().startsWith("jmscclpp " + Version.get() + "\n"), r.out());
    }

    @Test
    void unknownCommandIsAUsageError() throws Exception {
        assertEquals(2, run(Map.of(), "no-such-command").code());
    }

    @Test
    void runStartsPrefixedRanks() throws Exception {
        Result r = run(Map.of(), "run", "-n", "2", "exit-code", "0", "from the script");
        assertEquals(0, r.code(), r.err());
        List<String> lines = r.out().lines().sorted().toList();
        assertEquals(List.of("[rank 0] rank 0 of 2: from the script", "[rank 1] rank 1 of 2: from the script"), lines);
    }

    /**
     * The ranks that mpirun, srun or torchrun start on a host all find a stale jar at once: one builds, the others
     * wait for it and then run the jar it built (two builds of one checkout delete each other's jars). The checkout
     * here is a copy of the script beside a {@code mvnw} that packages this build's jar and fails when another build
     * of the checkout runs beside it, watching for one for 3 s (about as long as packaging the jars takes).
     */
    @Test
    void ranksStartedTogetherBuildOnceAndRunWhatItBuilt(@TempDir Path checkout) throws Exception {
        Files.createDirectories(checkout.resolve("bin"));
        Files.copy(SCRIPT, checkout.resolve("bin/jmscclpp"), StandardCopyOption.COPY_ATTRIBUTES);
        Files.createDirectories(checkout.resolve("samples/src/main"));
        Files.writeString(checkout.resolve("pom.xml"), "<project/>\n");
        Files.writeString(checkout.resolve("samples/pom.xml"), "<project/>\n");
        Path mvnw = checkout.resolve("mvnw");
        Files.writeString(mvnw, """
                #!/usr/bin/env bash
                set -eu
                echo build >> builds.log
                mkdir building 2>/dev/null || { echo "mvnw: another build of this checkout is running" >&2; exit 1; }
                for _ in $(seq 30); do
                  [[ $(wc -l < builds.log) -gt 1 ]] && { echo "mvnw: a second build started" >&2; exit 1; }
                  sleep 0.1
                done
                mkdir -p samples/target
                cp "$REAL_JAR" samples/target/jmscclpp-samples.jar
                ln -sfn "$REAL_LIB" samples/target/lib
                rmdir building
                """);
        assertTrue(mvnw.toFile().setExecutable(true));
        Map<String, String> env = Map.of("JMSCCLPP_NO_BUILD", "",
                "REAL_JAR", SAMPLES.resolve("target/jmscclpp-samples.jar").toString(),
                "REAL_LIB", SAMPLES.resolve("target/lib").toString());
        Path script = checkout.resolve("bin/jmscclpp");
        int building = 0;
        // a thread each: the three start together, as a launcher's ranks do
        try (ExecutorService launcher = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Result>> ranks = new ArrayList<>();
            for (int rank = 0; rank < 3; rank++) {
                ranks.add(launcher.submit(() -> runScript(script, SAMPLES, env, "-V")));
            }
            for (Future<Result> rank : ranks) {
                Result r = rank.get(120, TimeUnit.SECONDS);
                assertEquals(0, r.code(), r.err());
                assertTrue(r.out().startsWith("jmscclpp " + Version.get() + "\n"), r.out());
                building += r.err().contains("jmscclpp: building (samples/target/jmscclpp-samples.jar is missing)")
                        ? 1 : 0;
            }
        }
        assertEquals(1, building, "one rank builds");
        assertEquals(List.of("build"), Files.readAllLines(checkout.resolve("builds.log")));
    }

    @Test
    void bundleLayoutRunsWithoutACheckout(@TempDir Path bundle) throws Exception {
        Path lib = Files.createDirectories(bundle.resolve("lib"));
        Files.copy(SAMPLES.resolve("target/jmscclpp-samples.jar"), lib.resolve("jmscclpp-samples.jar"));
        try (Stream<Path> jars = Files.list(SAMPLES.resolve("target/lib"))) {
            for (Path jar : jars.toList()) {
                Files.copy(jar, lib.resolve(jar.getFileName()));
            }
        }
        Path bin = Files.createDirectories(bundle.resolve("runtime/bin"));
        Files.createSymbolicLink(bin.resolve("java"), Path.of(System.getProperty("java.home"), "bin", "java"));
        Result r = run(Map.of("JMSCCLPP_HOME", bundle.toString(), "JAVA_HOME", "/nonexistent"),
                "run", "-n", "1", "exit-code", "0", "bundled");
        assertEquals(0, r.code(), r.err());
        assertEquals("[rank 0] rank 0 of 1: bundled", r.out().strip());
        Result version = run(Map.of("JMSCCLPP_HOME", bundle.toString(), "JAVA_HOME", "/nonexistent"), "-V");
        assertEquals(0, version.code(), version.err());
        assertTrue(version.out().startsWith("jmscclpp " + Version.get() + "\n"), version.out());
    }
}
