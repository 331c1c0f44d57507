package org.jmscclpp.ib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Optional;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.spi.TransportProvider;
import org.jmscclpp.core.spi.TransportProviders;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * IB through the communicator where this host has no usable RDMA device (every machine of this
 * project): registering memory or connecting over IB0 is a clear INVALID_USAGE naming what is
 * missing, never a crash. Skipped where IB0 is usable (IbSoftRoceTest covers that case).
 */
class IbCommunicatorTest {

    @TempDir
    Path dir;

    @Test
    void theProviderIsFoundForEveryIbTransport() {
        for (int i = 0; i < 8; i++) {
            assertInstanceOf(IbTransportProvider.class, TransportProviders.find(Transport.ib(i)));
        }
    }

    @Test
    void withoutADeviceRegisteringAndConnectingNameWhatIsMissing() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir); DeviceBuffer b = g.backend.allocate(4096)) {
            TransportProvider provider = TransportProviders.find(Transport.IB0);
            Optional<String> reason = provider.unavailableReason(g.backend, Transport.IB0);
            Assumptions.assumeTrue(reason.isPresent(), "IB0 is usable here: IbSoftRoceTest runs it");
            System.out.println("IB0 here: " + reason.get());
            assertTrue(reason.get().contains("libibverbs") || reason.get().contains("no RDMA device")
                    || reason.get().contains("absent") || reason.get().contains("port"), reason.get());

            JmscclppException r = assertThrows(JmscclppException.class,
                    () -> g.comm(0).registerMemory(b, TransportFlags.of(Transport.IB0)));
            assertEquals(ErrorCode.INVALID_USAGE, r.code());
            assertTrue(r.getMessage().contains("IB0 cannot be used here") && r.getMessage().contains(reason.get()),
                    r.getMessage());

            JmscclppException c = assertThrows(JmscclppException.class,
                    () -> g.comm(0).connect(1, 0, EndpointConfig.of(Transport.IB0)).block(CommunicatorGroup.WAIT));
            assertEquals(ErrorCode.INVALID_USAGE, c.code());
            assertTrue(c.getMessage().contains(reason.get()), c.getMessage());

            // IB7 is the eighth device: absent wherever IB0 is
            Optional<String> seventh = provider.unavailableReason(g.backend, Transport.IB7);
            assertTrue(seventh.isPresent());
        }
    }
}
