package org.jmscclpp.core.spi;

import java.util.Optional;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;

/**
 * The one connection SPI: how the communicator registers memory with a transport and connects over it. The
 * backend's own transports ({@code HOST_IPC}, {@code CUDA_IPC}) come from {@link Backend#ipcTransport()} (an
 * {@link IpcTransport}); every other one from a module: {@code ETHERNET} (bootstrap-netty) and {@code IB0..IB7}
 * (native-bridge), listed in {@code META-INF/services/org.jmscclpp.core.spi.TransportProvider} (or a module's
 * {@code provides}) and found by {@link TransportProviders}. The backend's own transports always win.
 *
 * <p>A communicator opens one {@link Session} per provider, on the first memory registration or
 * connection that needs it, and closes it with itself.
 */
public interface TransportProvider {

    /** The transports this provider offers. */
    TransportFlags transports();

    /**
     * Empty when memory of {@code backend} can move over {@code transport} here; otherwise why
     * not, naming what is missing ("no RDMA device: /sys/class/infiniband is empty").
     */
    Optional<String> unavailableReason(Backend backend, Transport transport);

    /** Opens this provider's state for one communicator over {@code backend}: only called when available. */
    Session open(Backend backend);

    /**
     * Opens this provider's state for one communicator over {@code backend} whose ranks found each
     * other through {@code bootstrap}, so that the provider may follow the bootstrap (the
     * {@code ETHERNET} provider listens where a {@code TcpBootstrap} listens, on its event loops); by
     * default {@link #open(Backend)}. The communicator calls this one.
     */
    default Session open(Backend backend, Bootstrap bootstrap) {
        return open(backend);
    }

    /**
     * One communicator's use of a provider: what its connections share (listening sockets,
     * event loops, device contexts, protection domains).
     */
    interface Session extends AutoCloseable {

        /**
         * Registers a local buffer for {@code transport} and returns what peers need to address it
         * (an InfiniBand memory region's keys; may be empty). The registration ends when it is
         * closed, which may happen after the session was closed: the session then releases what
         * the registration still needs once it ends.
         */
        Registration registerMemory(DeviceBuffer buffer, Transport transport);

        /** This rank's endpoint for {@code config} (its transport is one of {@link #transports()}). */
        Endpoint createEndpoint(EndpointConfig config);

        /**
         * Connects {@code local} (made by {@link #createEndpoint}) with a peer's {@code remote}
         * endpoint. Both ranks call it; it returns once the connection can be written.
         */
        Connection connect(Endpoint local, Endpoint remote, ConnectionContext context);

        /** Releases what the session holds; connections made from it are closed by their owners first. */
        @Override
        void close();
    }

    /** A buffer registered with a transport; close ends the registration. Idempotent close. */
    interface Registration extends AutoCloseable {

        /** The bytes a peer needs to address the buffer over the transport (carried in {@link RegisteredMemory}). */
        byte[] handle();

        @Override
        void close();
    }
}
