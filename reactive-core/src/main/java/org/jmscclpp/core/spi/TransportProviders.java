package org.jmscclpp.core.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.jmscclpp.core.Transport;
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
