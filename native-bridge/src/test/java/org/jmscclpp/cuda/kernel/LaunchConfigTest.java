package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class LaunchConfigTest {

    private static void invalid(Executable construction, String expectedText) {
        JmscclppException e = assertThrows(JmscclppException.class, construction);
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals("launch", e.phase());
        assertTrue(e.getMessage().contains(expectedText), e.getMessage());
    }

    @Test
    void ofIsOneDimensionalWithoutSharedMemory() {
        LaunchConfig config = LaunchConfig.of(132, 1024);
        assertEquals(new LaunchConfig(132, 1, 1, 1024, 1, 1, 0), config);
        assertEquals(1024, config.threadsPerBlock());
        assertEquals(132, config.blocks());
        assertEquals("<<<(132, 1, 1), (1024, 1, 1), 0>>>", config.toString());
        assertEquals(96 * 1024, config.withSharedMemory(96 * 1024).sharedMemoryBytes());
    }

    @Test
    void limitsThatHold() {
        new LaunchConfig(Integer.MAX_VALUE, 65535, 65535, 16, 16, 4, 0);
        new LaunchConfig(1, 1, 1, 1, 1, 64, 228 * 1024);
        new LaunchConfig(1, 1, 1, 1, 1024, 1, 0);
    }

    @Test
    void nonPositiveDimensionsAreInvalid() {
        invalid(() -> LaunchConfig.of(0, 32), "must be positive");
        invalid(() -> LaunchConfig.of(1, 0), "must be positive");
        invalid(() -> LaunchConfig.of(-1, 32), "<<<(-1, 1, 1), (32, 1, 1), 0>>>");
        invalid(() -> new LaunchConfig(1, 0, 1, 1, 1, 1, 0), "must be positive");
        invalid(() -> new LaunchConfig(1, 1, 1, 1, 1, -4, 0), "must be positive");
    }

    @Test
    void blocksOfMoreThan1024ThreadsAreInvalid() {
        invalid(() -> LaunchConfig.of(1, 1025), "1025 threads, more than 1024");
        invalid(() -> new LaunchConfig(1, 1, 1, 32, 32, 2, 0), "2048 threads");
        // the product must not overflow into something small
        invalid(() -> new LaunchConfig(1, 1, 1, 65536, 65536, 1, 0), "4294967296 threads");
    }

    @Test
    void axisLimitsAreEnforced() {
        invalid(() -> new LaunchConfig(1, 1, 1, 1, 1, 65, 0), "blockZ is 65");
        invalid(() -> new LaunchConfig(1, 65536, 1, 1, 1, 1, 0), "at most 65535");
        invalid(() -> new LaunchConfig(1, 1, 65536, 1, 1, 1, 0), "at most 65535");
    }

    @Test
    void negativeSharedMemoryIsInvalid() {
        invalid(() -> LaunchConfig.of(1, 32).withSharedMemory(-1), "shared memory is negative");
    }
}
