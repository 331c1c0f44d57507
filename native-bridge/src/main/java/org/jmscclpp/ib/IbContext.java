package org.jmscclpp.ib;

import com.sun.jna.Pointer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.Verbs;
import org.jmscclpp.nativebridge.VerbsLayout;

/**
 * One opened RDMA device for one {@code IBn}: its {@code ibv_context}, a protection domain, the
 * port in use with its attributes and the GID at the configured index, and the device's limits.
 * Reference-counted: the session holds one reference and every memory region and queue pair made
 * on it another, so the device closes only once the last of them is released, even when the
 * session closed first.
 */
final class IbContext {

    private static final String[] PORT_STATES = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};

    final String name;
    final long context;
    final long pd;
    final int port;
    final VerbsLayout.PortAttr portAttr;
    final VerbsLayout.DeviceAttr deviceAttr;
    final int gidIndex;
    private final byte[] gid;
    private int references = 1;

    private IbContext(String name, long context, long pd, int port, VerbsLayout.PortAttr portAttr,
                      VerbsLayout.DeviceAttr deviceAttr, int gidIndex, byte[] gid) {
        this.name = name;
        this.context = context;
        this.pd = pd;
        this.port = port;
        this.portAttr = portAttr;
        this.deviceAttr = deviceAttr;
        this.gidIndex = gidIndex;
        this.gid = gid;
    }

    /**
     * Opens device {@code target.name()} and picks its port: {@code target.port()} when given, else
     * {@code configPort} when not -1, else the first ACTIVE port. A port that is not ACTIVE is
     * {@link ErrorCode#SYSTEM_ERROR} naming its state; so is any failing verbs call, with errno.
     */
    static IbContext open(IbDevices.Target target, int configPort, int gidIndex) {
        long context = openByName(target.name());
        long pd = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(VerbsLayout.DEVICE_ATTR_BYTES, 8);
            Verbs.check(Verbs.ibv_query_device(context, attr.address()), "ibv_query_device(" + target.name() + ")");
            VerbsLayout.DeviceAttr device = VerbsLayout.DeviceAttr.decode(attr);
            int port = target.port() > 0 ? target.port() : configPort > 0 ? configPort : -1;
            VerbsLayout.PortAttr portAttr;
            if (port > 0) {
                portAttr = queryPort(arena, context, target.name(), port);
                if (portAttr.state() != Verbs.PORT_ACTIVE) {
                    throw portDown(target.name(), port, portAttr.state());
                }
            } else {
                List<String> states = new ArrayList<>();
                portAttr = null;
                for (int p = 1; p <= device.physPortCount() && portAttr == null; p++) {
                    VerbsLayout.PortAttr a = queryPort(arena, context, target.name(), p);
                    if (a.state() == Verbs.PORT_ACTIVE) {
                        portAttr = a;
                        port = p;
                    } else {
                        states.add("port " + p + " " + stateName(a.state()));
                    }
                }
                if (portAttr == null) {
                    throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "no ACTIVE port on RDMA device "
                            + target.name() + " (" + String.join(", ", states) + ")").phase("ib").build();
                }
            }
            MemorySegment gid = arena.allocate(VerbsLayout.GID_BYTES, 8);
            Verbs.check(Verbs.ibv_query_gid(context, (byte) port, gidIndex, gid.address()),
                    "ibv_query_gid(" + target.name() + ", port " + port + ", index " + gidIndex + ")");
            pd = Verbs.checkPointer(Verbs.ibv_alloc_pd(context), "ibv_alloc_pd(" + target.name() + ")");
            return new IbContext(target.name(), context, pd, port, portAttr, device, gidIndex,
                    gid.toArray(ValueLayout.JAVA_BYTE));
        } catch (RuntimeException e) {
            if (pd != 0) {
                Verbs.ibv_dealloc_pd(pd);
            }
            Verbs.ibv_close_device(context);
            throw e;
        }
    }

    private static long openByName(String name) {
        int[] count = new int[1];
        long list = Verbs.checkPointer(Verbs.ibv_get_device_list(count), "ibv_get_device_list");
        try {
            Pointer devices = new Pointer(list);
            for (int i = 0; i < count[0]; i++) {
                long device = devices.getLong((long) i * Long.BYTES);
                if (Verbs.deviceName(device).equals(name)) {
                    return Verbs.checkPointer(Verbs.ibv_open_device(device), "ibv_open_device(" + name + ")");
                }
            }
        } finally {
            Verbs.ibv_free_device_list(list);
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "RDMA device " + name + " is absent")
                .phase("ib").build();
    }

    private static VerbsLayout.PortAttr queryPort(Arena arena, long context, String name, int port) {
        MemorySegment attr = arena.allocate(VerbsLayout.PORT_ATTR_BYTES, 8);
        Verbs.check(Verbs.ibv_query_port(context, (byte) port, attr.address()),
                "ibv_query_port(" + name + ", port " + port + ")");
        return VerbsLayout.PortAttr.decode(attr);
    }

    /** SYSTEM_ERROR: port {@code port} of {@code name} is in {@code state}, not ACTIVE. */
    static JmscclppException portDown(String name, int port, int state) {
        return JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "port " + port + " of RDMA device " + name + " is "
                + stateName(state) + ", not ACTIVE").phase("ib").build();
    }

    static String stateName(int state) {
        return state >= 0 && state < PORT_STATES.length ? PORT_STATES[state] : "state " + state;
    }

    /** Whether the device does RDMA atomics (its {@code atomic_cap} is not {@code IBV_ATOMIC_NONE}). */
    boolean atomics() {
        return deviceAttr.atomicCap() != Verbs.ATOMIC_NONE;
    }

    /** Whether the port is RoCE (Ethernet link layer): its peers are addressed by GID, not LID. */
    boolean roce() {
        return portAttr.linkLayer() == Verbs.LINK_LAYER_ETHERNET;
    }

    byte[] gid() {
        return gid.clone();
    }

    /** Takes a reference for a memory region or queue pair; SYSTEM_ERROR if the device was already closed. */
    synchronized void retain() {
        if (references == 0) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "RDMA device " + name + " is closed")
                    .phase("ib").build();
        }
        references++;
    }

    /** Drops a reference; the last one frees the protection domain and closes the device. */
    synchronized void release() {
        if (references == 0) {
            return;
        }
        if (--references == 0) {
            Verbs.ibv_dealloc_pd(pd);
            Verbs.ibv_close_device(context);
        }
    }

    @Override
    public String toString() {
        return name + ":" + port + (roce() ? " (RoCE, gid index " + gidIndex + ")" : " (lid " + portAttr.lid() + ")");
    }
}
