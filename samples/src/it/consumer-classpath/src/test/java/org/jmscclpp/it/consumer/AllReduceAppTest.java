package org.jmscclpp.it.consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.jar.JarFile;
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
    void theJarsComeFromTheRepositoryWithLicenseAndNotice() throws Exception {
        for (Class<?> c : List.of(Communicator.class, TcpBootstrap.class)) {
            String jar = c.getProtectionDomain().getCodeSource().getLocation().getPath();
            assertTrue(jar.endsWith(".jar"), jar);
            try (JarFile file = new JarFile(jar)) {
                assertNotNull(file.getEntry("META-INF/LICENSE"), jar);
                assertNotNull(file.getEntry("META-INF/NOTICE"), jar);
            }
        }
    }
}
