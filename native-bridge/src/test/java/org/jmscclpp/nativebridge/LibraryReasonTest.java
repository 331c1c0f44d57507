package org.jmscclpp.nativebridge;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Where the CUDA driver or libibverbs cannot be loaded (a machine without a GPU or RDMA stack), the
 * reason says what the loader said, not only JNA's preamble that names the library.
 */
class LibraryReasonTest {

    @Test
    void anUnloadableLibrarysReasonCarriesTheLoadersWords() {
        for (Optional<String> reason : List.of(CudaDriver.unavailableReason(), Verbs.unavailableReason())) {
            reason.ifPresent(r -> {
                assertFalse(r.contains("Unable to load library"), r);
                assertTrue(r.contains("cannot open shared object file") || r.contains("undefined symbol")
                        || r.contains("wrong ELF") || r.contains("not found"), r);
            });
        }
    }
}
