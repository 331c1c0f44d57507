package org.jmscclpp.core.spi;

import org.jspecify.annotations.Nullable;

/**
 * Closing a group of resources as one, the way try-with-resources does: every resource is closed
 * even when some fail, and the first failure carries the later ones as suppressed exceptions.
 * Public for the other modules and for services that own several resources; it holds no state.
 */
public final class Closeables {

    private Closeables() {
    }

    /**
     * Closes each of {@code resources} in iteration order (pass {@code list.reversed()} for newest first).
     *
     * @param failure a failure already in hand (the reason for closing), or null
     * @return {@code failure} with every close failure added as suppressed; when {@code failure} is null, the
     *         first close failure (a checked one wrapped in an {@link IllegalStateException}) with the later ones
     *         suppressed; null when there was no failure at all
     */
    public static @Nullable RuntimeException closeAll(Iterable<? extends AutoCloseable> resources,
                                                      @Nullable RuntimeException failure) {
        RuntimeException first = failure;
        for (AutoCloseable c : resources) {
            try {
                c.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        return first;
    }

    /** Closes each of {@code resources} in iteration order, then throws the first failure, the later ones suppressed. */
    public static void closeAll(Iterable<? extends AutoCloseable> resources) {
        RuntimeException first = closeAll(resources, null);
        if (first != null) {
            throw first;
        }
    }
}
