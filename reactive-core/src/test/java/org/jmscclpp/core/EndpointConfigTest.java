package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Random;
import org.jmscclpp.core.spi.Endpoint;
import org.junit.jupiter.api.Test;

class EndpointConfigTest {

    @Test
    void defaultsFollowMscclpp() {
        EndpointConfig c = EndpointConfig.of(Transport.IB3);
        assertEquals(Transport.IB3, c.transport());
        assertNull(c.device());
        assertEquals(-1, c.maxWriteQueueSize());
        EndpointConfig.Ib ib = c.ib();
        assertEquals(1024, ib.maxCqSize());
        assertEquals(256, ib.maxCqPollNum());
        assertEquals(8192, ib.maxSendWr());
        assertEquals(16, ib.maxRecvWr());
        assertEquals(64, ib.maxWrPerSend());
        assertEquals(EndpointConfig.IbMode.DEFAULT, ib.mode());
    }

    @Test
    void builderSetsAndCopiesValues() {
        EndpointConfig c = EndpointConfig.builder(Transport.IB0).device(Device.gpu(3)).maxWriteQueueSize(128)
                .ib(EndpointConfig.Ib.DEFAULT.withMaxCqSize(4096).withMode(EndpointConfig.IbMode.HOST_NO_ATOMIC)
                        .withGidIndex(3).withPort(1).withMaxCqPollNum(8).withMaxSendWr(100).withMaxRecvWr(2)
                        .withMaxWrPerSend(10))
                .build();
        assertEquals(Device.gpu(3), c.device());
        assertEquals(128, c.maxWriteQueueSize());
        assertEquals(new EndpointConfig.Ib(1, 3, 4096, 8, 100, 2, 10, EndpointConfig.IbMode.HOST_NO_ATOMIC), c.ib());
        assertEquals(c, c.toBuilder().build());
        assertEquals(c.hashCode(), c.toBuilder().build().hashCode());
        assertNotEquals(c, c.toBuilder().maxWriteQueueSize(-1).build());
    }

    @Test
    void badValuesAreInvalidUsage() {
        assertInvalid(() -> EndpointConfig.builder(Transport.HOST_IPC).maxWriteQueueSize(0));
        assertInvalid(() -> EndpointConfig.Ib.DEFAULT.withMaxCqSize(0));
        assertInvalid(() -> EndpointConfig.Ib.DEFAULT.withPort(-2));
        assertInvalid(() -> EndpointConfig.Ib.DEFAULT.withMaxWrPerSend(9000));
        assertInvalid(() -> Device.gpu(-1));
        assertInvalid(() -> new Device(DeviceType.CPU, -5));
    }

    @Test
    void endpointRoundTripsAndRejectsGarbage() {
        Endpoint e = new Endpoint(Transport.ETHERNET, Device.gpu(1), 64, 0x1234L, -7L, new byte[] {1, 2, 3});
        Endpoint back = Endpoint.deserialize(e.serialize());
        assertEquals(e, back);
        assertArrayEquals(new byte[] {1, 2, 3}, back.info());

        byte[] good = e.serialize();
        for (int cut = 0; cut < good.length; cut++) {
            byte[] truncated = java.util.Arrays.copyOf(good, cut);
            assertInvalid(() -> Endpoint.deserialize(truncated));
        }
        byte[] longer = java.util.Arrays.copyOf(good, good.length + 1);
        assertInvalid(() -> Endpoint.deserialize(longer));
        byte[] version = good.clone();
        version[4] = 9;
        assertInvalid(() -> Endpoint.deserialize(version));
        byte[] transport = good.clone();
        transport[6] = 99;
        assertInvalid(() -> Endpoint.deserialize(transport));

        Random random = new Random(7);
        for (int i = 0; i < 20_000; i++) {
            byte[] mutated = good.clone();
            mutated[random.nextInt(mutated.length)] ^= (byte) (1 << random.nextInt(8));
            try {
                Endpoint.deserialize(mutated);
            } catch (JmscclppException ex) {
                assertEquals(ErrorCode.INVALID_USAGE, ex.code(), ex.getMessage());
            }
        }
    }

    private static void assertInvalid(org.junit.jupiter.api.function.Executable e) {
        assertEquals(ErrorCode.INVALID_USAGE, assertThrows(JmscclppException.class, e).code());
    }
}
