package org.jmscclpp.core.metrics.probe;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.metrics.CollectiveMetrics;
import org.jmscclpp.core.metrics.ConnectionMetrics;
import org.jmscclpp.core.metrics.JmscclppMetrics;
import org.jmscclpp.core.metrics.ProxyMetrics;
import org.jmscclpp.core.spi.Tunables;
import org.jspecify.annotations.Nullable;

/**
 * The process's measurements: one {@link ConnectionProbe} per rank, peer and transport, one
 * {@link CollectiveProbe} per rank, op, type and size bucket (both kept for the life of the
 * process), one {@link ProxyProbe} per running proxy service; the listeners of
 * {@link JmscclppMetrics#listen}; and the hooks of the periodic JFR events.
 */
public final class Probes {

    /** {@code -Djmscclpp.metrics=false} turns every measurement off; read once. */
    public static final boolean ENABLED = Tunables.booleanValue("jmscclpp.metrics", true);

    /**
     * Whether JFR events may be emitted: metrics on and Flight Recorder in the runtime; the events
     * are registered when a recording first starts (or at once where one runs).
     */
    static final boolean JFR = ENABLED && Jfr.listen();

    /** Guards adding sources and listeners together, so a listener sees every source exactly once. */
    private static final Object LOCK = new Object();
    private static final Map<ConnectionKey, ConnectionProbe> CONNECTIONS = new ConcurrentHashMap<>();
    private static final Map<CollectiveKey, CollectiveProbe> COLLECTIVES = new ConcurrentHashMap<>();
    private static final List<ProxyProbe> PROXIES = new CopyOnWriteArrayList<>();
    private static final List<JmscclppMetrics.Listener> LISTENERS = new CopyOnWriteArrayList<>();

    private record ConnectionKey(int rank, int peer, Transport transport) {
    }

    private record CollectiveKey(int rank, CollectiveKind op, DataType type, int bucket) {
    }

    private Probes() {
    }

    /** {@code connection} measured (when measurements are on; else {@code connection} itself). */
    public static Connection instrument(Connection connection) {
        if (!ENABLED) {
            return connection;
        }
        ConnectionContext c = connection.context();
        ConnectionProbe probe = connectionProbe(c.rank(), c.remoteRank(), connection.transport());
        return new MeteredConnection(connection, probe);
    }

    /** The transport's connection under {@link #instrument}'s wrapper, or {@code connection} itself. */
    public static Connection unwrap(Connection connection) {
        return connection instanceof MeteredConnection m ? m.delegate() : connection;
    }

    static ConnectionProbe connectionProbe(int rank, int peer, Transport transport) {
        ConnectionKey key = new ConnectionKey(rank, peer, transport);
        ConnectionProbe probe = CONNECTIONS.get(key);
        if (probe != null) {
            return probe;
        }
        synchronized (LOCK) {
            probe = CONNECTIONS.get(key);
            if (probe == null) {
                probe = new ConnectionProbe(rank, peer, transport);
                CONNECTIONS.put(key, probe);
                for (JmscclppMetrics.Listener l : LISTENERS) {
                    l.connectionAdded(probe);
                }
            }
            return probe;
        }
    }

    /**
     * A new proxy service's probe, announced to the listeners; null when measurements are off.
     *
     * @param occupancy the fifo's occupancy (-1 where unknown), read on any thread
     */
    public static @Nullable ProxyProbe proxyAdded(String name, int capacity, LongSupplier occupancy) {
        if (!ENABLED) {
            return null;
        }
        ProxyProbe probe = new ProxyProbe(name, capacity, occupancy);
        synchronized (LOCK) {
            PROXIES.add(probe);
            for (JmscclppMetrics.Listener l : LISTENERS) {
                l.proxyAdded(probe);
            }
        }
        return probe;
    }

    /** The proxy's fifo is about to be freed: listeners drop it, its occupancy reads 0 from now on. */
    public static void proxyRemoved(ProxyProbe probe) {
        probe.end();
        synchronized (LOCK) {
            if (PROXIES.remove(probe)) {
                for (JmscclppMetrics.Listener l : LISTENERS) {
                    l.proxyRemoved(probe);
                }
            }
        }
    }

    /** A new per-communicator cache of collective probes for {@code rank}; null when measurements are off. */
    public static @Nullable CollectiveProbes collectives(int rank, int ranks) {
        return ENABLED ? new CollectiveProbes(rank, ranks) : null;
    }

    static CollectiveProbe collectiveProbe(int rank, CollectiveKind op, DataType type, int bucket) {
        CollectiveKey key = new CollectiveKey(rank, op, type, bucket);
        CollectiveProbe probe = COLLECTIVES.get(key);
        if (probe != null) {
            return probe;
        }
        synchronized (LOCK) {
            probe = COLLECTIVES.get(key);
            if (probe == null) {
                probe = new CollectiveProbe(rank, op, type, bucket);
                COLLECTIVES.put(key, probe);
                for (JmscclppMetrics.Listener l : LISTENERS) {
                    l.collectiveAdded(probe);
                }
            }
            return probe;
        }
    }

    public static List<ConnectionMetrics> connections() {
        return List.copyOf(CONNECTIONS.values());
    }

    public static List<ProxyMetrics> proxies() {
        return List.copyOf(PROXIES);
    }

    public static List<CollectiveMetrics> collectives() {
        return List.copyOf(COLLECTIVES.values());
    }

    public static AutoCloseable listen(JmscclppMetrics.Listener listener) {
        synchronized (LOCK) {
            LISTENERS.add(listener);
            CONNECTIONS.values().forEach(listener::connectionAdded);
            PROXIES.forEach(listener::proxyAdded);
            COLLECTIVES.values().forEach(listener::collectiveAdded);
        }
        return () -> LISTENERS.remove(listener);
    }

    static List<ConnectionProbe> connectionProbes() {
        return new ArrayList<>(CONNECTIONS.values());
    }

    static List<ProxyProbe> proxyProbes() {
        return new ArrayList<>(PROXIES);
    }
}
