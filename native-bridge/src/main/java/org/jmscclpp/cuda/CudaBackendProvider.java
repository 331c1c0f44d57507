package org.jmscclpp.cuda;

import java.util.Optional;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.BackendProvider;
import org.jmscclpp.nativebridge.CudaDriver;

/**
 * Offers the {@code cuda} backend to {@code Backends} where the driver loads, initialises and
 * sees a GPU; otherwise says which of those failed.
 */
public final class CudaBackendProvider implements BackendProvider {

    /** Above the host backend's priority: {@code Backends.best()} picks the GPU where there is one. */
    static final int PRIORITY = 100;

    @Override
    public String name() {
        return "cuda";
    }

    @Override
    public int priority() {
        return PRIORITY;
    }

    @Override
    public Optional<String> unavailableReason() {
        Optional<String> driver = CudaDriver.unavailableReason();
        if (driver.isPresent()) {
            return driver;
        }
        try {
            int count = CudaContext.deviceCount();
            return count > 0 ? Optional.empty() : Optional.of("the CUDA driver loads but sees no GPU");
        } catch (JmscclppException e) {
            return Optional.of("the CUDA driver does not initialise: " + e.detail());
        }
    }

    @Override
    public Backend open() {
        return CudaBackend.open();
    }
}
