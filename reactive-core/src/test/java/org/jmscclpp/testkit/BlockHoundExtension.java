package org.jmscclpp.testkit;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Installs <a href="https://github.com/reactor/BlockHound">BlockHound</a> in the test JVM and fails
 * every test during which a blocking call ran on a non-blocking thread (a Reactor parallel or
 * single thread, a Netty event loop: what the integrations of Reactor and Netty, found on the class
 * path, declare). The offending thread gets BlockHound's {@link BlockingOperationError} as usual;
 * the extension also records each call, so one that a catch block swallowed still fails the test
 * it ran under.
 *
 * <p>Registered for every test class of reactive-core and bootstrap-netty by JUnit's extension
 * auto-detection ({@code META-INF/services/org.junit.jupiter.api.extension.Extension}, enabled by
 * the modules' surefire configuration). The JVM needs {@code -XX:+AllowRedefinitionToAddDeleteMethods}
 * (BlockHound redefines {@code Thread} and friends; the flag is deprecated since JDK 13 but still
 * there in JDK 25), which the modules' surefire {@code argLine} gives.
 *
 * <p>Allowed blocking calls, each a real, bounded wait that a non-blocking thread makes by design,
 * are listed at {@link #ALLOWANCES}.
 */
public final class BlockHoundExtension implements BeforeEachCallback, AfterEachCallback {

    /**
     * The allowances, each a bounded call that a non-blocking thread makes on purpose:
     * <ul>
     *   <li>{@code sun.security.provider.NativePRNG$RandomIO.implNextBytes}: {@code SecureRandom.nextBytes}
     *       reads {@code /dev/urandom}, which never blocks once the kernel is seeded (at boot); the
     *       bootstrap's preamble and the ETHERNET handshake draw their nonces so on the Netty event
     *       loop ({@code Proofs.nonce}). Seeding ({@code generateSeed}, {@code /dev/random}) stays
     *       forbidden.</li>
     *   <li>{@code org.jmscclpp.bootstrap.SpinThenWait.calculateStrategy}: the bootstrap event
     *       loop's select strategy polls its sockets for a bounded window (200 µs by default)
     *       after I/O, with {@code Thread.onSpinWait()} or, on an oversubscribed host,
     *       {@code Thread.yield()} between polls: the MPI-style latency trade its javadoc measures,
     *       run by the loop itself instead of {@code epoll_wait}.</li>
     * </ul>
     */
    static final BlockHoundIntegration ALLOWANCES = builder -> builder
            .allowBlockingCallsInside("sun.security.provider.NativePRNG$RandomIO", "implNextBytes")
            .allowBlockingCallsInside("org.jmscclpp.bootstrap.SpinThenWait", "calculateStrategy");

    private static final List<String> DETECTED = new ArrayList<>();
    private static final boolean INSTALLED = install();

    private static boolean install() {
        BlockHound.install(ALLOWANCES, builder -> builder.blockingMethodCallback(method -> {
            String where = method + " on thread " + Thread.currentThread().getName();
            synchronized (DETECTED) {
                DETECTED.add(where);
            }
            throw new BlockingOperationError(method);
        }));
        return true;
    }

    /** Installs BlockHound if it is not yet (for tests that run without the auto-detected extension). */
    public static void ensureInstalled() {
        if (!INSTALLED) {
            throw new IllegalStateException("BlockHound is not installed");
        }
    }

    /** The blocking calls detected since the last call (or the test's start), which are then forgotten. */
    public static List<String> takeDetected() {
        synchronized (DETECTED) {
            List<String> copy = List.copyOf(DETECTED);
            DETECTED.clear();
            return copy;
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        // calls detected between two tests (a background thread of the previous one) fail this one
        ensureInstalled();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        List<String> found = takeDetected();
        if (!found.isEmpty()) {
            throw new AssertionError("BlockHound: blocking calls on non-blocking threads during "
                    + context.getDisplayName() + ": " + String.join("; ", new ArrayList<>(found)));
        }
    }
}
