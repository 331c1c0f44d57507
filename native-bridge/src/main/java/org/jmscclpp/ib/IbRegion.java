package org.jmscclpp.ib;

import com.sun.jna.Pointer;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.nativebridge.Verbs;
import org.jmscclpp.nativebridge.VerbsLayout;

/**
 * One {@code ibv_mr}: host memory registered with a device's protection domain, with its keys.
 * Holds a reference on its {@link IbContext} until {@link #close()} deregisters it (idempotent).
 */
final class IbRegion implements AutoCloseable {

    final IbContext device;
    final long address;
    final long length;
    final int lkey;
    final int rkey;
    private final long mr;
    private final AtomicBoolean closed = new AtomicBoolean();

    private IbRegion(IbContext device, long mr, long address, long length) {
        this.device = device;
        this.mr = mr;
        this.address = address;
        this.length = length;
        Pointer p = new Pointer(mr);
        this.lkey = p.getInt(VerbsLayout.MR_LKEY);
        this.rkey = p.getInt(VerbsLayout.MR_RKEY);
    }

    /**
     * Registers [address, address + length) for local write, remote write and read, and remote
     * atomics where the device does them; SYSTEM_ERROR with errno when the device refuses.
     */
    static IbRegion register(IbContext device, long address, long length) {
        int access = Verbs.ACCESS_LOCAL_WRITE | Verbs.ACCESS_REMOTE_WRITE | Verbs.ACCESS_REMOTE_READ
                | (device.atomics() ? Verbs.ACCESS_REMOTE_ATOMIC : 0);
        device.retain();
        try {
            long mr = Verbs.checkPointer(Verbs.ibv_reg_mr(device.pd, address, length, access),
                    "ibv_reg_mr(" + device.name + ", 0x" + Long.toHexString(address) + ", " + length + " bytes)");
            return new IbRegion(device, mr, address, length);
        } catch (RuntimeException e) {
            device.release();
            throw e;
        }
    }

    /** Whether [start, start + size) lies inside this region. */
    boolean covers(long start, long size) {
        return size >= 0 && start - address >= 0 && start - address <= length && size <= length - (start - address);
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            Verbs.ibv_dereg_mr(mr);
            device.release();
        }
    }
}
