package org.jmscclpp.core.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Test;

class DebugHandlerTest {

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final DebugHandler handler = new DebugHandler(new PrintStream(bytes, true, StandardCharsets.UTF_8), "node7",
            4242, EnumSet.of(Subsystem.INIT), Map.of("a.Init", Subsystem.INIT, "a.Net", Subsystem.NET));

    private String publish(Level level, String logger, String message, Object... params) {
        LogRecord r = new LogRecord(level, message);
        r.setLoggerName(logger);
        r.setParameters(params);
        r.setLongThreadID(17);
        bytes.reset();
        handler.publish(r);
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void aLineIsHostPidTidRankLevelAndTheMessageWithoutItsRankPrefix() {
        assertEquals("node7:4242:17 [3] JMSCCLPP INFO bootstrap init done" + System.lineSeparator(),
                publish(Level.INFO, "a.Init", "rank {0}: bootstrap init done", 3));
        assertEquals("node7:4242:17 [1024] JMSCCLPP WARN closing" + System.lineSeparator(),
                publish(Level.WARNING, "a.Init", "rank {0}: closing", 1024), "a grouped rank is still read");
        assertEquals("node7:4242:17 [-] JMSCCLPP ERROR no rank here" + System.lineSeparator(),
                publish(Level.SEVERE, "a.Init", "no rank here"));
    }

    @Test
    void debugAndTraceLinesCarryMillisecondsSinceStart() {
        assertTrue(publish(Level.FINE, "a.Init", "rank 0: detail").matches(
                "node7:4242:17 \\[0\\] JMSCCLPP DEBUG [0-9]+\\.[0-9]{3} detail\\R"));
        assertTrue(publish(Level.FINEST, "a.Init", "fine").matches(
                "node7:4242:17 \\[-\\] JMSCCLPP TRACE [0-9]+\\.[0-9]{3} fine\\R"));
    }

    @Test
    void aSubsystemOutsideTheMaskPrintsOnlyItsWarnings() {
        assertEquals("", publish(Level.INFO, "a.Net", "rank 0: listening"));
        assertTrue(publish(Level.WARNING, "a.Net", "rank 0: dropped").contains("JMSCCLPP WARN dropped"));
        assertTrue(publish(Level.INFO, "app.Main", "a logger of no subsystem").contains("JMSCCLPP INFO"));
    }

    @Test
    void aThrowableFollowsItsLine() {
        LogRecord r = new LogRecord(Level.WARNING, "failed");
        r.setLoggerName("a.Init");
        r.setThrown(new IllegalStateException("boom"));
        String out = handler.format(r);
        assertTrue(out.contains("JMSCCLPP WARN failed" + System.lineSeparator()
                + "java.lang.IllegalStateException: boom"), out);
    }
}
