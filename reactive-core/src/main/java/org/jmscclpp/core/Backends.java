package org.jmscclpp.core;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.spi.BackendProvider;

/**
 * Finds the backends on the class path ({@link BackendProvider} services) and opens one: the best
 * available ({@code cuda} where libcuda loads, else {@code host}) or one by name.
 */
public final class Backends {

    private static final System.Logger LOG = Log.logger(Backends.class, Subsystem.INIT);

    private Backends() {
    }

    /**
     * Every provider on the class path, highest priority first, available or not. Its type is the SPI's, which the
     * module path shows to the jmscclpp modules only: applications use {@link #availability()}.
     */
    public static List<BackendProvider> providers() {
        List<BackendProvider> all = new ArrayList<>();
        ServiceLoader.load(BackendProvider.class, Backends.class.getClassLoader()).forEach(all::add);
        all.sort(Comparator.comparingInt(BackendProvider::priority).reversed().thenComparing(BackendProvider::name));
        return all;
    }

    /**
     * Every backend on the class path (or module path), highest priority first, with why it cannot run here: an
     * empty reason for the ones that can ({@code {cuda=Optional[libcuda.so.1 not found], host=Optional.empty}}).
     * What an application asks; {@link #providers()} is for the jmscclpp modules.
     */
    public static Map<String, Optional<String>> availability() {
        Map<String, Optional<String>> all = new LinkedHashMap<>();
        for (BackendProvider p : providers()) {
            all.put(p.name(), p.unavailableReason());
        }
        return Collections.unmodifiableMap(all);
    }

    /** Opens the available backend of highest priority. */
    public static Backend best() {
        List<String> reasons = new ArrayList<>();
        for (BackendProvider p : providers()) {
            var reason = p.unavailableReason();
            if (reason.isEmpty()) {
                Backend b = p.open();
                LOG.log(Level.INFO, "using the {0} backend{1}", p.name(),
                        reasons.isEmpty() ? "" : " (not available: " + String.join("; ", reasons) + ")");
                return b;
            }
            reasons.add(p.name() + ": " + reason.get());
        }
        throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "no backend can run here " + reasons)
                .phase("backend").build();
    }

    /** Opens the backend called {@code name}; an unknown or unavailable one is an error saying why. */
    public static Backend named(String name) {
        List<String> known = new ArrayList<>();
        for (BackendProvider p : providers()) {
            if (p.name().equals(name)) {
                var reason = p.unavailableReason();
                if (reason.isPresent()) {
                    throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "backend " + name + " cannot run here: "
                            + reason.get()).phase("backend").build();
                }
                Backend b = p.open();
                LOG.log(Level.INFO, "using the {0} backend, as asked", name);
                return b;
            }
            known.add(p.name());
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no backend called " + name + " (known: " + known + ")")
                .phase("backend").build();
    }
}
