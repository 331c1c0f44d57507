package org.jmscclpp.ib;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.spi.TransportProvider;
import org.jmscclpp.nativebridge.Verbs;

/**
 * InfiniBand verbs ({@code IB0..IB7}) for host memory, through libibverbs: registered in this
 * module's {@code META-INF/services}. {@code IBn} is the n-th entry of {@code MSCCLPP_HCA_DEVICES}
 * (comma list of device names, each with an optional {@code :port}) or else the n-th RDMA device;
 * {@code MSCCLPP_IB_GID_INDEX} (default 0) picks the GID on RoCE ports; {@code MSCCLPP_IBV_MODE}
 * ({@code host} or {@code host-no-atomic}) picks how signals travel when the endpoint config leaves
 * the mode at DEFAULT. See {@link IbConnection} for what the connections do.
 */
public final class IbTransportProvider implements TransportProvider {

    /** Environment variable choosing the signalling mode: {@code host} (atomics) or {@code host-no-atomic}. */
    public static final String MODE_ENV = "MSCCLPP_IBV_MODE";

    private static final TransportFlags ALL = TransportFlags.of(Transport.IB0, Transport.IB1, Transport.IB2,
            Transport.IB3, Transport.IB4, Transport.IB5, Transport.IB6, Transport.IB7);

    /** Transports whose device and port were found usable once in this JVM. */
    private final Map<Transport, Boolean> usable = new ConcurrentHashMap<>();

    @Override
    public TransportFlags transports() {
        return ALL;
    }

    /**
     * Empty when {@code transport}'s device exists and its port is ACTIVE; otherwise exactly what
     * is missing: libibverbs not loadable, no RDMA device at all, device {@code IBn} absent (with
     * the devices there are), or its port not ACTIVE (with the port's state).
     */
    @Override
    public Optional<String> unavailableReason(Backend backend, Transport transport) {
        if (!transport.isIb()) {
            return Optional.of(transport + " is not an InfiniBand transport");
        }
        Optional<String> library = Verbs.unavailableReason();
        if (library.isPresent() || usable.containsKey(transport)) {
            return library;
        }
        try {
            IbDevices.Resolution r = IbDevices.resolve(transport, IbDevices.deviceNames(),
                    System.getenv(IbDevices.HCA_ENV));
            if (r.reason().isPresent()) {
                return r.reason();
            }
            IbDevices.Target target = r.target();
            IbContext.open(target, -1, IbDevices.gidIndex(System.getenv(IbDevices.GID_ENV))).release();
            usable.put(transport, Boolean.TRUE);
            return Optional.empty();
        } catch (JmscclppException e) {
            return Optional.of(transport + ": " + e.detail());
        }
    }

    /** The device and port of {@code transport}; INVALID_USAGE naming what is missing. */
    IbDevices.Target target(Transport transport) {
        IbDevices.Resolution r = IbDevices.resolve(transport, IbDevices.deviceNames(), System.getenv(IbDevices.HCA_ENV));
        IbDevices.Target target = r.target();
        if (target == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, String.valueOf(r.missing())).phase("ib").build();
        }
        return target;
    }

    @Override
    public Session open(Backend backend) {
        return new IbSession(this, backend);
    }
}
