package org.jmscclpp.ib;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.spi.ConnectionChecks;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.nativebridge.Verbs;
import org.jmscclpp.nativebridge.VerbsLayout;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A {@link Connection} over one {@code IBn}: a reliable-connected queue pair to the peer's.
 *
 * <ul>
 *   <li>{@link #write} posts RDMA WRITEs (split at 1 GiB) from this rank's registered memory to
 *       the peer's region, addressed by the (address, rkey) its handle carries; it returns once
 *       posted. Every request is signaled, so the send CQ tells exactly which have completed;
 *       when {@code min(maxSendWr, maxCqSize)} are outstanding, {@code write} polls until one
 *       completes (at most 30 s, then {@link ErrorCode#TIMEOUT}).</li>
 *   <li>{@link #updateAndSync} in Host mode posts an RDMA atomic fetch-and-add of
 *       {@code newValue - old} on the peer's token: the QP executes it after every earlier write.
 *       In HostNoAtomic mode (a device without atomics, {@link org.jmscclpp.core.EndpointConfig.IbMode#HOST_NO_ATOMIC},
 *       or {@code MSCCLPP_IBV_MODE=host-no-atomic}) it posts an RDMA WRITE_WITH_IMM of a 16-byte
 *       record (the token's address in the peer, the new value) into the next slot of the peer's
 *       signal ring, with the value's low 32 bits as immediate data; the peer's receive poller sees
 *       the completion (after every earlier write has landed), checks the record against the
 *       immediate and that the address lies in memory it registered for this transport, and stores
 *       the value there with release semantics. Either mode is used by both ends: HostNoAtomic
 *       when either asks for it.</li>
 *   <li>{@link #flush} polls the send CQ (spinning, then parking, on a virtual thread: polling never
 *       blocks in verbs) until every request posted before it has completed.</li>
 * </ul>
 * A failed work completion makes the connection failed: that operation's {@code flush} and every
 * later operation throw {@link ErrorCode#SYSTEM_ERROR} naming {@code ibv_wc_status_str}, the QP
 * number, the device, the peer, rank and tag. Thread-safe.
 */
final class IbConnection implements Connection {

    /** Largest message posted at once; longer writes are split (IB messages stop at 2 GiB - 1). */
    static final long MAX_MESSAGE = 1L << 30;
    /** Bytes of one HostNoAtomic signal record: peer address, value. */
    static final int RECORD_BYTES = 16;
    /** Local source slots for signal records: one is reused only after its request completed. */
    private static final int SOURCE_SLOTS = 64;
    private static final Duration QUEUE_WAIT = Duration.ofSeconds(30);
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private final Transport transport;
    private final IbSession session;
    private final IbQueuePair qp;
    private final Endpoint local;
    private final ConnectionContext context;
    private final IbWire.QpInfo remoteInfo;
    private final boolean noAtomic;
    private final int maxOutstanding;
    private final int pollBatch;

    private final Arena arena = Arena.ofShared();
    private final MemorySegment wr;
    private final MemorySegment sge;
    private final MemorySegment wcs;
    /** [0, 8): fetch-and-add results; [16, 16 + 16 * SOURCE_SLOTS): outgoing signal records. */
    private final MemorySegment scratch;
    private final IbRegion scratchRegion;
    /** This end's signal ring (where the peer's records land) and what the receive side needs. */
    private final Arena ringArena;
    private final MemorySegment ring;
    private final IbRegion ringRegion;
    private final MemorySegment recvWr;
    private final MemorySegment recvSge;
    private final MemorySegment recvWcs;

    private final ReentrantLock sendLock = new ReentrantLock();
    /** Requests posted and completed (all signaled; the send queue completes them in order). Guarded by sendLock. */
    private long posted;
    private long completed;
    private long signals;
    private final long[] sourceSlotRequest = new long[SOURCE_SLOTS];
    private long received;

    private volatile @Nullable JmscclppException failure;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final @Nullable Thread receiver;

    /**
     * Takes over {@code qp} (in INIT), {@code ring} (in {@code ringArena}) and its region, posts the
     * receives of HostNoAtomic mode, moves the QP to RTS towards {@code remoteInfo} and starts
     * the receive poller where signals come as immediates.
     */
    IbConnection(Transport transport, IbSession session, IbQueuePair qp, Arena ringArena, MemorySegment ring,
                 IbRegion ringRegion,
                 Endpoint local, IbWire.QpInfo remoteInfo, boolean noAtomic, int pollBatch, ConnectionContext context) {
        this.transport = transport;
        this.session = session;
        this.qp = qp;
        this.local = local;
        this.context = context;
        this.remoteInfo = remoteInfo;
        this.noAtomic = noAtomic;
        this.ringArena = ringArena;
        this.ring = ring;
        this.ringRegion = ringRegion;
        this.maxOutstanding = Math.max(1, qp.maxSendWr);
        this.pollBatch = Math.max(1, Math.min(pollBatch, qp.sendCqSize));
        this.wr = arena.allocate(VerbsLayout.SEND_WR_BYTES, 8);
        this.sge = arena.allocate(VerbsLayout.SGE_BYTES, 8);
        this.wcs = arena.allocate((long) VerbsLayout.WC_BYTES * this.pollBatch, 8);
        this.recvWr = arena.allocate(VerbsLayout.RECV_WR_BYTES, 8);
        this.recvSge = arena.allocate(VerbsLayout.SGE_BYTES, 8);
        this.recvWcs = arena.allocate((long) VerbsLayout.WC_BYTES * qp.maxRecvWr, 8);
        this.scratch = arena.allocate(16 + (long) RECORD_BYTES * SOURCE_SLOTS, 16);
        this.scratchRegion = IbRegion.register(qp.device, scratch.address(), scratch.byteSize());
        java.util.Arrays.fill(sourceSlotRequest, -1);
        try {
            if (noAtomic) {
                for (int slot = 0; slot < ringSlots(); slot++) {
                    postReceive(slot);
                }
            }
            qp.readyToSend(remoteInfo);
        } catch (RuntimeException e) {
            scratchRegion.close();
            arena.close();
            throw e;
        }
        if (noAtomic) {
            receiver = Thread.ofPlatform().daemon().name("jmscclpp-ib-recv-" + qp.qpn).start(this::receive);
        } else {
            receiver = null;
        }
    }

    private int ringSlots() {
        return (int) (ring.byteSize() / RECORD_BYTES);
    }

    @Override
    public void write(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        String phase = "write";
        checkUsable(phase);
        IbWire.MemoryHandle target = remote(dst, dstOffset, size, phase, "destination");
        IbRegion from = source(src, srcOffset, size, phase);
        long localAddress = src.address() + srcOffset;
        long remoteAddress = target.address() + dstOffset;
        for (long done = 0; done < size; done += MAX_MESSAGE) {
            int chunk = (int) Math.min(MAX_MESSAGE, size - done);
            long at = done;
            post(phase, id -> {
                VerbsLayout.encodeSge(sge, 0, localAddress + at, chunk, from.lkey);
                VerbsLayout.encodeRdmaWr(wr, id, sge.address(), Verbs.WR_RDMA_WRITE, Verbs.SEND_SIGNALED, 0,
                        remoteAddress + at, target.rkey());
            });
        }
    }

    @Override
    public void updateAndSync(RegisteredMemory dst, long dstOffset, AtomicLong localToken, long newValue) {
        String phase = "updateAndSync";
        checkUsable(phase);
        IbWire.MemoryHandle target = remote(dst, dstOffset, Long.BYTES, phase, "token");
        long remoteAddress = target.address() + dstOffset;
        if ((remoteAddress & (Long.BYTES - 1)) != 0) {
            throw ConnectionChecks.invalid(context, phase, "token offset " + dstOffset + " of " + dst
                    + " is not 8-byte aligned: RDMA atomics need an aligned 64-bit word");
        }
        long old = localToken.getAndSet(newValue);
        if (!noAtomic) {
            post(phase, id -> {
                VerbsLayout.encodeSge(sge, 0, scratch.address(), Long.BYTES, scratchRegion.lkey);
                VerbsLayout.encodeFetchAddWr(wr, id, sge.address(), Verbs.SEND_SIGNALED, remoteAddress,
                        newValue - old, target.rkey());
            });
            return;
        }
        sendLock.lock();
        try {
            int slot = (int) (signals % SOURCE_SLOTS);
            long previous = sourceSlotRequest[slot];
            if (previous >= 0 && !awaitLocked(() -> completed > previous)) {
                throw timeout(phase, "signal slot " + slot + " still in flight");
            }
            long record = 16 + (long) slot * RECORD_BYTES;
            scratch.set(ValueLayout.JAVA_LONG, record, remoteAddress);
            scratch.set(ValueLayout.JAVA_LONG, record + 8, newValue);
            long ringSlot = signals % remoteInfo.ringSlots();
            long requestId = post(phase, id -> {
                VerbsLayout.encodeSge(sge, 0, scratch.address() + record, RECORD_BYTES, scratchRegion.lkey);
                VerbsLayout.encodeRdmaWr(wr, id, sge.address(), Verbs.WR_RDMA_WRITE_WITH_IMM, Verbs.SEND_SIGNALED,
                        (int) newValue, remoteInfo.ringAddress() + ringSlot * RECORD_BYTES, remoteInfo.ringRkey());
            });
            sourceSlotRequest[slot] = requestId;
            signals++;
        } finally {
            sendLock.unlock();
        }
    }

    /**
     * Completes once every request posted before the call has completed, polling the send CQ on a
     * virtual thread; {@link ErrorCode#TIMEOUT} after {@code timeout}; SYSTEM_ERROR naming the work
     * completion status when one failed.
     */
    @Override
    public Mono<Void> flush(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return Mono.defer(() -> {
            checkUsable("flush");
            long target;
            sendLock.lock();
            try {
                target = posted;
                pollLocked("flush");
                if (completed >= target) {
                    return Mono.<Void>empty();
                }
            } finally {
                sendLock.unlock();
            }
            return Waiting.until(() -> {
                if (!sendLock.tryLock()) {
                    return false;
                }
                try {
                    checkUsable("flush");
                    pollLocked("flush");
                    return completed >= target;
                } finally {
                    sendLock.unlock();
                }
            }, timeout, () -> timeout("flush", (target - completed) + " of the requests posted before flush"
                    + " still incomplete after " + timeout.toMillis() + " ms"));
        });
    }

    /** Encodes one request with {@code encoder} (given its id) and posts it, waiting for room first; returns its id. */
    private long post(String phase, java.util.function.LongConsumer encoder) {
        sendLock.lock();
        try {
            if (posted - completed >= maxOutstanding && !awaitLocked(() -> posted - completed < maxOutstanding)) {
                throw timeout(phase, maxOutstanding + " requests outstanding for " + QUEUE_WAIT.toSeconds() + " s");
            }
            long id = posted;
            encoder.accept(id);
            int rc = qp.postSend(wr);
            if (rc != 0) {
                throw error(phase, "ibv_post_send on QP " + qp.qpn + " failed: errno " + rc);
            }
            posted++;
            return id;
        } finally {
            sendLock.unlock();
        }
    }

    /** Polls (lock held) until {@code condition} holds or {@link #QUEUE_WAIT} passes; throws a recorded failure. */
    private boolean awaitLocked(java.util.function.BooleanSupplier condition) {
        return Waiting.await(() -> {
            pollLocked("poll");
            return condition.getAsBoolean();
        }, Waiting.deadline(QUEUE_WAIT));
    }

    /** Takes what the send CQ holds (lock held); a failed completion becomes the connection's failure. */
    private void pollLocked(String phase) {
        JmscclppException failed = failure;
        if (failed != null) {
            throw failed;
        }
        int n = qp.pollSend(wcs, pollBatch);
        if (n < 0) {
            throw fail(error(phase, "ibv_poll_cq on the send CQ of QP " + qp.qpn + " failed: " + n));
        }
        VarHandle.acquireFence();
        for (int i = 0; i < n; i++) {
            VerbsLayout.Wc wc = VerbsLayout.Wc.decode(wcs, (long) i * VerbsLayout.WC_BYTES);
            completed = Math.max(completed, wc.wrId() + 1);
            if (wc.status() != Verbs.WC_SUCCESS) {
                throw fail(error(phase, "work request " + wc.wrId() + " on QP " + qp.qpn + " (" + qp.device
                        + ") failed: " + Verbs.statusString(wc.status()) + ", vendor error 0x"
                        + Integer.toHexString(wc.vendorErr())));
            }
        }
    }

    /** The receive poller of HostNoAtomic mode: applies the peer's signal records until closed. */
    private void receive() {
        while (!closed.get() && failure == null) {
            try {
                Waiting.await(() -> closed.get() || receiveOnce() > 0, Waiting.deadline(Duration.ofSeconds(1)));
            } catch (JmscclppException e) {
                fail(e);
            }
        }
    }

    private int receiveOnce() {
        int n = qp.pollRecv(recvWcs, qp.maxRecvWr);
        if (n < 0) {
            throw error("receive", "ibv_poll_cq on the receive CQ of QP " + qp.qpn + " failed: " + n);
        }
        VarHandle.acquireFence();
        for (int i = 0; i < n; i++) {
            VerbsLayout.Wc wc = VerbsLayout.Wc.decode(recvWcs, (long) i * VerbsLayout.WC_BYTES);
            if (wc.status() != Verbs.WC_SUCCESS) {
                if (closed.get()) {
                    return n;
                }
                throw error("receive", "receive on QP " + qp.qpn + " (" + qp.device + ") failed: "
                        + Verbs.statusString(wc.status()) + ", vendor error 0x" + Integer.toHexString(wc.vendorErr()));
            }
            if (wc.opcode() != Verbs.WC_RECV_RDMA_WITH_IMM) {
                throw error("receive", "unexpected completion opcode " + wc.opcode() + " on QP " + qp.qpn);
            }
            int slot = (int) (received % ringSlots());
            long address = ring.get(ValueLayout.JAVA_LONG, (long) slot * RECORD_BYTES);
            long value = ring.get(ValueLayout.JAVA_LONG, (long) slot * RECORD_BYTES + 8);
            if ((int) value != wc.immData()) {
                throw error("receive", "signal record in slot " + slot + " (value " + value + ") does not match its "
                        + "immediate data " + Integer.toUnsignedString(wc.immData()));
            }
            if ((address & (Long.BYTES - 1)) != 0 || session.localRegion(transport, address, Long.BYTES) == null) {
                throw error("receive", "the peer signalled address 0x" + Long.toHexString(address)
                        + ", which is no aligned word of memory this rank registered for " + transport);
            }
            WORD.setRelease(MemorySegment.ofAddress(address).reinterpret(Long.BYTES), 0L, value);
            received++;
            postReceive(slot);
        }
        return n;
    }

    private void postReceive(int slot) {
        VerbsLayout.encodeSge(recvSge, 0, ring.address() + (long) slot * RECORD_BYTES, RECORD_BYTES, ringRegion.lkey);
        VerbsLayout.encodeRecvWr(recvWr, 0, slot, recvSge.address());
        int rc = qp.postRecv(recvWr);
        if (rc != 0) {
            throw error("receive", "ibv_post_recv on QP " + qp.qpn + " failed: errno " + rc);
        }
    }

    /** The peer memory's IB handle, checked: registered for this transport, the range inside it. */
    private IbWire.MemoryHandle remote(RegisteredMemory dst, long offset, long size, String phase, String which) {
        try {
            dst.checkRange(offset, size, phase);
        } catch (JmscclppException e) {
            throw ConnectionChecks.invalid(context, phase, which + " " + e.detail());
        }
        byte[] handle = dst.transports().has(transport) ? dst.handle(transport) : null;
        if (handle == null) {
            throw ConnectionChecks.invalid(context, phase, "the " + which + " is not registered for " + transport
                    + " (it has " + dst.transports() + ")");
        }
        IbWire.MemoryHandle h = IbWire.MemoryHandle.decode(handle);
        if (!h.covers(h.address() + offset, size)) {
            throw ConnectionChecks.invalid(context, phase, which + " range [" + offset + ", +" + size
                    + ") exceeds the registered region of " + h.length() + " bytes");
        }
        return h;
    }

    /** The local region behind {@code src}: memory of this process registered for this transport in this session. */
    private IbRegion source(RegisteredMemory src, long offset, long size, String phase) {
        try {
            src.checkRange(offset, size, phase);
        } catch (JmscclppException e) {
            throw ConnectionChecks.invalid(context, phase, "source " + e.detail());
        }
        if (!src.isMapped()) {
            throw ConnectionChecks.invalid(context, phase, "the source is not memory of this process: " + src);
        }
        IbRegion region = session.localRegion(transport, src.address() + offset, size);
        if (region == null) {
            throw ConnectionChecks.invalid(context, phase, "the source is not registered for " + transport
                    + " by this communicator: " + src);
        }
        return region;
    }

    private void checkUsable(String phase) {
        if (closed.get()) {
            throw ConnectionChecks.invalid(context, phase, "the connection is closed");
        }
        JmscclppException failed = failure;
        if (failed != null) {
            throw failed;
        }
    }

    private JmscclppException fail(JmscclppException e) {
        if (failure == null) {
            failure = e;
        }
        return e;
    }

    private JmscclppException error(String phase, String detail) {
        return JmscclppException.builder(ErrorCode.SYSTEM_ERROR, detail + " (" + transport + " to rank "
                + context.remoteRank() + ")").rank(context.rank()).peer(context.remoteRank()).tag(context.tag())
                .phase(phase).build();
    }

    private JmscclppException timeout(String phase, String detail) {
        return JmscclppException.builder(ErrorCode.TIMEOUT, detail + " on QP " + qp.qpn + " (" + transport
                + " to rank " + context.remoteRank() + ")").rank(context.rank()).peer(context.remoteRank())
                .tag(context.tag()).phase(phase).build();
    }

    @Override
    public Transport transport() {
        return transport;
    }

    @Override
    public Transport remoteTransport() {
        return transport;
    }

    @Override
    public Device localDevice() {
        return local.device();
    }

    @Override
    public ConnectionContext context() {
        return context;
    }

    @Override
    public int maxWriteQueueSize() {
        return maxOutstanding;
    }

    /** Whether signals travel as write-with-immediate records (HostNoAtomic) rather than atomics. */
    boolean noAtomic() {
        return noAtomic;
    }

    /**
     * Stops the receive poller, then destroys the QP and its CQs and deregisters the connection's
     * own regions; requests still in flight are dropped. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        if (receiver != null) {
            try {
                if (!receiver.join(Duration.ofSeconds(10))) {
                    receiver.interrupt();
                    receiver.join(Duration.ofSeconds(5));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        sendLock.lock();
        try {
            qp.close();
            ringRegion.close();
            scratchRegion.close();
            arena.close();
            ringArena.close();
        } finally {
            sendLock.unlock();
        }
    }

    @Override
    public String toString() {
        return "IbConnection[" + transport + ", QP " + qp.qpn + " -> " + remoteInfo.qpn() + ", " + context
                + (noAtomic ? ", HostNoAtomic" : ", Host") + (closed.get() ? ", closed" : "") + "]";
    }
}
