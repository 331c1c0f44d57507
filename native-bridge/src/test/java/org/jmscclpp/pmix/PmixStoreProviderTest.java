package org.jmscclpp.pmix;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.LauncherStores;
import org.junit.jupiter.api.Test;

/**
 * What needs no PMIx server: the provider is found, tells a PMIx launch from others, and names what is missing.
 * The real rendezvous under {@code mpirun} is {@code LaunchersIT} (samples).
 */
class PmixStoreProviderTest {

    private final PmixStoreProvider provider = new PmixStoreProvider();

    @Test
    void theServiceLoaderFindsIt() {
        assertTrue(LauncherStores.named("pmix").orElseThrow() instanceof PmixStoreProvider);
    }

    @Test
    void detectsOnlyAProcessThatAPmixServerStarted() {
        assertTrue(provider.detects(Map.of("PMIX_RANK", "0", "PMIX_NAMESPACE", "988676097")));
        assertFalse(provider.detects(Map.of("PMIX_RANK", "0")));
        assertFalse(provider.detects(Map.of("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2")));
        assertEquals(Optional.empty(), provider.open(Map.of("RANK", "0"), 0));
    }

    @Test
    void aMissingLibraryIsASystemErrorNamingItAndTheWayAround() {
        JmscclppException e = assertThrows(JmscclppException.class, () -> provider.open(Map.of("PMIX_RANK", "1",
                "PMIX_NAMESPACE", "9", PmixStoreProvider.LIBRARY_ENV, "/nonexistent/libpmix.so.2"), 1));
        assertEquals(ErrorCode.SYSTEM_ERROR, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("/nonexistent/libpmix.so.2"), e.getMessage());
        assertTrue(e.getMessage().contains("MSCCLPP_COMM_ID"), e.getMessage());
        assertEquals(1, e.rank());
    }

    @Test
    void aLibraryThatIsNotLibpmixIsASystemErrorNamingTheMissingFunction() {
        // libc loads, but has none of PMIx's functions: JNA would throw UnsatisfiedLinkError at the first call
        for (int i = 0; i < 2; i++) {
            JmscclppException e = assertThrows(JmscclppException.class, () -> provider.open(Map.of("PMIX_RANK", "0",
                    "PMIX_NAMESPACE", "9", PmixStoreProvider.LIBRARY_ENV, "libc.so.6"), 0));
            assertEquals(ErrorCode.SYSTEM_ERROR, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("libc.so.6 lacks PMIx_Init"), e.getMessage());
            assertTrue(e.getMessage().contains(PmixStoreProvider.LIBRARY_ENV), e.getMessage());
            assertTrue(e.getMessage().contains("MSCCLPP_COMM_ID"), e.getMessage());
            assertEquals(0, e.rank());
        }
    }
}
