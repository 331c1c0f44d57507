package org.jmscclpp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.apiguardian.api.API;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.AssertionFailedError;

/**
 * Runs {@code bin/bundle} without building (this build packaged the jars moments ago; bundling takes about
 * 6 s here, most of it jlink) into a temporary folder, then uses the bundle as a GPU host would: no
 * JAVA_HOME, no JDK on the PATH, {@code bin/jmscclpp} and {@code bin/gpu-tests}.
 */
class BundleIT {

    private static final Path SAMPLES = Path.of("").toAbsolutePath();
    private static final Path ROOT = SAMPLES.getParent();
    private static final long LIMIT_BYTES = 60L * 1024 * 1024;
    private static final List<String> MODULES =
            List.of("java.base", "java.logging", "java.management", "java.xml", "jdk.unsupported", "jdk.zipfs");
    private static final String DEFAULT_JNA_PATH = "/usr/local/nvidia/lib64:/usr/local/cuda/lib64:"
            + "/usr/local/cuda/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu";

    @TempDir
    static Path temp;

    private static Path bundle = Path.of("unset");
    private static String bundleOutput = "";

    private record Result(int code, String out, String err) {
        String both() {
            return out + err;
        }
    }

    @BeforeAll
    static void bundle() throws Exception {
        boolean bash = Stream.of("/bin/bash", "/usr/bin/bash").anyMatch(p -> Files.isExecutable(Path.of(p)));
        Assumptions.assumeTrue(bash, "bash is not installed");
        bundle = temp.resolve("jmscclpp");
        Result r = run(ROOT.resolve("bin/bundle"), bundleEnv(), 180, "--output", bundle.toString());
        assertEquals(0, r.code(), r.both());
        bundleOutput = r.out();
    }

    private static Map<String, @Nullable String> bundleEnv() {
        Map<String, @Nullable String> env = new HashMap<>();
        env.put("JMSCCLPP_NO_BUILD", "1");
        env.put("JAVA_HOME", System.getProperty("java.home"));
        return env;
    }

    /** What a GPU host offers: no JAVA_HOME and only the system folders on the PATH. */
    private static Map<String, @Nullable String> hostEnv() {
        Map<String, @Nullable String> env = new HashMap<>();
        env.put("JAVA_HOME", null);
        env.put("JNA_LIBRARY_PATH", null);
        env.put("JMSCCLPP_JAVA_OPTS", null);
        env.put("JMSCCLPP_HOME", null);
        env.put("PATH", "/usr/bin:/bin");
        return env;
    }

    /** Runs a command; a null value in env removes that variable. */
    private static Result run(Path command, Map<String, @Nullable String> env, int timeoutSeconds, String... args)
            throws Exception {
        List<String> line = new ArrayList<>(List.of(command.toString()));
        line.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(line).directory(temp.toFile());
        env.forEach((k, v) -> {
            if (v == null) {
                pb.environment().remove(k);
            } else {
                pb.environment().put(k, v);
            }
        });
        Process p = pb.start();
        p.getOutputStream().close();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()));
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            throw new AssertionError(line + " still running after " + timeoutSeconds + " s");
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

    /** Apparent size of every file and folder, as {@code du -sb} counts it. */
    private static long size(Path folder) throws IOException {
        long total = 0;
        try (Stream<Path> all = Files.walk(folder)) {
            for (Path p : all.toList()) {
                total += Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).size();
            }
        }
        return total;
    }

    @Test
    void bundleHoldsAJava25RuntimeWithOnlyItsModulesTheJarsAndTheScriptsWithinTheLimit() throws Exception {
        assertTrue(size(bundle) <= LIMIT_BYTES, "bundle holds " + size(bundle) + " bytes");
        String release = Files.readString(bundle.resolve("runtime/release"));
        assertTrue(release.contains("JAVA_VERSION=\"25"), release);
        assertTrue(release.contains("MODULES=\"" + String.join(" ", MODULES) + "\""), release);
        assertTrue(bundleOutput.contains("runtime: Java 25"), bundleOutput);
        assertTrue(bundleOutput.contains("modules: " + String.join(" ", MODULES)), bundleOutput);
        assertTrue(bundleOutput.matches("(?s).*size: \\d+ bytes \\(\\d+\\.\\d MiB of 60\\.0 MiB\\).*"), bundleOutput);

        Result version = run(bundle.resolve("runtime/bin/java"), hostEnv(), 30, "-version");
        assertEquals(0, version.code(), version.both());
        assertTrue(version.err().contains("version \"25"), version.err());

        for (String jar : List.of("lib/jmscclpp-samples.jar", "test-lib/junit-platform-console-standalone-1.14.4.jar")) {
            assertTrue(Files.isRegularFile(bundle.resolve(jar)), jar);
        }
        for (String prefix : List.of("jmscclpp-core-", "jmscclpp-bootstrap-netty-", "jmscclpp-native-bridge-", "reactor-core-",
                "reactive-streams-", "netty-transport-native-epoll-", "jna-", "jspecify-")) {
            assertEquals(1, count(bundle.resolve("lib"), prefix), "lib/" + prefix + "*.jar");
        }
        for (String prefix : List.of("jmscclpp-core-", "jmscclpp-bootstrap-netty-", "jmscclpp-native-bridge-", "reactor-test-",
                "jmscclpp-samples-tests")) {
            assertEquals(1, count(bundle.resolve("test-lib"), prefix), "test-lib/" + prefix + "*.jar");
        }
        // JUnit itself comes inside the console launcher, once
        assertEquals(0, count(bundle.resolve("test-lib"), "junit-jupiter"), "test-lib/junit-jupiter*");
        for (String script : List.of("bin/jmscclpp", "bin/gpu-tests")) {
            assertTrue(Files.isExecutable(bundle.resolve(script)), script);
            assertEquals(Files.readString(ROOT.resolve(script)), Files.readString(bundle.resolve(script)), script);
        }
    }

    private static long count(Path folder, String prefix) throws IOException {
        try (Stream<Path> jars = Files.list(folder)) {
            return jars.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(prefix) && n.endsWith(".jar"))
                    .count();
        }
    }

    @Test
    void allgatherRunsOnTheBundledRuntimeWithoutAJdk() throws Exception {
        Map<String, @Nullable String> env = hostEnv();
        // every JVM started (the launcher and each rank) prints its java.home on stderr
        env.put("JDK_JAVA_OPTIONS", "-XshowSettings:properties");
        env.put("JMSCCLPP_SHM_DIR", Files.createDirectories(temp.resolve("shm")).toString());
        Result r = run(bundle.resolve("bin/jmscclpp"), env, 120, "run", "-n", "2", "allgather", "--bytes", "64K",
                "--iters", "3");
        assertEquals(0, r.code(), r.both());
        assertTrue(r.out().contains(
                "[rank 0] allgather: every element checked on every rank: OK"), r.both());
        List<String> homes = new ArrayList<>();
        Matcher m = Pattern.compile("java\\.home = (\\S+)").matcher(r.both());
        while (m.find()) {
            homes.add(m.group(1));
        }
        String runtime = bundle.resolve("runtime").toString();
        assertEquals(List.of(runtime, runtime, runtime), homes, r.both());
        Result version = run(bundle.resolve("bin/jmscclpp"), hostEnv(), 60, "--version");
        assertEquals(0, version.code(), version.both());
        assertTrue(version.out().startsWith("jmscclpp " + Version.get() + "\n"), version.both());
    }

    @Test
    void gpuTestsOfThisBuildFailNothingWhereThereIsNoGpu() throws Exception {
        Result r = run(bundle.resolve("bin/gpu-tests"), hostEnv(), 300);
        assertEquals(0, r.code(), r.both());
        assertTrue(r.out().contains("tests failed"), r.both());
        assertTrue(r.out().matches("(?s).*\\[\\s+0 tests failed\\s+].*"), r.both());
        // a test-jar that JUnit cannot open is a warning and no tests, not a failure: catch it here
        assertFalse(r.both().contains("Error scanning"), r.both());
        // both test-jars are scanned: native-bridge's and the samples' (the NCCL baseline's GPU tests)
        assertTrue(r.out().contains("CudaBackendGpuTest") && r.out().contains("NcclGpuTest"), r.out());
    }

    @Test
    void gpuTestsRunTheGpuTaggedTestsOfTheTestJarAndExitWithTheOutcome() throws Exception {
        Path home = fakeHomeWithTests();
        Map<String, @Nullable String> env = hostEnv();
        env.put("JMSCCLPP_HOME", home.toString());
        Path gpuTests = bundle.resolve("bin/gpu-tests");

        Result all = run(gpuTests, env, 120);
        assertEquals(1, all.code(), all.both());
        assertTrue(all.out().matches("(?s).*\\[\\s+2 tests found\\s+].*"), all.both());
        assertTrue(all.out().matches("(?s).*\\[\\s+1 tests successful\\s+].*"), all.both());
        assertTrue(all.out().matches("(?s).*\\[\\s+1 tests failed\\s+].*"), all.both());
        assertTrue(all.out().contains("jna.library.path=" + DEFAULT_JNA_PATH + "\n"), all.both());
        assertFalse(all.both().contains("untagged test ran"), all.both());

        Path reports = temp.resolve("reports");
        Result passing = run(gpuTests, env, 120, "--include-classname", ".*PassingGpuTest", "--reports-dir",
                reports.toString());
        assertEquals(0, passing.code(), passing.both());
        assertTrue(passing.out().matches("(?s).*\\[\\s+1 tests successful\\s+].*"), passing.both());
        assertTrue(passing.out().matches("(?s).*\\[\\s+0 tests failed\\s+].*"), passing.both());
        assertTrue(Files.readString(reports.resolve("TEST-junit-jupiter.xml")).contains("PassingGpuTest"));

        env.put("JNA_LIBRARY_PATH", "/opt/cuda-a");
        Result selected = run(gpuTests, env, 120, "--select-class", "org.jmscclpp.cuda.PassingGpuTest");
        assertEquals(0, selected.code(), selected.both());
        assertTrue(selected.out().matches("(?s).*\\[\\s+1 tests found\\s+].*"), selected.both());
        assertTrue(selected.out().contains("jna.library.path=/opt/cuda-a\n"), selected.both());

        env.put("JMSCCLPP_JAVA_OPTS", "-Xmx256m -Djna.library.path=/opt/cuda-b");
        Result options = run(gpuTests, env, 120, "--include-classname", ".*PassingGpuTest");
        assertEquals(0, options.code(), options.both());
        assertTrue(options.out().contains("jna.library.path=/opt/cuda-b\n"), options.both());
    }

    /**
     * A bundle home that shares the runtime and lib/ of the real one, with a native-bridge test-jar of three
     * classes compiled here: a passing gpu test, a failing gpu test and a failing untagged test.
     */
    private static Path fakeHomeWithTests() throws Exception {
        Path home = Files.createDirectories(temp.resolve("fake-home"));
        Files.createSymbolicLink(home.resolve("runtime"), bundle.resolve("runtime"));
        Files.createSymbolicLink(home.resolve("lib"), bundle.resolve("lib"));
        Path testLib = Files.createDirectories(home.resolve("test-lib"));
        Files.copy(bundle.resolve("test-lib/junit-platform-console-standalone-1.14.4.jar"),
                testLib.resolve("junit-platform-console-standalone-1.14.4.jar"));

        Path src = Files.createDirectories(temp.resolve("fake-src/org/jmscclpp/cuda"));
        String header = "package org.jmscclpp.cuda;\nimport org.junit.jupiter.api.*;\n";
        Files.writeString(src.resolve("PassingGpuTest.java"), header + """
                @Tag("gpu") class PassingGpuTest {
                    @Test void passes() { System.out.println("jna.library.path=" + System.getProperty("jna.library.path")); }
                }
                """);
        Files.writeString(src.resolve("FailingGpuTest.java"), header + """
                @Tag("gpu") class FailingGpuTest {
                    @Test void fails() { Assertions.fail("this gpu test fails on purpose"); }
                }
                """);
        Files.writeString(src.resolve("UntaggedTest.java"), header + """
                class UntaggedTest {
                    @Test void untagged() { Assertions.fail("untagged test ran"); }
                }
                """);
        Path classes = Files.createDirectories(temp.resolve("fake-classes"));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        Assumptions.assumeTrue(javac != null, "this JVM has no compiler");
        // the test JVM's class path may be one manifest-only jar: name the jars the sources need
        List<String> jars = new ArrayList<>();
        for (Class<?> c : List.of(Test.class, AssertionFailedError.class, API.class)) {
            jars.add(Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
        }
        String classPath = String.join(File.pathSeparator, jars);
        List<String> args = new ArrayList<>(List.of("-d", classes.toString(), "-cp", classPath));
        try (Stream<Path> files = Files.list(src)) {
            files.forEach(f -> args.add(f.toString()));
        }
        assertEquals(0, javac.run(null, null, null, args.toArray(String[]::new)), "compiling the fake tests");

        Path jar = testLib.resolve("jmscclpp-native-bridge-0.1.0-SNAPSHOT-tests.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
                Stream<Path> files = Files.walk(classes)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                out.putNextEntry(new JarEntry(classes.relativize(f).toString()));
                copy(f, out);
                out.closeEntry();
            }
        }
        return home;
    }

    private static void copy(Path file, OutputStream out) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            in.transferTo(out);
        }
    }

    @Test
    void bundleOverTheLimitFailsSayingSoAndLeavesNoBundle() throws Exception {
        Path out = temp.resolve("too-big");
        Map<String, @Nullable String> env = bundleEnv();
        env.put("JMSCCLPP_BUNDLE_MAX_MIB", "10");
        Result r = run(ROOT.resolve("bin/bundle"), env, 180, "--output", out.toString());
        assertEquals(1, r.code(), r.both());
        assertTrue(r.err().contains("over the limit of 10485760 (10.0 MiB)"), r.err());
        assertFalse(Files.exists(out), "no bundle left at " + out);
        try (Stream<Path> left = Files.list(temp)) {
            assertEquals(List.of(), left.filter(p -> p.getFileName().toString().startsWith("too-big")).toList());
        }
    }
}
