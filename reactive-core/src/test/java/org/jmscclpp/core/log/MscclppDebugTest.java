package org.jmscclpp.core.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.MessageFormat;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import org.jmscclpp.testkit.ChildJvm;
import org.jmscclpp.testkit.RecordingHandler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code MSCCLPP_DEBUG} on a real two-rank job ({@link LoggedJob}) in a child JVM: which lines reach its
 * stderr, in which layout; and the records reaching an application's own logging in this JVM and in a
 * child with its own {@link System.LoggerFinder}.
 */
class MscclppDebugTest {

    private static final Duration CHILD_DEADLINE = Duration.ofSeconds(90);
    /** {@code host:pid:tid [rank] JMSCCLPP LEVEL }. */
    private static final String PREFIX = "^[^\\s:]+:%d:\\d+ \\[%s\\] JMSCCLPP %s ";

    @TempDir
    Path dir;

    private String runJob(Map<String, String> env) throws IOException {
        return runJob(env, List.of()).output;
    }

    private record Child(String output, long pid) {
    }

    private Child runJob(Map<String, String> env, List<Path> extraClassPath) throws IOException {
        Map<String, String> all = new HashMap<>(Map.of(DebugSettings.DEBUG_ENV, "", DebugSettings.SUBSYS_ENV, "",
                DebugSettings.FILE_ENV, ""));
        all.putAll(env);
        Path shm = Files.createDirectories(dir.resolve("shm"));
        try (ChildJvm child = ChildJvm.start(dir.resolve("child.log"), all, extraClassPath, LoggedJob.class,
                shm.toString())) {
            assertEquals(0, child.waitFor(CHILD_DEADLINE), child::output);
            String out = child.output();
            assertTrue(out.contains(LoggedJob.DONE), out);
            return new Child(out, child.process().pid());
        }
    }

    private static boolean hasLine(String output, long pid, String rank, String level, String message) {
        Pattern p = Pattern.compile(String.format(PREFIX, pid, Pattern.quote(rank), level) + message,
                Pattern.MULTILINE);
        return p.matcher(output).find();
    }

    @Test
    void infoPrintsOneMscclppLikeLineForEachSetupPhaseOnStderr() throws IOException {
        Child c = runJob(Map.of("MSCCLPP_DEBUG", "INFO", "MSCCLPP_DEBUG_SUBSYS", "ALL"), List.of());
        String out = c.output;
        assertTrue(out.lines().anyMatch(l -> l.startsWith("jmscclpp version ")), out);
        assertTrue(hasLine(out, c.pid, "-", "INFO", "using the host backend"), out);
        for (String rank : List.of("0", "1")) {
            assertTrue(hasLine(out, c.pid, rank, "INFO", "mesh connected: 1 peers over \\[HOST_IPC\\]$"),
                    () -> "rank " + rank + ":\n" + out);
            assertTrue(hasLine(out, c.pid, rank, "INFO", "collective comm created in [0-9.]+ ms: 2 ranks, host "
                    + "backend, algorithms \\{all_reduce=\\["), () -> "rank " + rank + ":\n" + out);
        }
        assertTrue(hasLine(out, c.pid, "-", "INFO", "proxy jmscclpp-proxy-\\d+ started: VIRTUAL_THREAD poller"), out);
        assertTrue(hasLine(out, c.pid, "-", "INFO", "proxy jmscclpp-proxy-\\d+ stopped"), out);
        assertFalse(out.contains("JMSCCLPP DEBUG") || out.contains("JMSCCLPP TRACE"), out);
        // the JDK's console handler does not print them a second time in its own layout
        assertFalse(out.lines().anyMatch(l -> l.startsWith("INFO: ")), out);
    }

    @Test
    void withoutSubsystemsInfoShowsInitLinesOnlyAsMscclppDoes() throws IOException {
        Child c = runJob(Map.of("MSCCLPP_DEBUG", "info"), List.of());
        assertTrue(hasLine(c.output, c.pid, "0", "INFO", "mesh connected"), c.output);
        assertFalse(c.output.contains("collective comm created"), c.output);
    }

    @Test
    void unsetKeepsTheLibraryQuietAtInfo() throws IOException {
        String out = runJob(Map.of());
        assertEquals(List.of(LoggedJob.DONE), out.lines().toList(), out);
    }

    @Test
    void warnShowsWarningsAndNoInfoLines() throws IOException {
        Path missing = dir.resolve("no-such-dir").resolve("debug.log");
        Child c = runJob(Map.of("MSCCLPP_DEBUG", "WARN", "MSCCLPP_DEBUG_SUBSYS", "ALL", "MSCCLPP_DEBUG_FILE",
                missing.toString()), List.of());
        assertTrue(hasLine(c.output, c.pid, "-", "WARN", "MSCCLPP_DEBUG_FILE=" + Pattern.quote(missing.toString())
                + " cannot be written"), c.output);
        assertFalse(c.output.contains("JMSCCLPP INFO"), c.output);
        assertFalse(c.output.contains("mesh connected"), c.output);
    }

    @Test
    void traceAddsTheDetailWithMillisecondsSinceStart() throws IOException {
        Child c = runJob(Map.of("MSCCLPP_DEBUG", "TRACE", "MSCCLPP_DEBUG_SUBSYS", "INIT"), List.of());
        assertTrue(hasLine(c.output, c.pid, "0", "DEBUG", "[0-9]+\\.[0-9]{3} connected to rank 1 \\(tag 0\\) over "
                + "HOST_IPC"), c.output);
        assertTrue(hasLine(c.output, c.pid, "1", "INFO", "mesh connected"), c.output);
    }

    @Test
    void theDebugFileGetsTheLinesWithHostAndPidInItsName() throws IOException {
        Path logs = Files.createDirectories(dir.resolve("logs"));
        Child c = runJob(Map.of("MSCCLPP_DEBUG", "INFO", "MSCCLPP_DEBUG_FILE",
                logs.resolve("jmscclpp.%h.%p.log").toString()), List.of());
        Path file = logs.resolve("jmscclpp." + Log.hostName() + "." + c.pid + ".log");
        assertTrue(Files.exists(file), () -> "no " + file + " among " + List.of(logs.toFile().list()));
        String text = Files.readString(file);
        assertTrue(hasLine(text, c.pid, "0", "INFO", "mesh connected"), text);
        assertFalse(c.output.contains("mesh connected"), c.output);
    }

    @Test
    void anUnknownLevelIsIgnoredWithOneWarning() throws IOException {
        String out = runJob(Map.of("MSCCLPP_DEBUG", "LOUD"));
        assertTrue(out.contains("MSCCLPP_DEBUG=LOUD is not one of VERSION, WARN, INFO, ABORT, TRACE; ignored"), out);
        assertFalse(out.contains("mesh connected"), out);
    }

    @Test
    void anApplicationsLoggerFinderGetsTheRecordsAndMscclppDebugLeavesItAlone() throws IOException {
        Path services = Files.createDirectories(dir.resolve("finder").resolve("META-INF").resolve("services"));
        Files.writeString(services.resolve(System.LoggerFinder.class.getName()),
                RecordingLoggerFinder.class.getName() + "\n");
        Child c = runJob(Map.of("MSCCLPP_DEBUG", "TRACE"), List.of(dir.resolve("finder")));
        for (String rank : List.of("0", "1")) {
            assertTrue(c.output.contains("FINDER INFO org.jmscclpp.core.Mesh: rank " + rank
                    + ": mesh connected: 1 peers"), c.output);
            assertTrue(c.output.contains("FINDER INFO org.jmscclpp.core.collective.AbstractCollectiveComm: rank "
                    + rank + ": collective comm created"), c.output);
        }
        assertFalse(c.output.contains("JMSCCLPP"), c.output);
    }

    @Test
    void aJulHandlerOnOrgJmscclppGetsTheInfoLinesOfATwoRankJobInThisJvm() throws IOException {
        RecordingHandler capture = new RecordingHandler();
        Logger jmscclpp = Logger.getLogger("org.jmscclpp");
        Level before = jmscclpp.getLevel();
        jmscclpp.setLevel(Level.INFO);
        jmscclpp.addHandler(capture);
        try {
            LoggedJob.run(Files.createDirectories(dir.resolve("shm")));
        } finally {
            jmscclpp.removeHandler(capture);
            jmscclpp.setLevel(before);
        }
        List<String> lines = capture.records().stream().filter(r -> r.getLevel() == Level.INFO)
                .map(r -> r.getLoggerName() + " " + (r.getParameters() == null ? r.getMessage()
                        : MessageFormat.format(r.getMessage(), r.getParameters())))
                .toList();
        for (String rank : List.of("0", "1")) {
            assertTrue(lines.stream().anyMatch(l -> l.startsWith("org.jmscclpp.core.Mesh rank " + rank
                    + ": mesh connected: 1 peers over [HOST_IPC]")), lines::toString);
            assertTrue(lines.stream().anyMatch(l -> l.startsWith("org.jmscclpp.core.collective.AbstractCollectiveComm "
                    + "rank " + rank + ": collective comm created")), lines::toString);
        }
        assertTrue(lines.stream().anyMatch(l -> l.matches("org\\.jmscclpp\\.core\\.proxy\\.ProxyService proxy "
                + "jmscclpp-proxy-\\d+ started: .*")), lines::toString);
        assertTrue(lines.stream().anyMatch(l -> l.matches("org\\.jmscclpp\\.core\\.proxy\\.ProxyService proxy "
                + "jmscclpp-proxy-\\d+ stopped")), lines::toString);
    }
}
