package org.jmscclpp.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.host.HostBackend;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TrackedResourcesTest {

    @RegisterExtension
    final TrackedResources resources = new TrackedResources();

    @TempDir
    static Path dir;

    private static HostBackend fromFirstTest;
    private static DeviceBuffer bufferOfFirstTest;

    @Test
    @Order(1)
    void aTestTracksWhatItOpens() {
        fromFirstTest = resources.track(HostBackend.open(dir));
        bufferOfFirstTest = resources.track(fromFirstTest.allocate(4096));
        assertEquals(2, resources.size());
    }

    @Test
    @Order(2)
    void theExtensionClosedThemAfterThatTest() {
        assertEquals(0, resources.size());
        assertTrue(fromFirstTest.isClosed(), "the backend tracked by the previous test was closed after it");
        assertThrows(RuntimeException.class, () -> bufferOfFirstTest.hostSegment().get(
                java.lang.foreign.ValueLayout.JAVA_BYTE, 0), "the buffer's mapping is gone");
    }

    @Test
    @Order(3)
    void closesNewestFirstEvenWhenACloseFailsAndReportsTheFirstFailure() {
        TrackedResources own = new TrackedResources();
        List<String> closed = new ArrayList<>();
        IllegalStateException second = new IllegalStateException("second fails");
        own.track(() -> closed.add("first"));
        own.track(() -> {
            closed.add("second");
            throw second;
        });
        own.track(() -> closed.add("third"));
        RuntimeException e = assertThrows(RuntimeException.class, own::closeAll);
        assertSame(second, e);
        assertEquals(List.of("third", "second", "first"), closed);
        assertEquals(0, own.size());
    }

    @AfterAll
    static void nothingLeftOpen() {
        assertTrue(fromFirstTest == null || fromFirstTest.isClosed());
    }
}
