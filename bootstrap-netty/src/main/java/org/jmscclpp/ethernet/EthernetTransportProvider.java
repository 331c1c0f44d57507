package org.jmscclpp.ethernet;

import io.netty.channel.EventLoopGroup;
import java.util.Optional;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Bootstrap;
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
 * {@code MSCCLPP_SOCKET_FAMILY}); see {@link EthernetSession}. It runs on the event loops of the
 * communicator's {@link TcpBootstrap}: the group the service supplied to it, else this JVM's shared one.
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

    /**
     * Binds on the address a {@link TcpBootstrap} listens on, so ETHERNET uses the interface, family
     * and scope the job chose (a job over {@code [::1]} or a link-local address stays there), on the
     * event-loop group the service supplied to it, if any (also for a view of some of its ranks:
     * {@link Bootstrap#base()}); any other bootstrap gets {@link #open(Backend)}'s choice.
     */
    @Override
    public Session open(Backend backend, Bootstrap bootstrap) {
        if (bootstrap.base() instanceof TcpBootstrap tcp) {
            return new EthernetSession(backend, tcp.localAddress().getAddress(), tcp.options().eventLoopGroup());
        }
        return open(backend);
    }
}
