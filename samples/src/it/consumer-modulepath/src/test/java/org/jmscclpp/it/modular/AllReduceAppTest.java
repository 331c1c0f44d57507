package org.jmscclpp.it.modular;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.cuda.CudaBackend;
import org.junit.jupiter.api.Test;

class AllReduceAppTest {

    @Test
    void twoRanksOfOneJvmSumTheirFloats() {
        List<float[]> sums = AllReduceApp.sumOverRanks(
                List.of(new float[] {1, 2, 3, 4, 0.5f}, new float[] {10, 20, 30, 40, -0.25f}));
        assertEquals(2, sums.size());
        for (float[] sum : sums) {
            assertArrayEquals(new float[] {11, 22, 33, 44, 0.25f}, sum);
        }
    }

    @Test
    void theLibraryIsReadAsNamedModules() {
        assertTrue(AllReduceApp.class.getModule().isNamed(), "this test runs on the module path");
        assertEquals("org.jmscclpp.core", Communicator.class.getModule().getName());
        assertEquals("org.jmscclpp.bootstrap", TcpBootstrap.class.getModule().getName());
        assertEquals("org.jmscclpp.nativebridge", CudaBackend.class.getModule().getName());
    }

    @Test
    void onlyTheApiPackagesAreExportedToTheApplication() {
        Module core = Communicator.class.getModule();
        Module me = AllReduceApp.class.getModule();
        assertTrue(core.isExported("org.jmscclpp.core.collective", me));
        assertFalse(core.isExported("org.jmscclpp.core.spi", me), "the SPI is for the jmscclpp modules only");
        assertTrue(core.isExported("org.jmscclpp.core.spi", CudaBackend.class.getModule()));
        assertFalse(core.isExported("org.jmscclpp.core.log", me), "the logging helper is for the jmscclpp modules");
        assertTrue(core.isExported("org.jmscclpp.core.log", TcpBootstrap.class.getModule()));
        assertFalse(TcpBootstrap.class.getModule().isExported("org.jmscclpp.ethernet", me));
        assertFalse(CudaBackend.class.getModule().isExported("org.jmscclpp.nativebridge", me));
    }

    @Test
    void theCudaBackendIsFoundThroughTheModulesProvidesClause() {
        // on a GPU host it opens; elsewhere it is found and says why it cannot run (JNA looked for libcuda)
        assertTrue(Backends.availability().containsKey("cuda"), Backends.availability().toString());
        assertTrue(Backends.availability().get("host").isEmpty(), Backends.availability().toString());
        try (Backend cuda = Backends.named("cuda")) {
            assertEquals("cuda", cuda.name());
        } catch (JmscclppException e) {
            assertEquals(ErrorCode.SYSTEM_ERROR, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("cannot run here"), e.getMessage());
        }
    }
}
