package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class ShmPingPongFloorTest {

    private static void assumeCompiler() {
        Optional<Path> cc = ShmPingPongFloor.compiler();
        if (cc.isEmpty()) {
            System.err.println("ShmPingPongFloorTest: skipped, no C compiler (" + String.join(", ",
                    ShmPingPongFloor.COMPILERS) + ") on the PATH");
        }
        Assumptions.assumeTrue(cc.isPresent(), "skipped: no C compiler on the PATH");
    }

    /** Compiles the program and runs three sizes: a finite positive median per size, in the order asked. */
    @Test
    @Timeout(120)
    void compilesAndMeasuresEverySizeWhenACompilerExists() {
        assumeCompiler();
        List<ShmPingPongFloor.Size> sizes = List.of(new ShmPingPongFloor.Size(1, 500, 50),
                new ShmPingPongFloor.Size(1024, 200, 20), new ShmPingPongFloor.Size(1 << 16, 20, 2));
        ShmPingPongFloor.Outcome outcome = ShmPingPongFloor.measure(sizes);
        assertNull(outcome.problem(), outcome::problem);
        assertEquals(List.of(1, 1024, 1 << 16), List.copyOf(outcome.medianUs().keySet()));
        outcome.medianUs().forEach((ints, us) -> assertTrue(us > 0 && Double.isFinite(us), ints + " ints: " + us));
        System.out.println("C floor: " + outcome.medianUs() + " µs");
    }

    /** The program's own checks and argument errors come back as a reason, never as an exception. */
    @Test
    @Timeout(120)
    void aRefusedRunIsAReasonNamingTheExitStatus() {
        assumeCompiler();
        ShmPingPongFloor.Outcome outcome = ShmPingPongFloor.measure(List.of(new ShmPingPongFloor.Size(0, 1, 0)));
        assertEquals(Map.of(), outcome.medianUs());
        assertNotNull(outcome.problem());
        assertTrue(outcome.problem().contains("exited with 2") && outcome.problem().contains("'0:1:0'"),
                outcome.problem());
    }

    @Test
    void carriesTheCSourceOnTheClasspath() throws IOException {
        try (InputStream in = ShmPingPongFloor.class.getResourceAsStream(ShmPingPongFloor.SOURCE_NAME)) {
            assertNotNull(in, ShmPingPongFloor.SOURCE_NAME + " is not a classpath resource");
            String source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            for (String needed : List.of("fork()", "MAP_SHARED", "__atomic_store_n", "__ATOMIC_RELEASE",
                    "__atomic_load_n", "__ATOMIC_ACQUIRE", "memcpy", "FLOOR ints=")) {
                assertTrue(source.contains(needed), "the C program has no " + needed);
            }
        }
    }

    @Test
    void parsesTheLinesOfTheSizesAskedForInTheirOrder() {
        List<ShmPingPongFloor.Size> sizes = List.of(new ShmPingPongFloor.Size(1024, 10, 2),
                new ShmPingPongFloor.Size(1, 20, 3));
        Map<Integer, Double> values = ShmPingPongFloor.parse(List.of(
                "FLOOR ints=1 iters=20 warmup=3 median_us=0.25 mean_us=0.3",
                "some other output",
                "FLOOR ints=1024 iters=10 warmup=2 median_us=1.5 mean_us=2"), sizes);
        assertEquals(List.of(1024, 1), List.copyOf(values.keySet()));
        assertEquals(1.5, values.get(1024));
        assertEquals(0.25, values.get(1));
    }

    @Test
    void rejectsMissingRepeatedForeignAndMiscountedLines() {
        List<ShmPingPongFloor.Size> sizes = List.of(new ShmPingPongFloor.Size(1, 20, 3));
        String good = "FLOOR ints=1 iters=20 warmup=3 median_us=0.25 mean_us=0.3";
        assertTrue(assertThrows(IllegalStateException.class, () -> ShmPingPongFloor.parse(List.of(), sizes))
                .getMessage().contains("no line for 1 ints"));
        assertTrue(assertThrows(IllegalStateException.class, () -> ShmPingPongFloor.parse(List.of(good, good), sizes))
                .getMessage().contains("two lines"));
        assertTrue(assertThrows(IllegalStateException.class, () -> ShmPingPongFloor.parse(List.of(good,
                "FLOOR ints=2 iters=20 warmup=3 median_us=1 mean_us=1"), sizes)).getMessage().contains("not asked for"));
        assertTrue(assertThrows(IllegalStateException.class, () -> ShmPingPongFloor.parse(List.of(
                "FLOOR ints=1 iters=19 warmup=3 median_us=1 mean_us=1"), sizes)).getMessage().contains("asked for 1:20:3"));
        assertThrows(IllegalStateException.class, () -> ShmPingPongFloor.parse(List.of(
                "FLOOR ints=1 iters=20 warmup=3 median_us=x mean_us=1"), sizes));
        assertThrows(IllegalArgumentException.class, () -> ShmPingPongFloor.measure(List.of()));
    }
}
