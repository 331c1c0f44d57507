package org.jmscclpp.core.spi;

import java.util.Optional;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;

/**
 * How {@link Backends} finds a backend at run time: implementations are listed in
 * {@code META-INF/services/org.jmscclpp.core.spi.BackendProvider} of the module that holds them
 * ({@code reactive-core} for {@code host}, {@code native-bridge} for {@code cuda}).
 */
public interface BackendProvider {

    /** The backend's name, as {@link Backend#name()} and {@code --backend NAME} spell it. */
    String name();

    /** Higher wins in {@link Backends#best()}: a GPU backend ranks above the host backend. */
    int priority();

    /** Empty when the backend can run here; otherwise why not (for example "libcuda.so.1 not found"). */
    Optional<String> unavailableReason();

    /** Opens the backend; only called when {@link #unavailableReason()} is empty. */
    Backend open();
}
