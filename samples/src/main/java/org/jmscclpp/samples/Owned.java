package org.jmscclpp.samples;

import java.util.ArrayDeque;
import java.util.Deque;

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
    public synchronized void close() {
        RuntimeException first = null;
        while (!resources.isEmpty()) {
            try {
                resources.pop().close();
            } catch (Exception e) {
                if (first == null) {
                    first = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
