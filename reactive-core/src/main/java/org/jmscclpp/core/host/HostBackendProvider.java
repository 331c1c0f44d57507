package org.jmscclpp.core.host;

import java.util.Optional;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.spi.BackendProvider;

/**
 * Makes the {@link HostBackend} known to {@link org.jmscclpp.core.Backends} as {@code host}: it
 * runs everywhere, and ranks below every GPU backend in {@link org.jmscclpp.core.Backends#best()}.
 */
public final class HostBackendProvider implements BackendProvider {

    /** Called by {@link java.util.ServiceLoader}. */
    public HostBackendProvider() {
    }

    @Override
    public String name() {
        return "host";
    }

    @Override
    public int priority() {
        return 0;
    }

    @Override
    public Optional<String> unavailableReason() {
        return Optional.empty();
    }

    /** {@link HostBackend#open()}: the directory from {@value HostBackend#SHM_DIR_ENV}, {@code /dev/shm} or the temp dir. */
    @Override
    public Backend open() {
        return HostBackend.open();
    }
}
