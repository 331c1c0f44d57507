package org.jmscclpp.core.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

/** Finds the {@link LauncherStore.Provider}s on the class path, once. */
public final class LauncherStores {

    private static final List<LauncherStore.Provider> ALL = load();

    private LauncherStores() {
    }

    private static List<LauncherStore.Provider> load() {
        List<LauncherStore.Provider> all = new ArrayList<>();
        ServiceLoader.load(LauncherStore.Provider.class, LauncherStores.class.getClassLoader()).forEach(all::add);
        return List.copyOf(all);
    }

    /** Every provider on the class path. */
    public static List<LauncherStore.Provider> all() {
        return ALL;
    }

    /** The provider called {@code name} (case-insensitive), if one is on the class path. */
    public static Optional<LauncherStore.Provider> named(String name) {
        return ALL.stream().filter(p -> p.name().equalsIgnoreCase(name)).findFirst();
    }

    /** The first provider whose {@link LauncherStore.Provider#detects detects} is true for {@code env}. */
    public static Optional<LauncherStore.Provider> detect(Map<String, String> env) {
        return ALL.stream().filter(p -> p.detects(env)).findFirst();
    }
}
