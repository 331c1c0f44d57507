package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a two-rank TCP bootstrap job ({@link LoggedBootstrapJob}, in a child JVM) prints on stderr under
 * {@code MSCCLPP_DEBUG}: its init line per rank at INFO, its warning (the insecure opt-in's) at WARN, and
 * no INFO line when unset.
 */
class BootstrapLoggingTest {

    private static final Duration CHILD_DEADLINE = Duration.ofSeconds(90);
    private static final String INSECURE = "MSCCLPP_BOOTSTRAP_INSECURE=1 and no MSCCLPP_BOOTSTRAP_SECRET";

    @TempDir
    Path dir;

    private record Child(String output, long pid) {
        boolean hasLine(int rank, String level, String message) {
            return Pattern.compile("^[^\\s:]+:" + pid + ":\\d+ \\[" + rank + "\\] JMSCCLPP " + level + " " + message,
                    Pattern.MULTILINE).matcher(output).find();
        }
    }

    private Child run(String debug) {
        Map<String, String> env = new HashMap<>(Map.of("MSCCLPP_DEBUG", debug, "MSCCLPP_DEBUG_SUBSYS", "",
                "MSCCLPP_DEBUG_FILE", "", BootstrapOptions.SECRET_ENV, "", BootstrapOptions.INSECURE_ENV, "1"));
        try (ChildJvm child = ChildJvm.start(dir.resolve("child-" + debug + ".log"), env, List.of(),
                LoggedBootstrapJob.class)) {
            assertEquals(0, child.waitFor(CHILD_DEADLINE), child::output);
            assertTrue(child.output().contains(LoggedBootstrapJob.DONE), child::output);
            return new Child(child.output(), child.process().pid());
        }
    }

    @Test
    void infoPrintsEachRanksInitLineWithItsRankAndTime() {
        Child c = run("INFO");
        for (int r = 0; r < 2; r++) {
            assertTrue(c.hasLine(r, "INFO", "bootstrap init done: rank " + r + " of 2 in [0-9.]+ ms \\(root check-in"),
                    c.output());
            assertTrue(c.hasLine(r, "WARN", Pattern.quote(INSECURE)), c.output());
        }
        assertFalse(c.output().contains("JMSCCLPP DEBUG"), c.output());
    }

    @Test
    void warnPrintsTheWarningsOnly() {
        Child c = run("WARN");
        assertTrue(c.hasLine(0, "WARN", Pattern.quote(INSECURE)), c.output());
        assertFalse(c.output().contains("JMSCCLPP INFO"), c.output());
        assertFalse(c.output().contains("bootstrap init done"), c.output());
    }

    @Test
    void unsetTheInitLinesStayQuietAndTheWarningStillShows() {
        Child c = run("");
        assertFalse(c.output().contains("bootstrap init done"), c.output());
        assertFalse(c.output().contains("JMSCCLPP"), c.output());
        assertTrue(c.output().contains(INSECURE), c.output());
    }
}
