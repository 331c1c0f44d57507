package org.jmscclpp.ib;

import com.sun.jna.Function;
import com.sun.jna.Pointer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ThreadLocalRandom;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.nativebridge.Verbs;
import org.jmscclpp.nativebridge.VerbsLayout;

/**
 * A reliable-connected queue pair with its own send and receive completion queues, and the
 * data-path calls verbs.h inlines ({@code ibv_post_send}, {@code ibv_post_recv},
 * {@code ibv_poll_cq}) reached through the context's ops table. Not thread-safe: its
 * {@link IbConnection} serialises the send side and its receive poller owns the receive side.
 */
final class IbQueuePair implements AutoCloseable {

    final IbContext device;
    final int qpn;
    final int psn;
    final int maxSendWr;
    final int sendCqSize;
    final int maxRecvWr;
    private final long qp;
    private final long sendCq;
    private final long recvCq;
    private final Pointer qpPointer;
    private final Pointer sendCqPointer;
    private final Pointer recvCqPointer;
    private final Function postSend;
    private final Function postRecv;
    private final Function pollCq;
    /** Where a failing post writes the first bad work request; read only to tell that a post failed. */
    private final MemorySegment badWr;
    private final Arena arena = Arena.ofShared();
    private boolean closed;

    /**
     * Creates the CQs and the QP (in RESET) on {@code device} with the queue sizes of {@code ib},
     * cut to the device's limits.
     */
    IbQueuePair(IbContext device, EndpointConfig.Ib ib) {
        this.device = device;
        device.retain();
        long s = 0;
        long r = 0;
        long q = 0;
        try {
            int maxCqe = Math.max(1, device.deviceAttr.maxCqe());
            int maxQpWr = Math.max(1, device.deviceAttr.maxQpWr());
            this.sendCqSize = Math.min(ib.maxCqSize(), maxCqe);
            this.maxSendWr = Math.min(Math.min(ib.maxSendWr(), maxQpWr), sendCqSize);
            this.maxRecvWr = Math.min(Math.min(ib.maxRecvWr(), maxQpWr), maxCqe);
            s = Verbs.checkPointer(Verbs.ibv_create_cq(device.context, sendCqSize, 0, 0, 0),
                    "ibv_create_cq(" + device.name + ", " + sendCqSize + ")");
            r = Verbs.checkPointer(Verbs.ibv_create_cq(device.context, maxRecvWr, 0, 0, 0),
                    "ibv_create_cq(" + device.name + ", " + maxRecvWr + ")");
            MemorySegment init = arena.allocate(VerbsLayout.QP_INIT_ATTR_BYTES, 8);
            VerbsLayout.encodeQpInitAttr(init, s, r, maxSendWr, maxRecvWr);
            q = Verbs.checkPointer(Verbs.ibv_create_qp(device.pd, init.address()), "ibv_create_qp(" + device.name
                    + ", RC, " + maxSendWr + " send / " + maxRecvWr + " receive requests)");
        } catch (RuntimeException e) {
            if (q != 0) {
                Verbs.ibv_destroy_qp(q);
            }
            if (r != 0) {
                Verbs.ibv_destroy_cq(r);
            }
            if (s != 0) {
                Verbs.ibv_destroy_cq(s);
            }
            arena.close();
            device.release();
            throw e;
        }
        this.sendCq = s;
        this.recvCq = r;
        this.qp = q;
        this.qpPointer = new Pointer(q);
        this.sendCqPointer = new Pointer(s);
        this.recvCqPointer = new Pointer(r);
        this.qpn = qpPointer.getInt(VerbsLayout.QP_QP_NUM);
        this.psn = ThreadLocalRandom.current().nextInt(1 << 24);
        long context = qpPointer.getLong(VerbsLayout.QP_CONTEXT);
        this.postSend = Verbs.opsFunction(context, VerbsLayout.CONTEXT_OPS_POST_SEND, "post_send");
        this.postRecv = Verbs.opsFunction(context, VerbsLayout.CONTEXT_OPS_POST_RECV, "post_recv");
        this.pollCq = Verbs.opsFunction(new Pointer(s).getLong(VerbsLayout.CQ_CONTEXT),
                VerbsLayout.CONTEXT_OPS_POLL_CQ, "poll_cq");
        this.badWr = arena.allocate(8, 8);
    }

    /**
     * RESET → INIT: port, remote write, read and (where the device has them) atomic access for the
     * peer. Receives can be posted from here on, before the peer may send.
     */
    void init() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(VerbsLayout.QP_ATTR_BYTES, 8);
            int access = Verbs.ACCESS_LOCAL_WRITE | Verbs.ACCESS_REMOTE_WRITE | Verbs.ACCESS_REMOTE_READ
                    | (device.atomics() ? Verbs.ACCESS_REMOTE_ATOMIC : 0);
            VerbsLayout.encodeQpAttrInit(attr, device.port, access);
            Verbs.check(Verbs.ibv_modify_qp(qp, attr.address(), VerbsLayout.INIT_MASK), what("INIT"));
        }
    }

    /**
     * INIT → RTR → RTS towards {@code remote}: path MTU the smaller of both ports', a GRH to the
     * peer's GID on RoCE, the peer's QP number and first PSN.
     */
    void readyToSend(IbWire.QpInfo remote) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(VerbsLayout.QP_ATTR_BYTES, 8);
            int mtu = Math.min(device.portAttr.activeMtu(), remote.mtu());
            VerbsLayout.encodeQpAttrRtr(attr, mtu, remote.qpn(), remote.psn(), remote.lid(),
                    device.roce() || remote.linkLayer() == Verbs.LINK_LAYER_ETHERNET, remote.gid(), device.gidIndex,
                    device.port);
            Verbs.check(Verbs.ibv_modify_qp(qp, attr.address(), VerbsLayout.RTR_MASK), what("RTR (to QP "
                    + remote.qpn() + ", lid " + remote.lid() + ")"));
            VerbsLayout.encodeQpAttrRts(attr, psn);
            Verbs.check(Verbs.ibv_modify_qp(qp, attr.address(), VerbsLayout.RTS_MASK), what("RTS"));
        }
    }

    private String what(String state) {
        return "ibv_modify_qp(QP " + qpn + " on " + device + " to " + state + ")";
    }

    /** {@code ibv_post_send} of the chain at {@code wr}; 0 or an errno value. */
    int postSend(MemorySegment wr) {
        return postSend.invokeInt(new Object[] {qpPointer, new Pointer(wr.address()), new Pointer(badWr.address())});
    }

    /** {@code ibv_post_recv} of the chain at {@code wr}; 0 or an errno value. */
    int postRecv(MemorySegment wr) {
        return postRecv.invokeInt(new Object[] {qpPointer, new Pointer(wr.address()), new Pointer(badWr.address())});
    }

    /** {@code ibv_poll_cq} on the send CQ into {@code wcs} (at most {@code max} entries); the count, or negative on error. */
    int pollSend(MemorySegment wcs, int max) {
        return pollCq.invokeInt(new Object[] {sendCqPointer, max, new Pointer(wcs.address())});
    }

    /** {@code ibv_poll_cq} on the receive CQ. */
    int pollRecv(MemorySegment wcs, int max) {
        return pollCq.invokeInt(new Object[] {recvCqPointer, max, new Pointer(wcs.address())});
    }

    /** Destroys the QP and CQs and releases the device; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        Verbs.ibv_destroy_qp(qp);
        Verbs.ibv_destroy_cq(sendCq);
        Verbs.ibv_destroy_cq(recvCq);
        arena.close();
        device.release();
    }
}
