package org.jmscclpp.core.metrics;

import java.util.List;
import org.jmscclpp.core.metrics.probe.Probes;

/**
 * jmscclpp's own measurements, without any dependency: what the connections, proxies and
 * collectives of this process did, for a monitoring library to read (the Micrometer binder in
 * {@code org.jmscclpp.core.metrics.micrometer} does) or for a program to print. The same figures
 * go to Java Flight Recorder as the events {@code org.jmscclpp.Flush},
 * {@code org.jmscclpp.Collective}, {@code org.jmscclpp.ConnectionStatistics} and
 * {@code org.jmscclpp.ProxyStatistics} (see the README's "Metrics" section).
 *
 * <p>On by default; {@code -Djmscclpp.metrics=false} turns every measurement off for the life of
 * the process (read once, when the first connection, proxy or collective call needs it): no
 * counter is kept, connections are not wrapped, and no event is emitted. On, a write costs one
 * uncontended counter add, and flushes and collective calls one small object each for their timing.
 */
public final class JmscclppMetrics {

    /**
     * The JFR event of one flush (of 1 ms or more, unless the recording lowers the threshold): rank,
     * peer, tag, transport, bytes since the previous flush, duration.
     */
    public static final String FLUSH_EVENT = "org.jmscclpp.Flush";
    /** The JFR event of one collective call: rank, ranks, op, type, count, bytes, algorithm, duration. */
    public static final String COLLECTIVE_EVENT = "org.jmscclpp.Collective";
    /** The periodic JFR event (every second by default): one {@link ConnectionMetrics} per rank, peer, transport. */
    public static final String CONNECTION_STATISTICS_EVENT = "org.jmscclpp.ConnectionStatistics";
    /** The periodic JFR event (every second by default) with one {@link ProxyMetrics} per running proxy. */
    public static final String PROXY_STATISTICS_EVENT = "org.jmscclpp.ProxyStatistics";

    private JmscclppMetrics() {
    }

    /** Whether measurements are on in this process ({@code -Djmscclpp.metrics=false} turns them off). */
    public static boolean enabled() {
        return Probes.ENABLED;
    }

    /** The connections' figures, one per rank, peer and transport seen so far. */
    public static List<ConnectionMetrics> connections() {
        return Probes.connections();
    }

    /** The figures of the proxy services built and not yet closed. */
    public static List<ProxyMetrics> proxies() {
        return Probes.proxies();
    }

    /** The collectives' figures, one per rank, op, type and size bucket seen so far. */
    public static List<CollectiveMetrics> collectives() {
        return Probes.collectives();
    }

    /**
     * Tells {@code listener} of every source there is now (at once, on this thread) and of every
     * one that comes or goes later (on the thread that makes or ends it, so it must be quick and
     * must not throw). Closing the returned handle stops the notices.
     */
    public static AutoCloseable listen(Listener listener) {
        return Probes.listen(listener);
    }

    /** Notices of sources coming and going; every method does nothing unless overridden. */
    public interface Listener {

        /** The first connection of a rank, peer and transport was made (its figures then last for the process). */
        default void connectionAdded(ConnectionMetrics connection) {
        }

        /** A proxy service was built. */
        default void proxyAdded(ProxyMetrics proxy) {
        }

        /** A proxy service was closed: its figures stop changing and should no longer be read. */
        default void proxyRemoved(ProxyMetrics proxy) {
        }

        /** The first call of a rank, op, type and size bucket was issued (its figures then last for the process). */
        default void collectiveAdded(CollectiveMetrics collective) {
        }
    }
}
