package org.jmscclpp.core.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CloseablesTest {

    @Test
    void closesEveryResourceInOrderAndThrowsTheFirstFailureWithTheOthersSuppressed() {
        List<String> closed = new ArrayList<>();
        IllegalStateException second = new IllegalStateException("second");
        List<AutoCloseable> resources = List.of(
                () -> closed.add("a"),
                () -> {
                    closed.add("b");
                    throw new IOException("first");
                },
                () -> closed.add("c"),
                () -> {
                    closed.add("d");
                    throw second;
                });

        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> Closeables.closeAll(resources));

        assertEquals(List.of("a", "b", "c", "d"), closed);
        assertInstanceOf(IOException.class, thrown.getCause(), "a checked failure is wrapped");
        assertEquals("first", thrown.getCause().getMessage());
        assertEquals(1, thrown.getSuppressed().length);
        assertSame(second, thrown.getSuppressed()[0]);
    }

    @Test
    void aFailureInHandCarriesTheCloseFailures() {
        RuntimeException reason = new RuntimeException("reason");
        IllegalArgumentException failure = new IllegalArgumentException("close");
        List<AutoCloseable> resources = List.of(() -> {
            throw failure;
        });

        assertSame(reason, Closeables.closeAll(resources, reason));
        assertSame(failure, reason.getSuppressed()[0]);
        assertSame(failure, Closeables.closeAll(resources, null));
        assertNull(Closeables.closeAll(List.of(() -> { }), null));
    }
}
