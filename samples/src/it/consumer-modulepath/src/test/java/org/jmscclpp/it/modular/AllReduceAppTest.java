package org.jmscclpp.it.modular;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Communicator;
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
    }
}
