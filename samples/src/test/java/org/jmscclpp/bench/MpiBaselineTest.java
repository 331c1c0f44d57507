package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class MpiBaselineTest {

    @Test
    @Timeout(180)
    void measuresAllSixOperationsWithTwoRanks() {
        Optional<String> missing = MpiBaseline.missingTool();
        missing.ifPresent(reason -> System.err.println("MpiBaselineTest skipped: " + reason));
        Assumptions.assumeTrue(missing.isEmpty(), () -> "skipped: " + missing.orElse(""));

        long start = System.nanoTime();
        Map<String, Double> values = MpiBaseline.measure(2, 20, 5).orElseThrow(
                () -> new AssertionError("mpirun is installed but the MPI baseline failed; see stderr"));

        assertEquals(Set.copyOf(MpiBaseline.expectedKeys(2)), values.keySet());
        assertEquals(6, values.size());
        values.forEach((key, value) -> assertTrue(value > 0 && Double.isFinite(value), key + "=" + value));
        System.out.println("MPI baseline n=2 in " + Duration.ofNanos(System.nanoTime() - start).toMillis()
                + " ms: " + values);
    }

    @Test
    void carriesTheCSourceOnTheClasspath() throws IOException {
        try (InputStream in = MpiBaseline.class.getResourceAsStream(MpiBaseline.SOURCE_NAME)) {
            assertNotNull(in, MpiBaseline.SOURCE_NAME + " is not a classpath resource");
            String source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            for (String key : MpiBaseline.expectedKeys(2)) {
                assertTrue(source.contains('"' + key + '"'), "the C program has no row " + key);
            }
        }
    }

    @Test
    void parsesRowsAndIgnoresMpirunNotices() {
        Map<String, Double> values = MpiBaseline.parse(List.of(
                "--------------------------------------------------------------------------",
                "MPI op=allgather_8B n=4 median_us=12.34",
                "MPI op=allgather_64KiB n=4 median_us=56.5",
                "MPI op=barrier n=4 median_us=7",
                "MPI op=broadcast_1MiB n=4 median_us=210.125"), 4);

        assertEquals(Map.of("allgather_8B", 12.34, "allgather_64KiB", 56.5, "barrier", 7.0,
                "broadcast_1MiB", 210.125), values);
    }

    @Test
    void rejectsMissingRepeatedAndForeignRows() {
        List<String> collectives = List.of(
                "MPI op=allgather_8B n=2 median_us=1",
                "MPI op=allgather_64KiB n=2 median_us=2",
                "MPI op=barrier n=2 median_us=3",
                "MPI op=broadcast_1MiB n=2 median_us=4");
        IllegalStateException missing = assertThrows(IllegalStateException.class,
                () -> MpiBaseline.parse(collectives, 2));
        assertTrue(missing.getMessage().contains("sendrecv_rtt_8B"), missing.getMessage());

        assertThrows(IllegalStateException.class, () -> MpiBaseline.parse(List.of(
                "MPI op=barrier n=2 median_us=3", "MPI op=barrier n=2 median_us=3"), 2));
        assertThrows(IllegalStateException.class, () -> MpiBaseline.parse(List.of(
                "MPI op=barrier n=8 median_us=3"), 2));
    }

    @Test
    void rejectsNonsenseArguments() {
        assertThrows(IllegalArgumentException.class, () -> MpiBaseline.measure(0, 10, 0));
        assertThrows(IllegalArgumentException.class, () -> MpiBaseline.measure(2, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> MpiBaseline.measure(2, 10, -1));
    }
}
