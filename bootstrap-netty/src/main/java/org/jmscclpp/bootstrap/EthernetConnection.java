package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionChecks;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.Endpoint;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;

/**
 * A {@link Connection} over {@link Transport#ETHERNET}: one TCP connection from this rank to the
 * peer's {@link EthernetSession} listener, carrying the frames of {@link EthernetWire}.
 *
 * <p>{@link #write} cuts the transfer into chunks of at most {@value EthernetWire#MAX_CHUNK}
 * bytes and queues one WRITE frame per chunk on the socket, then returns; the bytes are read when
 * the socket sends them. Memory the host can read (the host backend's shared memory, pinned
 * memory) is sent as it is, without a copy, so the source must stay unchanged until a
 * {@link #flush} completes, as with any asynchronous transport. Device memory is first copied by
 * the backend into pinned staging chunks ({@link org.jmscclpp.core.Backend#allocateHostVisible});
 * at most {@value #STAGING_SLOTS} are in flight. Writers wait while the socket holds more than its
 * high water mark ({@link EthernetSession#WATER_MARK}) or no staging chunk is free, at most
 * {@value #WRITE_WAIT_SECONDS} s ({@link ErrorCode#TIMEOUT}); a write issued on an event-loop
 * thread does not wait.
 *
 * <p>{@link #updateAndSync} sends a TOKEN frame, which the peer stores after every earlier frame.
 * {@link #flush} completes once the peer has acknowledged every frame sent before it (acks carry
 * the highest sequence number applied); it completes on the connection's I/O thread. A peer that
 * rejects a frame, dies or closes the socket turns every waiting and later operation into
 * {@link ErrorCode#REMOTE_ERROR} naming the peer and, when the peer gave one, its reason.
 */
final class EthernetConnection implements Connection {

    static final int STAGING_SLOTS = 8;
    static final int WRITE_WAIT_SECONDS = 30;

    private record Waiter(long sequence, MonoSink<Void> sink) {
    }

    private final EthernetSession session;
    private final Endpoint local;
    private final ConnectionContext context;
    private final CompletableFuture<Void> accepted = new CompletableFuture<>();
    private final ReentrantLock sendLock = new ReentrantLock();
    private final ReentrantLock writability = new ReentrantLock();
    private final Condition writable = writability.newCondition();
    private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final LinkedBlockingQueue<DeviceBuffer> freeSlots = new LinkedBlockingQueue<>();
    private final AtomicLong slotsMade = new AtomicLong();
    private @Nullable Channel channel;
    /** Last sequence number sent; written under sendLock. */
    private volatile long sent;
    private volatile long acked;
    private volatile @Nullable JmscclppException failure;

    EthernetConnection(EthernetSession session, Endpoint local, ConnectionContext context) {
        this.session = session;
        this.local = local;
        this.context = context;
    }

    EthernetSession session() {
        return session;
    }

    void attach(Channel ch) {
        this.channel = ch;
    }

    CompletableFuture<Void> accepted() {
        return accepted;
    }

    @Nullable ChannelFuture closeFuture() {
        Channel ch = channel;
        return ch == null ? null : ch.closeFuture();
    }

    // ------------------------------------------------------------------ writing

    @Override
    public void write(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        String phase = "write";
        long region = checkDestination(dst, dstOffset, size, phase);
        try {
            src.checkRange(srcOffset, size, phase);
        } catch (JmscclppException e) {
            throw ConnectionChecks.invalid(context, phase, "source " + e.detail());
        }
        if (!src.isMapped()) {
            throw ConnectionChecks.invalid(context, phase, "the source is not memory of this process: " + src);
        }
        DeviceBuffer source;
        try {
            source = src.buffer();
        } catch (JmscclppException e) {
            throw ConnectionChecks.invalid(context, phase, "source: " + e.detail());
        }
        boolean direct = source.hostAccessible() && !session.stageAlways();
        MemorySegment segment = direct ? source.hostSegment() : MemorySegment.NULL;
        sendLock.lock();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WRITE_WAIT_SECONDS);
            for (long done = 0; done < size; ) {
                int n = (int) Math.min(EthernetWire.MAX_CHUNK, size - done);
                awaitWritable(deadline, phase);
                Channel ch = openChannel(phase);
                long seq = sent + 1;
                ByteBuf header = EthernetWire.writeHeader(ch.alloc(), n, seq, region, dstOffset + done);
                if (direct) {
                    ByteBuf body = Unpooled.wrappedBuffer(segment.asSlice(srcOffset + done, n).asByteBuffer());
                    sent = seq;
                    ch.writeAndFlush(Unpooled.wrappedUnmodifiableBuffer(header, body), ch.voidPromise());
                } else {
                    DeviceBuffer slot;
                    try {
                        slot = takeSlot(deadline, phase);
                        session.backend().copy(slot, 0, source, srcOffset + done, n);
                    } catch (RuntimeException e) {
                        header.release();
                        throw e;
                    }
                    ByteBuf body = Unpooled.wrappedBuffer(slot.hostSegment().asSlice(0, n).asByteBuffer());
                    sent = seq;
                    ch.writeAndFlush(Unpooled.wrappedUnmodifiableBuffer(header, body))
                            .addListener(f -> giveSlot(slot));
                }
                done += n;
            }
        } finally {
            sendLock.unlock();
        }
    }

    @Override
    public void updateAndSync(RegisteredMemory dst, long dstOffset, AtomicLong localToken, long newValue) {
        String phase = "updateAndSync";
        long region = checkDestination(dst, dstOffset, Long.BYTES, phase);
        if ((dstOffset & (Long.BYTES - 1)) != 0 || (dst.originalAddress() + dstOffset & (Long.BYTES - 1)) != 0) {
            throw ConnectionChecks.invalid(context, phase, "token offset " + dstOffset + " of " + dst
                    + " is not 8-byte aligned: a 64-bit token must be aligned to be stored atomically");
        }
        sendLock.lock();
        try {
            awaitWritable(System.nanoTime() + TimeUnit.SECONDS.toNanos(WRITE_WAIT_SECONDS), phase);
            Channel ch = openChannel(phase);
            localToken.set(newValue);
            long seq = sent + 1;
            sent = seq;
            ch.writeAndFlush(EthernetWire.token(ch.alloc(), seq, region, dstOffset, newValue), ch.voidPromise());
        } finally {
            sendLock.unlock();
        }
    }

    /**
     * Checks what the sender can check of a destination (the receiver checks again against its own
     * table): open, range inside the memory, registered for ETHERNET with a region handle.
     */
    private long checkDestination(RegisteredMemory dst, long dstOffset, long size, String phase) {
        if (closed.get()) {
            throw ConnectionChecks.invalid(context, phase, "the connection is closed");
        }
        JmscclppException f = failure;
        if (f != null) {
            throw again(f, phase);
        }
        try {
            dst.checkRange(dstOffset, size, phase);
        } catch (JmscclppException e) {
            throw ConnectionChecks.invalid(context, phase, "destination " + e.detail());
        }
        if (!dst.transports().has(Transport.ETHERNET)) {
            throw ConnectionChecks.invalid(context, phase, "the destination is not registered for ETHERNET (it has "
                    + dst.transports() + ")");
        }
        Long region = EthernetWire.region(dst.handle(Transport.ETHERNET));
        if (region == null) {
            throw ConnectionChecks.invalid(context, phase, "the destination carries no ETHERNET region handle: " + dst);
        }
        return region;
    }

    private Channel openChannel(String phase) {
        JmscclppException f = failure;
        if (f != null) {
            throw again(f, phase);
        }
        Channel ch = channel;
        if (closed.get() || ch == null) {
            throw ConnectionChecks.invalid(context, phase, "the connection is closed");
        }
        return ch;
    }

    /** Waits while the socket is above its high water mark (not on an event loop, which must not block). */
    private void awaitWritable(long deadline, String phase) {
        Channel ch = openChannel(phase);
        if (ch.isWritable() || onEventLoop(ch)) {
            return;
        }
        writability.lock();
        try {
            while (!ch.isWritable()) {
                openChannel(phase);
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw error(ErrorCode.TIMEOUT, phase, "the socket to the peer stayed full for "
                            + WRITE_WAIT_SECONDS + " s (" + (sent - acked) + " frames unacknowledged)");
                }
                writable.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw error(ErrorCode.ABORTED, phase, "interrupted while waiting for the socket to drain");
        } finally {
            writability.unlock();
        }
    }

    private static boolean onEventLoop(Channel ch) {
        for (EventExecutor e : ch.eventLoop().parent()) {
            if (e.inEventLoop()) {
                return true;
            }
        }
        return false;
    }

    void wakeWriters() {
        writability.lock();
        try {
            writable.signalAll();
        } finally {
            writability.unlock();
        }
    }

    private DeviceBuffer takeSlot(long deadline, String phase) {
        DeviceBuffer slot = freeSlots.poll();
        if (slot != null) {
            return slot;
        }
        if (slotsMade.getAndIncrement() < STAGING_SLOTS) {
            return session.backend().allocateHostVisible(EthernetWire.MAX_CHUNK);
        }
        try {
            slot = freeSlots.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw error(ErrorCode.ABORTED, phase, "interrupted while waiting for a staging buffer");
        }
        if (slot == null) {
            throw error(ErrorCode.TIMEOUT, phase, "no staging buffer came free within " + WRITE_WAIT_SECONDS + " s");
        }
        return slot;
    }

    private void giveSlot(DeviceBuffer slot) {
        freeSlots.offer(slot);
        if (closed.get()) {
            freeStaging();
        }
    }

    private void freeStaging() {
        for (DeviceBuffer b; (b = freeSlots.poll()) != null; ) {
            b.close();
        }
    }

    // ------------------------------------------------------------------ flushing

    /**
     * Completes when the peer has acknowledged every WRITE and TOKEN frame sent before the call;
     * {@link ErrorCode#TIMEOUT} after {@code timeout}, {@link ErrorCode#REMOTE_ERROR} when the peer
     * rejected a frame or the connection broke, {@link ErrorCode#INVALID_USAGE} when closed.
     */
    @Override
    public Mono<Void> flush(Duration timeout) {
        return Mono.<Void>create(sink -> {
            if (closed.get()) {
                sink.error(ConnectionChecks.invalid(context, "flush", "the connection is closed"));
                return;
            }
            long target = sent;
            Channel ch = channel;
            if (ch == null) {
                sink.error(ConnectionChecks.invalid(context, "flush", "the connection is not connected"));
                return;
            }
            Waiter w = new Waiter(target, sink);
            synchronized (waiters) {
                JmscclppException f = failure;
                if (f != null) {
                    sink.error(again(f, "flush"));
                    return;
                }
                if (acked >= target) {
                    sink.success();
                    return;
                }
                waiters.add(w);
            }
            // The deadline runs on the connection's own event loop, which completes the flush too:
            // Reactor's timeout() would arm and disarm a timer on its parallel scheduler for every
            // flush, two wake-ups of another thread per round trip (measured: most of the ETHERNET
            // ping-pong's time on a busy 2-core host). A far deadline scheduled from outside the
            // loop does not wake it, and cancelling it from the loop is a heap removal.
            ScheduledFuture<?> deadline;
            try {
                deadline = ch.eventLoop().schedule(() -> {
                    if (dropWaiter(w)) {
                        sink.error(error(ErrorCode.TIMEOUT, "flush", "the peer did not acknowledge every write "
                                + "within " + timeout.toMillis() + " ms (sent " + sent + " frames, " + acked
                                + " acknowledged)"));
                    }
                }, Waiting.bounded(timeout).toNanos(), TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException e) {
                // the event loops are shutting down: the session is closing under this flush
                if (dropWaiter(w)) {
                    sink.error(ConnectionChecks.invalid(context, "flush", "the connection is closing"));
                }
                return;
            }
            sink.onDispose(() -> {
                deadline.cancel(false);
                dropWaiter(w);
            });
        });
    }

    private boolean dropWaiter(Waiter w) {
        synchronized (waiters) {
            return waiters.remove(w);
        }
    }

    /** An ACK arrived; returns why it is wrong, or null. Runs on the event loop. */
    @Nullable String onAck(long sequence) {
        if (sequence == 0) {
            accepted.complete(null);
            return null;
        }
        long s = sent;
        if (sequence < acked || sequence > s) {
            return "acknowledgement of frame " + sequence + " with " + acked + " acknowledged and " + s + " sent";
        }
        List<MonoSink<Void>> done = new ArrayList<>();
        synchronized (waiters) {
            acked = sequence;
            while (!waiters.isEmpty() && waiters.peekFirst().sequence() <= sequence) {
                done.add(waiters.pollFirst().sink());
            }
        }
        done.forEach(MonoSink::success);
        return null;
    }

    void onPeerError(String reason) {
        fail(error(ErrorCode.REMOTE_ERROR, "connection", "rank " + context.remoteRank()
                + " rejected this connection and closed it: " + reason));
    }

    void onProtocolError(String why) {
        fail(error(ErrorCode.REMOTE_ERROR, "connection", "bad answer from rank " + context.remoteRank() + ": " + why));
    }

    void onClosed() {
        if (!closed.get()) {
            fail(error(ErrorCode.REMOTE_ERROR, "connection", "the ETHERNET connection to rank "
                    + context.remoteRank() + " closed (the peer died or closed its communicator)"));
        }
        wakeWriters();
    }

    private void fail(JmscclppException e) {
        List<MonoSink<Void>> toFail;
        synchronized (waiters) {
            if (failure == null) {
                failure = e;
            }
            toFail = new ArrayList<>();
            waiters.forEach(w -> toFail.add(w.sink()));
            waiters.clear();
        }
        JmscclppException f = failure;
        accepted.completeExceptionally(f);
        toFail.forEach(s -> s.error(again(f, "flush")));
        wakeWriters();
    }

    private JmscclppException again(JmscclppException f, String phase) {
        return JmscclppException.builder(f.code(), f.detail()).rank(context.rank()).peer(context.remoteRank())
                .tag(context.tag()).phase(phase).cause(f).build();
    }

    private JmscclppException error(ErrorCode code, String phase, String detail) {
        return JmscclppException.builder(code, detail).rank(context.rank()).peer(context.remoteRank())
                .tag(context.tag()).phase(phase).build();
    }

    // ------------------------------------------------------------------ the rest

    @Override
    public Transport transport() {
        return Transport.ETHERNET;
    }

    @Override
    public Transport remoteTransport() {
        return Transport.ETHERNET;
    }

    @Override
    public Device localDevice() {
        return local.device();
    }

    @Override
    public ConnectionContext context() {
        return context;
    }

    /** The local endpoint's setting; writes are bounded by the socket's water mark rather than a count. */
    @Override
    public int maxWriteQueueSize() {
        return local.maxWriteQueueSize();
    }

    /** Whether the peer reported an error or the socket broke. */
    boolean failed() {
        return failure != null;
    }

    /**
     * Closes the socket (frames not yet sent are dropped) and frees the staging buffers once the
     * socket's writes are over. Waiting flushes fail with INVALID_USAGE. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<MonoSink<Void>> toFail;
        synchronized (waiters) {
            toFail = new ArrayList<>();
            waiters.forEach(w -> toFail.add(w.sink()));
            waiters.clear();
        }
        toFail.forEach(s -> s.error(ConnectionChecks.invalid(context, "flush", "the connection was closed")));
        accepted.completeExceptionally(ConnectionChecks.invalid(context, "connect", "the connection was closed"));
        Channel ch = channel;
        if (ch == null) {
            freeStaging();
        } else {
            ch.close().addListener(f -> freeStaging());
        }
        wakeWriters();
    }

    @Override
    public String toString() {
        return "EthernetConnection[" + context + ", " + (channel == null ? "unconnected" : channel.remoteAddress())
                + (closed.get() ? ", closed" : failure != null ? ", failed" : "") + "]";
    }
}
