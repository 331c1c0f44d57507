package org.jmscclpp.core.spi;

import java.util.Optional;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;

/**
 * A backend's own transports ({@code HOST_IPC}, {@code CUDA_IPC}) as a {@link TransportProvider}, so that the
 * communicator registers memory and opens every connection through one SPI whatever the transport. A backend
 * returns one from {@link Backend#ipcTransport()}, made with the two things that differ: its endpoints and its
 * connections. Registering memory exports it ({@link Backend#exportMemory}); the registration holds nothing, since
 * the buffer's owner frees what the export made.
 *
 * <p>The provider serves only the backend that made it: {@link #unavailableReason} names the mismatch otherwise.
 */
public final class IpcTransport implements TransportProvider {

    /** This process's end of a connection over one of the backend's transports. */
    @FunctionalInterface
    public interface Endpoints {
        Endpoint create(EndpointConfig config);
    }

    /** Opens a connection between {@code local} (made by {@link Endpoints}) and a peer's endpoint. */
    @FunctionalInterface
    public interface Connector {
        Connection connect(Endpoint local, Endpoint remote, ConnectionContext context);
    }

    private final Backend backend;
    private final Endpoints endpoints;
    private final Connector connector;
    private final Session session = new IpcSession();

    public IpcTransport(Backend backend, Endpoints endpoints, Connector connector) {
        this.backend = backend;
        this.endpoints = endpoints;
        this.connector = connector;
    }

    @Override
    public TransportFlags transports() {
        return backend.ipcTransports();
    }

    @Override
    public Optional<String> unavailableReason(Backend other, Transport transport) {
        if (other != backend) {
            return Optional.of("the " + transport + " transport of one " + backend.name()
                    + " backend cannot serve another backend (" + other.name() + ")");
        }
        if (!transports().has(transport)) {
            return Optional.of("the " + backend.name() + " backend offers " + transports() + ", not " + transport);
        }
        return Optional.empty();
    }

    /** The one session of this backend's transports; closing it is a no-op, since the backend owns the state. */
    @Override
    public Session open(Backend other) {
        if (other != backend) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the IPC transports of one " + backend.name()
                    + " backend cannot serve another backend (" + other.name() + ")").phase("connect").build();
        }
        return session;
    }

    private final class IpcSession implements Session {

        @Override
        public Registration registerMemory(DeviceBuffer buffer, Transport transport) {
            byte[] handle = backend.exportMemory(buffer, transport);
            return new Registration() {
                @Override
                public byte[] handle() {
                    return handle.clone();
                }

                @Override
                public void close() {
                }
            };
        }

        @Override
        public Endpoint createEndpoint(EndpointConfig config) {
            return endpoints.create(config);
        }

        @Override
        public Connection connect(Endpoint local, Endpoint remote, ConnectionContext context) {
            return connector.connect(local, remote, context);
        }

        @Override
        public void close() {
        }
    }
}
