package org.jmscclpp.core.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.metrics.probe.Probes;
import org.jspecify.annotations.Nullable;

/** Finds the {@link TransportProvider}s on the class path, once. */
public final class TransportProviders {

    private static final List<TransportProvider> ALL = load();

    private TransportProviders() {
    }

    private static List<TransportProvider> load() {
        List<TransportProvider> all = new ArrayList<>();
        ServiceLoader.load(TransportProvider.class, TransportProviders.class.getClassLoader()).forEach(all::add);
        return List.copyOf(all);
    }

    /** Every provider on the class path. */
    public static List<TransportProvider> all() {
        return ALL;
    }

    /**
     * The connection a provider made, under the measuring wrapper a {@link org.jmscclpp.core.Communicator}
     * puts around each (see {@code org.jmscclpp.core.metrics}); {@code connection} itself when it has none.
     * For a transport's own code and tests that need their class back.
     */
    public static Connection unwrap(Connection connection) {
        return Probes.unwrap(connection);
    }

    /** The provider of {@code transport}, or null when no module on the class path offers it. */
    public static @Nullable TransportProvider find(Transport transport) {
        for (TransportProvider p : ALL) {
            if (p.transports().has(transport)) {
                return p;
            }
        }
        return null;
    }
}
