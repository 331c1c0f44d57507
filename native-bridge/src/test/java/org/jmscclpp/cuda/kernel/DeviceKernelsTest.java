package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

class DeviceKernelsTest {

    @Test
    void everyFileIsAMainResourceThatDefinesItsBenchKernels() {
        for (String file : DeviceKernels.FILES) {
            assertEquals(TestKernels.source(DeviceKernels.RESOURCE_ROOT + file + ".cu"), DeviceKernels.source(file));
        }
        assertTrue(DeviceKernels.source("fifo").contains("void fifoPushTimed("));
        assertTrue(DeviceKernels.source("semaphores").contains("void d2dPingPong("));
        assertTrue(DeviceKernels.source("port_channel").contains("void portPingPongPerf("));
        assertTrue(DeviceKernels.source("port_channel").contains("void portBandwidth("));
        assertTrue(DeviceKernels.source("memory_channel").contains("void llPingPong8("));
        assertTrue(DeviceKernels.source("memory_channel").contains("void llPingPong16("));
    }

    @Test
    void anUnknownFileIsInvalidUsage() {
        JmscclppException e = assertThrows(JmscclppException.class, () -> DeviceKernels.source("fifo.cu"));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains("no kernel file 'fifo.cu'"), e.getMessage());
    }
}
