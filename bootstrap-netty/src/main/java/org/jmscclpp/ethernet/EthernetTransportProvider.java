package org.jmscclpp.ethernet;

import java.util.Optional;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.spi.TransportProvider;

/**
 * Offers {@link Transport#ETHERNET} to the communicator: TCP connections over Netty between ranks
 * on any hosts, for the host backend (shared memory sent as it is) and the CUDA backend (device
 * memory staged through pinned host memory). Listed in this module's
 * {@code META-INF/services/org.jmscclpp.core.spi.TransportProvider}; the communicator opens one
 * {@link EthernetSession} per communicator. What travels on the sockets is described once, in
 * {@link EthernetWire}.
 *
 * <p>The listening socket follows the bootstrap's interface choice ({@code MSCCLPP_SOCKET_IFNAME},
 * {@code MSCCLPP_SOCKET_FAMILY}); see {@link EthernetSession}.
 */
public final class EthernetTransportProvider implements TransportProvider {

    /** Called by {@link java.util.ServiceLoader}. */
    public EthernetTransportProvider() {
    }

    @Override
    public TransportFlags transports() {
        return TransportFlags.of(Transport.ETHERNET);
    }

    /**
     * Empty for {@code ETHERNET} on any backend: the host reads and writes the memory directly when
     * it can, and moves the rest with the backend's copies.
     */
    @Override
    public Optional<String> unavailableReason(Backend backend, Transport transport) {
        return transport == Transport.ETHERNET ? Optional.empty()
                : Optional.of("the ETHERNET provider offers ETHERNET only, not " + transport);
    }

    /** Binds this communicator's listening socket; SYSTEM_ERROR when it cannot. */
    @Override
    public Session open(Backend backend) {
        return new EthernetSession(backend);
    }
}
