package org.jmscclpp.samples;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import org.jmscclpp.core.spi.Closeables;
import org.jspecify.annotations.Nullable;

/**
 * Resources a sample creates as it goes (buffers whose size a collective tells, streams, threads),
 * closed in reverse order of creation by {@link #close()}: declared in a {@code try} before the
 * collective communicator, they outlive it, so no registration refers to a freed buffer.
 */
final class Owned implements AutoCloseable {

    private final Deque<AutoCloseable> resources = new ArrayDeque<>();

    /** Takes {@code resource} to close later, and returns it. */
    synchronized <T extends AutoCloseable> T own(T resource) {
        resources.push(resource);
        return resource;
    }

    /** Closes every resource, last created first; the first failure is thrown after all were tried, the others suppressed. */
    @Override
    public void close() {
        RuntimeException first = closeAfter(null);
        if (first != null) {
            throw first;
        }
    }

    /**
     * Closes every resource, last created first, after {@code failure} (a failure of the caller's own shutdown,
     * or null); returns it with the close failures suppressed, or the first close failure, or null.
     */
    synchronized @Nullable RuntimeException closeAfter(@Nullable RuntimeException failure) {
        List<AutoCloseable> newestFirst = List.copyOf(resources);   // the deque pushes at its head
        resources.clear();
        return Closeables.closeAll(newestFirst, failure);
    }
}
