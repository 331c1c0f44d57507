package org.jmscclpp.ethernet;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.jmscclpp.bootstrap.wire.Proofs;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.spi.ConnectionChecks;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Schedulers;

/**
 * A {@link Connection} over {@link Transport#ETHERNET}: one TCP connection from this rank to the
 * peer's {@link EthernetSession} listener, carrying the frames of {@link EthernetWire}.
 *
 * <p>The sending side is a plain non-blocking {@link SocketChannel}, not a Netty channel: the
 * caller's thread writes each frame into the socket itself, as a blocking socket write (and
 * MSCCL++'s Ethernet connection) would, with no hand-off to an event loop and back. Measured
 * with an event loop in the path, a 1 MiB write + flush took about three times as long as the
 * same transfer over a plain socket (a wake-up of the loop, its write cycles, a wake-up of the
 * caller). The listening side ({@link EthernetReceiver}) stays on Netty.
 *
 * <p>{@link #write} cuts the transfer into chunks of at most {@value EthernetWire#MAX_CHUNK}
 * bytes, one WRITE frame each, and returns once the socket has taken every byte (the kernel
 * holds what the peer has not read yet). Memory the host can read (the host backend's shared
 * memory, pinned memory) is sent as it is; device memory is first copied by the backend into a
 * pinned staging chunk ({@link org.jmscclpp.core.Backend#allocateHostVisible}). While the socket
 * is full the writer waits; a socket that takes no byte for {@value #WRITE_WAIT_SECONDS} s fails
 * the connection with {@link ErrorCode#TIMEOUT} (half a frame may be on the wire by then).
 *
 * <p>{@link #updateAndSync} sends a TOKEN frame, which the peer stores after every earlier frame.
 * {@link #flush} completes once the peer has acknowledged every frame sent before it (acks carry
 * the highest sequence number applied; the peer sends one only when a frame asks, see
 * {@link EthernetWire}: frames soon after a flush ask, else the flush sends a SYNC that does).
 * Subscribed to, it completes on the connection's ack thread ({@link EthernetAckReader}), which
 * also fails it at its deadline; {@link #awaitFlush}, its blocking form, reads the acks on the
 * caller's thread. A peer that rejects a frame,
 * dies or closes the socket turns every waiting and later operation into
 * {@link ErrorCode#REMOTE_ERROR} naming the peer and, when the peer gave one, its reason.
 */
final class EthernetConnection implements Connection {

    static final int WRITE_WAIT_SECONDS = 30;
    /** How long the ack thread sleeps at most when no flush deadline is nearer. */
    static final long IDLE_TICK_NANOS = TimeUnit.SECONDS.toNanos(1);
    /**
     * Frames after a flush that ask for an acknowledgement (ACK_WANTED): a connection that flushes
     * gets its acks as eagerly as before, one that only writes and signals gets none.
     */
    static final long EAGER_FRAMES = 64;
    /** How long {@link #close} waits for the ack thread to end. */
    static final long CLOSE_WAIT_MS = 5_000;
    /**
     * How long a write the socket refused waits for the ack thread to read the peer's reason, if it
     * sent one before closing (as long as the bootstrap waits for the news of a failed peer).
     */
    static final long REASON_WAIT_MS = 2_000;

    private record Waiter(long sequence, long deadline, Duration timeout, MonoSink<Void> sink) {
    }

    private final EthernetSession session;
    private final Endpoint local;
    private final ConnectionContext context;
    private final SocketChannel socket;
    /** Writers wait here while the socket is full. */
    private final Selector writable;
    private final EthernetAckReader acks;
    private final CompletableFuture<Void> accepted = new CompletableFuture<>();
    private final ReentrantLock sendLock = new ReentrantLock();
    private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** A frame's header (and a TOKEN's value); used under sendLock. */
    private final ByteBuf header = Unpooled.directBuffer(EthernetWire.HEADER_BYTES + Long.BYTES);
    /** The TOKEN frame that goes out in one socket write with a WRITE frame ({@link #writeAndUpdate}). */
    private final ByteBuf tokenHeader = Unpooled.directBuffer(EthernetWire.HEADER_BYTES + Long.BYTES);
    /** The device-memory path's pinned chunk, made on first use; used under sendLock. */
    private @Nullable DeviceBuffer staging;
    /** Last sequence number sent (set before its frame's last byte can reach the peer); written under sendLock. */
    private volatile long sent;
    private volatile long acked;
    /** Highest frame sent that asks for an acknowledgement (a SYNC, or ACK_WANTED); written under sendLock. */
    private long lastAsked;
    /** What {@link #sent} was at the latest flush; written under sendLock. */
    private long flushedAt = -EAGER_FRAMES;
    /** The sequence a blocking flush waits for, 0 when none does. */
    private volatile long blockingTarget;
    /** When the ack thread next looks at the flush deadlines, at the latest (guarded by waiters). */
    private long armedUntil = System.nanoTime() + Long.MAX_VALUE / 4;
    private volatile @Nullable JmscclppException failure;
    /** The secret and hello of the handshake; set before the hello is sent, read by the ack thread. */
    private volatile @Nullable Handshake handshake;

    private record Handshake(byte[] secret, byte[] hello) {
    }

    private EthernetConnection(EthernetSession session, Endpoint local, ConnectionContext context,
                               SocketChannel socket) throws IOException {
        this.session = session;
        this.local = local;
        this.context = context;
        this.socket = socket;
        this.writable = Selector.open();
        try {
            socket.register(writable, SelectionKey.OP_WRITE);
            this.acks = new EthernetAckReader(this, socket, "jmscclpp-ethernet-acks-r" + context.rank() + "-p"
                    + context.remoteRank() + "-t" + context.tag());
        } catch (IOException | RuntimeException e) {
            writable.close();
            header.release();
            tokenHeader.release();
            throw e;
        }
    }

    /**
     * Dials the peer's listener, runs the handshake of {@link EthernetWire} (the hello, the
     * listener's challenge, this side's proof of the listener's secret, sent by the ack thread) and
     * waits until {@code deadline} ({@link System#nanoTime()}) for it to finish. Blocks: the communicator calls it on a
     * virtual thread. On failure nothing stays open.
     */
    static EthernetConnection dial(EthernetSession session, Endpoint local, ConnectionContext context,
                                   EthernetWire.Listener peer, long deadline) {
        EthernetConnection c;
        SocketChannel socket = null;
        try {
            socket = SocketChannel.open();
            socket.setOption(StandardSocketOptions.TCP_NODELAY, true);
            socket.socket().connect(peer.address(), (int) EthernetAckReader.selectMillis(deadline - System.nanoTime()));
            socket.configureBlocking(false);
            c = new EthernetConnection(session, local, context, socket);
        } catch (IOException e) {
            EthernetAckReader.closeQuietly(socket);
            throw EthernetSession.error(e instanceof SocketTimeoutException ? ErrorCode.TIMEOUT
                    : ErrorCode.REMOTE_ERROR, context, "cannot reach the peer's ETHERNET listener at " + peer.address()
                    + ": " + e);
        }
        byte[] hello = EthernetWire.hello(context.rank(), context.remoteRank(), context.tag());
        c.handshake = new Handshake(peer.secret(), hello);
        c.acks.start();
        try {
            c.sendLock.lock();
            try {
                c.send(new ByteBuffer[] {ByteBuffer.wrap(hello)}, "connect");
            } finally {
                c.sendLock.unlock();
            }
            c.accepted.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            return c;
        } catch (TimeoutException e) {
            c.close();
            throw EthernetSession.error(ErrorCode.TIMEOUT, context, "the peer did not accept the ETHERNET connection "
                    + "within " + EthernetSession.CONNECT_TIMEOUT.toMillis() + " ms");
        } catch (ExecutionException e) {
            c.close();
            throw e.getCause() instanceof JmscclppException je ? je
                    : EthernetSession.error(ErrorCode.REMOTE_ERROR, context, "the ETHERNET handshake failed: "
                    + e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            c.close();
            throw EthernetSession.error(ErrorCode.ABORTED, context, "interrupted during the ETHERNET handshake");
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
    }

    EthernetSession session() {
        return session;
    }

    // ------------------------------------------------------------------ writing

    @Override
    public void write(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        send(dst, dstOffset, src, srcOffset, size, null, 0, null, 0, "write");
    }

    @Override
    public void updateAndSync(RegisteredMemory dst, long dstOffset, AtomicLong localToken, long newValue) {
        String phase = "updateAndSync";
        long region = checkToken(dst, dstOffset, phase);
        sendLock.lock();
        try {
            sendToken(region, dstOffset, localToken, newValue, phase);
        } finally {
            sendLock.unlock();
        }
    }

    /** The write's frames and the token's in one socket write (for each chunk but the last, the chunk's alone). */
    @Override
    public void writeAndUpdate(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size,
                               RegisteredMemory tokenDst, long tokenOffset, AtomicLong localToken, long newValue) {
        send(dst, dstOffset, src, srcOffset, size, tokenDst, tokenOffset, localToken, newValue, "writeAndUpdate");
    }

    /**
     * Sends {@code size} bytes of {@code src} as WRITE frames of at most {@link EthernetWire#MAX_CHUNK}
     * bytes and, when {@code tokenDst} is given, a TOKEN frame in the same socket write as the last.
     */
    private void send(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size,
                      @Nullable RegisteredMemory tokenDst, long tokenOffset, @Nullable AtomicLong localToken,
                      long newValue, String phase) {
        long region = checkDestination(dst, dstOffset, size, phase);
        long tokenRegion = tokenDst == null ? -1 : checkToken(tokenDst, tokenOffset, phase);
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
            for (long done = 0; done < size; ) {
                int n = (int) Math.min(EthernetWire.MAX_CHUNK, size - done);
                boolean last = done + n == size;
                checkUsable(phase);
                ByteBuffer[] frame = new ByteBuffer[last && tokenDst != null ? 3 : 2];
                if (direct) {
                    frame[1] = segment.asSlice(srcOffset + done, n).asByteBuffer();
                } else {
                    DeviceBuffer slot = staging();
                    session.backend().copy(slot, 0, source, srcOffset + done, n);
                    frame[1] = slot.hostSegment().asSlice(0, n).asByteBuffer();
                }
                long seq = sent + 1;
                EthernetWire.header(header.clear(), EthernetWire.WRITE, ackFlag(seq), n, seq, region, dstOffset + done);
                frame[0] = header.nioBuffer();
                sent = seq;
                if (frame.length == 3) {
                    localToken.set(newValue);
                    frame[2] = token(tokenRegion, tokenOffset, newValue);
                }
                send(frame, phase);
                done += n;
            }
            if (size == 0 && tokenDst != null) {
                sendToken(tokenRegion, tokenOffset, localToken, newValue, phase);
            }
        } finally {
            sendLock.unlock();
        }
    }

    /** The region of a token's destination, checked: in range and 8-byte aligned. */
    private long checkToken(RegisteredMemory dst, long dstOffset, String phase) {
        long region = checkDestination(dst, dstOffset, Long.BYTES, phase);
        if ((dstOffset & (Long.BYTES - 1)) != 0 || (dst.originalAddress() + dstOffset & (Long.BYTES - 1)) != 0) {
            throw ConnectionChecks.invalid(context, phase, "token offset " + dstOffset + " of " + dst
                    + " is not 8-byte aligned: a 64-bit token must be aligned to be stored atomically");
        }
        return region;
    }

    /** A TOKEN frame alone: sets {@code localToken} and sends it. Holding sendLock. */
    private void sendToken(long region, long dstOffset, AtomicLong localToken, long newValue, String phase) {
        checkUsable(phase);
        localToken.set(newValue);
        send(new ByteBuffer[] {token(region, dstOffset, newValue)}, phase);
    }

    /** The next TOKEN frame, in {@link #tokenHeader}. Holding sendLock. */
    private ByteBuffer token(long region, long dstOffset, long value) {
        long seq = sent + 1;
        EthernetWire.token(tokenHeader.clear(), ackFlag(seq), seq, region, dstOffset, value);
        sent = seq;
        return tokenHeader.nioBuffer();
    }

    /**
     * ACK_WANTED for frame {@code seq} when it closely follows a flush (another flush is then
     * likely to wait for it), else 0. Holding sendLock.
     */
    private int ackFlag(long seq) {
        if (seq - flushedAt <= EAGER_FRAMES) {
            lastAsked = seq;
            return EthernetWire.ACK_WANTED;
        }
        return 0;
    }

    /**
     * Puts {@code frame} whole into the socket on this thread (holding sendLock), waiting while
     * the socket is full. A socket that takes nothing for {@value #WRITE_WAIT_SECONDS} s, or that
     * breaks, fails the connection: the peer would otherwise see the rest of a frame it has half.
     */
    private void send(ByteBuffer[] frame, String phase) {
        long left = 0;
        for (ByteBuffer b : frame) {
            left += b.remaining();
        }
        long progress = System.nanoTime();
        try {
            while (true) {
                long n = socket.write(frame);
                left -= n;
                if (left == 0) {
                    return;
                }
                long now = System.nanoTime();
                if (n > 0) {
                    progress = now;
                }
                checkUsable(phase);
                long wait = progress + TimeUnit.SECONDS.toNanos(WRITE_WAIT_SECONDS) - now;
                if (wait <= 0) {
                    fail(error(ErrorCode.TIMEOUT, phase, "the socket to the peer stayed full for " + WRITE_WAIT_SECONDS
                            + " s (" + sent + " frames sent, " + acked + " acknowledged)"));
                    EthernetAckReader.closeQuietly(socket);
                    throw again(failureOr(phase), phase);
                }
                writable.select(EthernetAckReader.selectMillis(wait));
                writable.selectedKeys().clear();
            }
        } catch (IOException e) {
            throw broken(e, phase);
        }
    }

    /**
     * The error of a write the socket refused. The peer's reason, when it sent one before closing,
     * is read by the ack thread: wait (boundedly) for that thread to reach the socket's end.
     */
    private JmscclppException broken(IOException e, String phase) {
        if (closed.get()) {
            return ConnectionChecks.invalid(context, phase, "the connection is closed");
        }
        acks.awaitEnd(REASON_WAIT_MS);
        fail(error(ErrorCode.REMOTE_ERROR, "connection", "the ETHERNET connection to rank " + context.remoteRank()
                + " broke while writing (the peer died or reset it): " + e));
        EthernetAckReader.closeQuietly(socket);
        return again(failureOr(phase), phase);
    }

    private JmscclppException failureOr(String phase) {
        JmscclppException f = failure;
        return f != null ? f : ConnectionChecks.invalid(context, phase, "the connection is closed");
    }

    private DeviceBuffer staging() {
        DeviceBuffer s = staging;
        if (s == null) {
            s = session.backend().allocateHostVisible(EthernetWire.MAX_CHUNK);
            staging = s;
        }
        return s;
    }

    /**
     * Checks what the sender can check of a destination (the receiver checks again against its own
     * table): open, range inside the memory, registered for ETHERNET with a region handle.
     */
    private long checkDestination(RegisteredMemory dst, long dstOffset, long size, String phase) {
        checkUsable(phase);
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

    /** Throws when the connection is closed or has failed. */
    private void checkUsable(String phase) {
        if (closed.get()) {
            throw ConnectionChecks.invalid(context, phase, "the connection is closed");
        }
        JmscclppException f = failure;
        if (f != null) {
            throw again(f, phase);
        }
    }

    // ------------------------------------------------------------------ flushing

    /**
     * Completes when the peer has acknowledged every frame sent before the call (a SYNC asks for it
     * where the last frame did not); {@link ErrorCode#TIMEOUT} after {@code timeout},
     * {@link ErrorCode#REMOTE_ERROR} when the peer rejected a frame or the connection broke,
     * {@link ErrorCode#INVALID_USAGE} when closed.
     */
    @Override
    public Mono<Void> flush(Duration timeout) {
        return acknowledged(timeout);
    }

    /**
     * The blocking flush: the caller reads the acks itself ({@link EthernetAckReader#poll}) and waits
     * for the socket in its own selector, so the kernel wakes it directly when the ack arrives (about
     * 30 µs of an 87 µs write + flush round trip, against waiting for the ack thread). When another
     * caller already waits so, this one waits as a subscriber would. Refused, as
     * {@link Mono#block()} refuses, on a non-blocking thread.
     */
    @Override
    public void awaitFlush(Duration timeout) {
        if (Schedulers.isInNonBlockingThread()) {
            throw new IllegalStateException("awaitFlush() is blocking, which is not supported in thread "
                    + Thread.currentThread().getName());
        }
        long start = System.nanoTime();
        checkUsable("flush");
        long target = syncTarget();
        if (acked >= target) {
            return;
        }
        long deadline = start + Waiting.bounded(timeout).toNanos();
        if (!acks.tryBecomeFlusher()) {
            // the ack thread fails the flush at its deadline; the margin only guards against a lost completion
            acknowledged(timeout).block(Waiting.bounded(timeout).plusSeconds(5));
            return;
        }
        try {
            // the selector exists before the ack thread can see the target, so its wake-up is never lost
            acks.prepareFlusher();
            blockingTarget = target;
            while (true) {
                checkUsable("flush");
                if (acked >= target) {
                    return;
                }
                // the wait comes before the read: the ack has seldom arrived yet, and a read to find
                // that out is a system call per flush; a socket with bytes, or a wake-up, ends the
                // wait at once
                long now = System.nanoTime();
                if (now - deadline >= 0) {
                    throw flushTimeout(timeout);
                }
                if (Thread.currentThread().isInterrupted()) {
                    throw error(ErrorCode.ABORTED, "flush", "interrupted while waiting for acknowledgements");
                }
                acks.awaitReadable(deadline - now);
                acks.poll();
            }
        } catch (IOException e) {
            // the ack reader closes the socket when the peer closes or dies: its recorded failure
            // (REMOTE_ERROR naming the peer) says what happened; a socket closed under us is the same news
            checkUsable("flush");
            throw error(e instanceof java.nio.channels.ClosedChannelException ? ErrorCode.REMOTE_ERROR
                    : ErrorCode.SYSTEM_ERROR, "flush", "cannot wait for the socket: " + e);
        } finally {
            blockingTarget = 0;
            acks.leaveFlusher();
            if (hasSubscribedFlushes()) {
                acks.wakeup();   // their acks are the ack thread's again
            }
        }
    }

    /**
     * The sequence number a flush waits for, making sure the peer acknowledges it: the last frame
     * sent when it asked for an ack (ACK_WANTED, or another flush's SYNC) or is acknowledged
     * already, else a SYNC frame sent now. The peer acknowledges nothing unasked.
     */
    private long syncTarget() {
        sendLock.lock();
        try {
            long s = sent;
            flushedAt = s;
            if (acked >= s || lastAsked == s) {
                return s;
            }
            checkUsable("flush");
            long seq = s + 1;
            EthernetWire.sync(header.clear(), seq);
            sent = seq;
            lastAsked = seq;
            flushedAt = seq;
            send(new ByteBuffer[] {header.nioBuffer()}, "flush");
            return seq;
        } finally {
            sendLock.unlock();
        }
    }

    private JmscclppException flushTimeout(Duration timeout) {
        return error(ErrorCode.TIMEOUT, "flush", "the peer did not acknowledge every write within "
                + timeout.toMillis() + " ms (sent " + sent + " frames, " + acked + " acknowledged)");
    }

    /** The flush as a subscriber waits for it: completed by the ack thread. */
    private Mono<Void> acknowledged(Duration timeout) {
        return Mono.<Void>create(sink -> {
            long target;
            try {
                target = syncTarget();
            } catch (JmscclppException e) {
                sink.error(e);
                return;
            }
            // The deadline is kept by the ack thread, which completes the flush too: Reactor's
            // timeout() would arm and disarm a timer on its parallel scheduler for every flush,
            // two wake-ups of another thread per round trip. The ack thread is woken only when
            // this deadline is nearer than the one it sleeps towards (a flush shorter than
            // IDLE_TICK_NANOS).
            Waiter w = new Waiter(target, Waiting.deadline(timeout), timeout, sink);
            boolean wake;
            synchronized (waiters) {
                if (closed.get()) {
                    sink.error(ConnectionChecks.invalid(context, "flush", "the connection is closed"));
                    return;
                }
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
                wake = w.deadline() - armedUntil < 0 || acks.quiet();
            }
            if (wake) {
                acks.wakeup();
            }
            sink.onDispose(() -> dropWaiter(w));
        });
    }

    private void dropWaiter(Waiter w) {
        synchronized (waiters) {
            waiters.remove(w);
        }
    }

    /** Whether a subscribed flush waits for its ack (the ack thread then watches the socket). */
    boolean hasSubscribedFlushes() {
        synchronized (waiters) {
            return !waiters.isEmpty();
        }
    }

    /** Acks that the connection's ack thread read, rather than a caller in {@link #awaitFlush} (for tests). */
    long acksReadByTheAckThread() {
        return acks.acksOnReaderThread();
    }

    /** How often something woke a blocking flush's wait (for tests). */
    long flusherWakeups() {
        return acks.flusherWakeups();
    }

    /** Subscribed flushes still waiting for their ack (for tests: a cancelled flush must leave none). */
    int waitingFlushes() {
        synchronized (waiters) {
            return waiters.size();
        }
    }

    /**
     * Ack thread: fails the flushes whose deadline has passed at {@code now}; returns how many
     * milliseconds it may sleep before it must look again (at least 1).
     */
    long expireFlushes(long now) {
        List<Waiter> late = null;
        long next = now + IDLE_TICK_NANOS;
        synchronized (waiters) {
            for (Iterator<Waiter> it = waiters.iterator(); it.hasNext(); ) {
                Waiter w = it.next();
                if (w.deadline() - now <= 0) {
                    if (late == null) {
                        late = new ArrayList<>();
                    }
                    late.add(w);
                    it.remove();
                } else if (w.deadline() - next < 0) {
                    next = w.deadline();
                }
            }
            armedUntil = next;
        }
        if (late != null) {
            for (Waiter w : late) {
                w.sink().error(flushTimeout(w.timeout()));
            }
        }
        return EthernetAckReader.selectMillis(next - now);
    }

    /**
     * The listener's CHALLENGE arrived: checks its proof, answers with this side's; returns why it
     * is wrong, or null. Runs on the ack thread; frames may be written once it completes {@link #accepted}.
     */
    @Nullable String onChallenge(byte[] nonce, byte[] proof) {
        Handshake h = handshake;
        if (h == null || accepted.isDone()) {
            return "a challenge after the handshake";
        }
        if (!Proofs.matches(EthernetWire.acceptProof(h.secret(), h.hello(), nonce), proof)) {
            return "the listener's proof of its endpoint secret is wrong (a stale endpoint, or another process "
                    + "at that address)";
        }
        sendLock.lock();
        try {
            send(new ByteBuffer[] {ByteBuffer.wrap(EthernetWire.dialProof(h.secret(), h.hello(), nonce))}, "connect");
        } catch (JmscclppException e) {
            accepted.completeExceptionally(e);
            return null;
        } finally {
            sendLock.unlock();
        }
        accepted.complete(null);
        return null;
    }

    /** An ACK arrived; returns why it is wrong, or null. Runs on the ack thread or on a flushing caller. */
    @Nullable String onAck(long sequence) {
        if (!accepted.isDone() || accepted.isCompletedExceptionally()) {
            return "an acknowledgement before the handshake finished";
        }
        long s = sent;
        if (sequence < 1 || sequence < acked || sequence > s) {
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
        long blocked = blockingTarget;
        if (blocked != 0 && sequence >= blocked && !acks.isFlusher()) {
            // it may have looked before this thread read the ack; a flusher that read the ack itself
            // needs no wake-up, and one would end its next flush's first wait at once for nothing
            // (four system calls per flush: the wake-up, the wait it ends, its drain, an empty read)
            acks.wakeFlusher();
        }
        return null;
    }

    void onPeerError(String reason) {
        fail(error(ErrorCode.REMOTE_ERROR, "connection", "rank " + context.remoteRank()
                + " rejected this connection and closed it: " + reason));
    }

    void onProtocolError(String why) {
        fail(error(ErrorCode.REMOTE_ERROR, "connection", "bad answer from rank " + context.remoteRank() + ": " + why));
    }

    void onBroken(IOException e) {
        fail(error(ErrorCode.REMOTE_ERROR, "connection", "the ETHERNET connection to rank " + context.remoteRank()
                + " broke (the peer died or reset it): " + e));
    }

    /** The ack thread has ended: the socket reached its end, broke or was closed. */
    void onClosed() {
        if (!closed.get()) {
            fail(error(ErrorCode.REMOTE_ERROR, "connection", "the ETHERNET connection to rank "
                    + context.remoteRank() + " closed (the peer died or closed its communicator)"));
        }
    }

    private void fail(JmscclppException e) {
        List<MonoSink<Void>> toFail;
        synchronized (waiters) {
            if (failure == null) {
                failure = e;
            }
            toFail = takeWaiters();
        }
        JmscclppException f = failureOr("connection");
        accepted.completeExceptionally(f);
        toFail.forEach(s -> s.error(again(f, "flush")));
        writable.wakeup();
        acks.wakeFlusher();
    }

    /** Removes every waiting flush; returns their sinks, for the caller to end outside the lock. */
    private List<MonoSink<Void>> takeWaiters() {
        synchronized (waiters) {
            List<MonoSink<Void>> out = new ArrayList<>(waiters.size());
            waiters.forEach(w -> out.add(w.sink()));
            waiters.clear();
            return out;
        }
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

    /** The local endpoint's setting; writes are bounded by the socket's own buffer (the writer waits), not a count. */
    @Override
    public int maxWriteQueueSize() {
        return local.maxWriteQueueSize();
    }

    /** Whether the peer reported an error or the socket broke. */
    boolean failed() {
        return failure != null;
    }

    /**
     * Closes the socket (a write in progress fails with INVALID_USAGE), waits (at most
     * {@value #CLOSE_WAIT_MS} ms) for the ack thread to end, and frees the staging chunk. Waiting
     * flushes fail with INVALID_USAGE. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        takeWaiters().forEach(s -> s.error(ConnectionChecks.invalid(context, "flush", "the connection was closed")));
        accepted.completeExceptionally(ConnectionChecks.invalid(context, "connect", "the connection was closed"));
        EthernetAckReader.closeQuietly(socket);
        writable.wakeup();
        acks.wakeup();
        acks.awaitEnd(CLOSE_WAIT_MS);
        acks.closeFlusher();
        sendLock.lock();
        try {
            DeviceBuffer s = staging;
            staging = null;
            if (s != null) {
                s.close();
            }
            header.release();
            tokenHeader.release();
            try {
                writable.close();
            } catch (IOException ignored) {
                // nothing to report while closing
            }
        } finally {
            sendLock.unlock();
        }
        session.forget(this);
    }

    @Override
    public String toString() {
        return "EthernetConnection[" + context + ", " + socket
                + (closed.get() ? ", closed" : failure != null ? ", failed" : "") + "]";
    }
}
