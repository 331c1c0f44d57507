package org.jmscclpp.ib;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.DeviceType;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.TransportProvider;
import org.jspecify.annotations.Nullable;

/**
 * One communicator's use of InfiniBand: the devices it opened (one per {@code IBn}, opened on
 * first use with the port and GID index of the first config that needed it), the memory regions
 * it registered (looked up by rkey or address when a connection needs a local key or checks a
 * signalled address), and the queue pairs of endpoints not yet connected.
 */
final class IbSession implements TransportProvider.Session {

    /** A queue pair made by {@link #createEndpoint}, waiting for {@link #connect}. */
    private record Pending(Transport transport, IbQueuePair qp, Arena ringArena, MemorySegment ring,
                           IbRegion ringRegion, boolean noAtomic, int pollBatch) {
        void close() {
            qp.close();
            ringRegion.close();
            ringArena.close();
        }
    }

    private final IbTransportProvider provider;
    private final Backend backend;
    private final Map<Transport, IbContext> devices = new EnumMap<>(Transport.class);
    private final Map<Transport, Map<Integer, IbRegion>> regions = new ConcurrentHashMap<>();
    private final Map<Integer, Pending> pending = new HashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    IbSession(IbTransportProvider provider, Backend backend) {
        this.provider = provider;
        this.backend = backend;
    }

    /**
     * Registers host memory with the device of {@code transport}; its handle is
     * {@link IbWire.MemoryHandle} (address, length, rkey). GPU memory is {@link ErrorCode#INVALID_USAGE}:
     * it would need GPUDirect RDMA (nvidia-peermem), which this bridge does not do.
     */
    @Override
    public TransportProvider.Registration registerMemory(DeviceBuffer buffer, Transport transport) {
        if (buffer.device().type() == DeviceType.GPU || !buffer.hostAccessible()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "cannot register " + buffer.device()
                    + " memory for " + transport + ": GPU memory over InfiniBand needs GPUDirect RDMA "
                    + "(nvidia-peermem), which this build does not do; register host memory").phase("registerMemory")
                    .build();
        }
        IbRegion region = IbRegion.register(device(transport, EndpointConfig.Ib.DEFAULT), buffer.address(),
                buffer.size());
        regions.computeIfAbsent(transport, t -> new ConcurrentHashMap<>()).put(region.rkey, region);
        byte[] handle = new IbWire.MemoryHandle(region.address, region.length, region.rkey).encode();
        return new TransportProvider.Registration() {
            private final AtomicBoolean ended = new AtomicBoolean();

            @Override
            public byte[] handle() {
                return handle.clone();
            }

            @Override
            public void close() {
                if (ended.compareAndSet(false, true)) {
                    regions.get(transport).remove(region.rkey, region);
                    region.close();
                }
            }
        };
    }

    /** The region this session registered for {@code transport} that holds [address, address + size), or null. */
    @Nullable IbRegion localRegion(Transport transport, long address, long size) {
        Map<Integer, IbRegion> byKey = regions.get(transport);
        if (byKey != null) {
            for (IbRegion r : byKey.values()) {
                if (r.covers(address, size)) {
                    return r;
                }
            }
        }
        return null;
    }

    /**
     * Creates a queue pair (moved to INIT) and a signal ring on the device of the config's
     * transport; the endpoint's bytes are its {@link IbWire.QpInfo}. HostNoAtomic is asked for when
     * the config's mode says so, or in DEFAULT mode when {@code MSCCLPP_IBV_MODE=host-no-atomic} or
     * the device has no atomics; HOST mode on such a device is {@link ErrorCode#INVALID_USAGE}.
     */
    @Override
    public Endpoint createEndpoint(EndpointConfig config) {
        Transport transport = config.transport();
        EndpointConfig.Ib ib = config.ib();
        IbContext device = device(transport, ib);
        boolean noAtomic = noAtomic(ib.mode(), device, System.getenv(IbTransportProvider.MODE_ENV));
        IbQueuePair qp = new IbQueuePair(device, ib);
        Arena ringArena = Arena.ofShared();
        IbRegion ringRegion = null;
        try {
            qp.init();
            MemorySegment ring = ringArena.allocate((long) IbConnection.RECORD_BYTES * qp.maxRecvWr, 16);
            ringRegion = IbRegion.register(device, ring.address(), ring.byteSize());
            IbWire.QpInfo info = new IbWire.QpInfo(device.port, device.portAttr.linkLayer(), device.portAttr.lid(),
                    device.portAttr.activeMtu(), noAtomic, qp.qpn, qp.psn, device.gid(), ring.address(),
                    ringRegion.rkey, qp.maxRecvWr);
            Pending p = new Pending(transport, qp, ringArena, ring, ringRegion, noAtomic, ib.maxCqPollNum());
            synchronized (pending) {
                if (closed.get()) {
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the IB session is closed")
                            .phase("createEndpoint").build();
                }
                pending.put(qp.qpn, p);
            }
            return Endpoint.local(config, config.device() != null ? config.device() : backend.device(), info.encode());
        } catch (RuntimeException e) {
            qp.close();
            if (ringRegion != null) {
                ringRegion.close();
            }
            ringArena.close();
            throw e;
        }
    }

    /** Whether signals should travel as immediates: see {@link #createEndpoint}. */
    static boolean noAtomic(EndpointConfig.IbMode mode, IbContext device, @Nullable String env) {
        boolean wantsNoAtomic = mode == EndpointConfig.IbMode.HOST_NO_ATOMIC
                || (mode == EndpointConfig.IbMode.DEFAULT && "host-no-atomic".equalsIgnoreCase(String.valueOf(env).strip()));
        boolean wantsAtomic = mode == EndpointConfig.IbMode.HOST
                || (mode == EndpointConfig.IbMode.DEFAULT && "host".equalsIgnoreCase(String.valueOf(env).strip()));
        if (wantsAtomic && !device.atomics()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "RDMA device " + device.name + " has no atomics "
                    + "(atomic_cap IBV_ATOMIC_NONE): use IbMode.HOST_NO_ATOMIC").phase("createEndpoint").build();
        }
        return wantsNoAtomic || !device.atomics();
    }

    @Override
    public Connection connect(Endpoint local, Endpoint remote, ConnectionContext context) {
        IbWire.QpInfo mine = IbWire.QpInfo.decode(local.info());
        IbWire.QpInfo theirs;
        try {
            theirs = IbWire.QpInfo.decode(remote.info());
        } catch (JmscclppException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the peer's endpoint is no IB endpoint: "
                    + e.detail()).rank(context.rank()).peer(context.remoteRank()).tag(context.tag())
                    .phase("connect").build();
        }
        Pending p;
        synchronized (pending) {
            p = pending.remove(mine.qpn());
        }
        if (p == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no unconnected IB endpoint with QP "
                    + mine.qpn() + " in this session").rank(context.rank()).peer(context.remoteRank())
                    .tag(context.tag()).phase("connect").build();
        }
        try {
            return new IbConnection(p.transport(), this, p.qp(), p.ringArena(), p.ring(), p.ringRegion(), local,
                    theirs, p.noAtomic() || theirs.noAtomic(), p.pollBatch(), context);
        } catch (RuntimeException e) {
            p.close();
            throw e;
        }
    }

    /** The device of {@code transport}, opened on first use. */
    private IbContext device(Transport transport, EndpointConfig.Ib ib) {
        synchronized (devices) {
            if (closed.get()) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the IB session is closed").phase("ib")
                        .build();
            }
            IbContext device = devices.get(transport);
            if (device == null) {
                int gid = ib.gidIndex() >= 0 ? ib.gidIndex() : IbDevices.gidIndex(System.getenv(IbDevices.GID_ENV));
                device = IbContext.open(provider.target(transport), ib.port(), gid);
                devices.put(transport, device);
            }
            return device;
        }
    }

    /**
     * Closes unconnected queue pairs and drops the session's hold on its devices; regions and
     * connections still open keep their device until they close.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<Pending> left;
        synchronized (pending) {
            left = new ArrayList<>(pending.values());
            pending.clear();
        }
        left.forEach(Pending::close);
        synchronized (devices) {
            devices.values().forEach(IbContext::release);
            devices.clear();
        }
    }
}
