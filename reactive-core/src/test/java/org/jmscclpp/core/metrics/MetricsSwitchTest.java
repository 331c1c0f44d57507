package org.jmscclpp.core.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The metrics in JVMs unlike the test's: with {@code -Djmscclpp.metrics=false}, and on a runtime
 * without {@code jdk.jfr} (as the bundle's jlink image): a whole {@link MetricsJob} in a child JVM.
 */
class MetricsSwitchTest {

    private static final List<String> KEYS = List.of("enabled", "wrapped", "connections", "proxies", "collectives",
            "jfr", "bytes", "flushes");

    @TempDir
    Path dir;

    /** With metrics off, a job runs with nothing measured and its connections unwrapped. */
    @Test
    void withMetricsOffAJobRunsUnmeasured() throws Exception {
        assertEquals(List.of("enabled false", "wrapped false", "connections 0", "proxies 0", "collectives 0",
                "jfr true", "bytes 0", "flushes 0"), child("-Djmscclpp.metrics=false"));
    }

    /** Without Flight Recorder in the runtime the counters count all the same, and nothing fails. */
    @Test
    void withoutJdkJfrTheCountersStillCount() throws Exception {
        int bytes = MetricsJob.WRITES * MetricsJob.WRITE_BYTES + MetricsJob.PUTS * MetricsJob.PUT_BYTES;
        List<String> seen = child("--limit-modules=java.base,java.logging,java.management,java.xml,"
                + "jdk.unsupported,jdk.zipfs");
        assertEquals(List.of("enabled true", "wrapped true", "jfr false", "bytes " + bytes, "flushes 2"),
                seen.stream().filter(l -> !l.startsWith("connections") && !l.startsWith("proxies")
                        && !l.startsWith("collectives")).toList(), String.join("\n", seen));
    }

    /** The key-value lines of a child JVM with {@code flags} that ran the job. */
    private List<String> child(String... flags) throws Exception {
        Path log = Files.createTempFile(dir, "child", ".log");
        Path shm = Files.createTempDirectory(dir, "shm");
        List<String> jvm = new ArrayList<>(List.of("--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC"));
        jvm.addAll(List.of(flags));
        List<String> command = ChildJvm.command(jvm, MetricsChild.class, List.of(shm.toString()));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            boolean exited = p.waitFor(60, TimeUnit.SECONDS);
            String out = Files.readString(log);
            assertTrue(exited, "the child did not exit within 60 s: " + out);
            assertEquals(0, p.exitValue(), out);
            return out.lines().filter(l -> KEYS.contains(l.split(" ")[0])).toList();
        } finally {
            p.destroyForcibly();
        }
    }
}
