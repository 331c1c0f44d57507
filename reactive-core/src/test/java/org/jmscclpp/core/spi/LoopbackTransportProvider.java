package org.jmscclpp.core.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jspecify.annotations.Nullable;

/**
 * A {@link TransportProvider} of {@code IB7} for tests of the communicator's dispatch, registered in
 * this module's test {@code META-INF/services}: its endpoints wrap the backend's own
 * {@code HOST_IPC} endpoints and its connections are the backend's, so bytes really move through
 * shared memory, while the communicator only ever sees {@code IB7}. Counts what it was asked to do.
 */
public final class LoopbackTransportProvider implements TransportProvider {

    static final Transport TRANSPORT = Transport.IB7;

    /** When set, the provider says it cannot run, with this reason. */
    static volatile @Nullable String unavailable;
    static final AtomicInteger SESSIONS_OPEN = new AtomicInteger();
    static final AtomicInteger REGISTRATIONS_OPEN = new AtomicInteger();
    static final List<Endpoint> CONNECTED_REMOTES = java.util.Collections.synchronizedList(new ArrayList<>());

    @Override
    public TransportFlags transports() {
        return TransportFlags.of(TRANSPORT);
    }

    @Override
    public Optional<String> unavailableReason(Backend backend, Transport transport) {
        return Optional.ofNullable(unavailable);
    }

    @Override
    public Session open(Backend backend) {
        SESSIONS_OPEN.incrementAndGet();
        return new Session() {
            private boolean closed;

            @Override
            public Registration registerMemory(DeviceBuffer buffer, Transport transport) {
                REGISTRATIONS_OPEN.incrementAndGet();
                byte[] handle = {(byte) transport.ordinal(), 42};
                return new Registration() {
                    private boolean ended;

                    @Override
                    public byte[] handle() {
                        return handle.clone();
                    }

                    @Override
                    public synchronized void close() {
                        if (!ended) {
                            ended = true;
                            REGISTRATIONS_OPEN.decrementAndGet();
                        }
                    }
                };
            }

            @Override
            public Endpoint createEndpoint(EndpointConfig config) {
                Endpoint inner = backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.HOST_IPC));
                return Endpoint.local(config, inner.device(), inner.serialize());
            }

            @Override
            public Connection connect(Endpoint local, Endpoint remote, ConnectionContext context) {
                CONNECTED_REMOTES.add(remote);
                return backend.ipcTransport().open(backend).connect(Endpoint.deserialize(local.info()), Endpoint.deserialize(remote.info()),
                        context);
            }

            @Override
            public synchronized void close() {
                if (!closed) {
                    closed = true;
                    SESSIONS_OPEN.decrementAndGet();
                }
            }
        };
    }
}
