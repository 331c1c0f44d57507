package org.jmscclpp.testkit;

import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.core.spi.Closeables;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension that closes what a test opened, newest first, after each test, whether it passed or
 * failed: communicators, bootstraps, buffers, proxies, channels' owners. A close that fails fails the test (the
 * later closes still run), so a leak or a broken close cannot pass unnoticed.
 *
 * <pre>{@code
 * @RegisterExtension
 * final TrackedResources resources = new TrackedResources();
 *
 * @Test
 * void something() {
 *     Backend backend = resources.track(HostBackend.open(dir));
 *     DeviceBuffer buffer = resources.track(backend.allocate(4096));
 *     ...
 * }
 * }</pre>
 *
 * <p>Thread-safe: tests may track from the threads they start.
 */
public final class TrackedResources implements AfterEachCallback {

    private final List<AutoCloseable> opened = new ArrayList<>();

    /** Closes {@code resource} after the test, before what was tracked earlier; returns it. */
    public <T extends AutoCloseable> T track(T resource) {
        synchronized (opened) {
            opened.add(resource);
        }
        return resource;
    }

    /** How many resources wait to be closed. */
    public int size() {
        synchronized (opened) {
            return opened.size();
        }
    }

    /**
     * Closes everything tracked so far, newest first, and forgets it; throws the first close failure with the
     * later ones suppressed.
     */
    public void closeAll() {
        List<AutoCloseable> newestFirst;
        synchronized (opened) {
            newestFirst = new ArrayList<>(opened).reversed();
            opened.clear();
        }
        Closeables.closeAll(newestFirst);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        closeAll();
    }
}
