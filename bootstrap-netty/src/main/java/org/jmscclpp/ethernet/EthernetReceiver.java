package org.jmscclpp.ethernet;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.bootstrap.LingeringClose;
import org.jmscclpp.bootstrap.wire.Proofs;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;

/**
 * The listener's end of one {@link EthernetConnection}: runs the handshake of {@link EthernetWire}
 * (hello, challenge, the dialler's proof of the secret; a connection that fails it is closed at
 * once, unread), then reads the WRITE, TOKEN and SYNC frames, applies each to a buffer registered
 * with this session, and acknowledges what it applied when a frame asks (see {@link EthernetWire}).
 * Every check of a frame happens on its header, before any byte of its body is stored; a frame
 * that fails one ends this connection (an ERROR frame with the reason, one log line, close) and
 * leaves memory and every other connection as they were.
 *
 * <p>Bodies for host-accessible memory (the host backend's shared memory, pinned memory) are
 * read from the socket straight into the destination on the event loop: the socket's reads are
 * lent the destination itself ({@link EthernetReceiveBuffers}), and bytes that came in one read
 * with a header are copied from it. Memory the host cannot reach (CUDA device memory) is filled
 * by the backend's copy, which may block, so those frames are gathered into a pooled buffer and
 * applied in order on a virtual thread of this connection, with reading paused while more than
 * {@value #OFFLOAD_HIGH} bytes wait. Acknowledgements follow the applied order in both cases, at
 * the end of each read burst.
 */
final class EthernetReceiver extends ChannelInboundHandlerAdapter {

    private static final System.Logger LOG = Log.logger(EthernetReceiver.class, Subsystem.NET);
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();
    static final long OFFLOAD_HIGH = 64L << 20;
    private static final long OFFLOAD_LOW = 16L << 20;
    private static final long LINGER_SECONDS = 5;

    /**
     * Reads smaller than this into the destination are not worth a buffer of their own: the pooled
     * buffer the read would take instead also holds the next header.
     */
    static final int LEND_MIN = 4096;

    private enum State { HELLO, PROOF, HEADER, BODY, DEAD }

    private final EthernetSession session;
    private final long handshakeTimeoutNanos;
    private State state = State.HELLO;
    /** Partial hello or header bytes. */
    private @Nullable ByteBuf partial;
    private @Nullable ScheduledFuture<?> handshakeDeadline;
    private EthernetWire.@Nullable Hello hello;
    /** This side's nonce in the CHALLENGE; set in {@link State#PROOF}. */
    private byte @Nullable [] nonce;

    // the frame whose body is being read
    private byte type;
    private long sequence;
    private long remaining;
    private long bodyOffset;
    private EthernetSession.@Nullable Region region;
    private @Nullable MemorySegment target;
    private @Nullable ByteBuf gathered;
    /** The destination, lent to the socket's next read ({@link #lendDestination}). */
    private @Nullable ByteBuf lent;

    /** Whether this read stored a frame: waiters of this process are woken once at its end. */
    private boolean stored;
    private long expectedSequence = 1;
    /** Highest sequence applied; event-loop confined. */
    private long applied;
    private long acknowledged;
    /** Highest frame that asked for an acknowledgement (SYNC, or ACK_WANTED); event-loop confined. */
    private long ackWanted;
    private @Nullable ExecutorService offload;
    private long offloadBytes;
    private int offloadFrames;

    EthernetReceiver(EthernetSession session, long handshakeTimeoutNanos) {
        this.session = session;
        this.handshakeTimeoutNanos = handshakeTimeoutNanos;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        handshakeDeadline = ctx.executor().schedule(() -> reject(ctx, "no complete handshake within "
                + TimeUnit.NANOSECONDS.toMillis(handshakeTimeoutNanos) + " ms"), handshakeTimeoutNanos, TimeUnit.NANOSECONDS);
    }

    /**
     * The rest of the WRITE body being read, as a buffer over the destination for the socket's next
     * read to fill, or null (no body, memory the host cannot reach, or too little left). Event loop.
     */
    @Nullable ByteBuf lendDestination() {
        if (state != State.BODY || type != EthernetWire.WRITE || target == null || remaining < LEND_MIN) {
            return null;
        }
        long at = target.byteSize() - remaining;
        // a wrapped ByteBuffer: releasing it frees nothing of the destination
        lent = Unpooled.wrappedBuffer(target.asSlice(at, remaining).asByteBuffer()).clear();
        return lent;
    }

    /** Whether the next bytes start a frame (or the handshake): no body is being read. Event loop. */
    boolean betweenFrames() {
        return state != State.BODY;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        ByteBuf in = (ByteBuf) msg;
        try {
            if (in == lent) {
                lent = null;
                readInPlace(ctx, in.readableBytes());
                return;
            }
            while (in.isReadable() && state != State.DEAD) {
                switch (state) {
                    case HELLO -> {
                        ByteBuf h = accumulate(ctx, in, EthernetWire.HELLO_BYTES);
                        if (h != null) {
                            onHello(ctx, h);
                        }
                    }
                    case PROOF -> {
                        ByteBuf p = accumulate(ctx, in, Proofs.BYTES);
                        if (p != null) {
                            onProof(ctx, p);
                        }
                    }
                    case HEADER -> {
                        ByteBuf h = accumulate(ctx, in, EthernetWire.HEADER_BYTES);
                        if (h != null) {
                            onHeader(ctx, EthernetWire.readHeader(h));
                            release(h);
                        }
                    }
                    case BODY -> body(ctx, in);
                    case DEAD -> in.skipBytes(in.readableBytes());
                }
            }
        } catch (RuntimeException e) {
            // a buffer closed under us, or the backend refused a copy: this connection ends, the job goes on
            reject(ctx, "cannot apply frame " + sequence + ": " + e);
        } finally {
            in.release();
            if (stored) {
                stored = false;
                Waiting.wake();
            }
        }
    }

    /** The socket read {@code n} bytes of the body straight into the destination: they are in place. */
    private void readInPlace(ChannelHandlerContext ctx, int n) {
        if (state == State.BODY && target != null) {
            remaining -= n;
            if (remaining == 0) {
                finishFrame(ctx);
            }
        }
    }

    /** The next {@code n} bytes as one buffer once they are all there (the caller releases it), else null. */
    private @Nullable ByteBuf accumulate(ChannelHandlerContext ctx, ByteBuf in, int n) {
        if (partial == null) {
            if (in.readableBytes() >= n) {
                return in.readRetainedSlice(n);
            }
            partial = ctx.alloc().heapBuffer(n, n);
        }
        ByteBuf p = partial;
        p.writeBytes(in, Math.min(n - p.readableBytes(), in.readableBytes()));
        if (p.readableBytes() < n) {
            return null;
        }
        partial = null;
        return p;
    }

    private void onHello(ChannelHandlerContext ctx, ByteBuf h) {
        EthernetWire.Hello[] out = new EthernetWire.Hello[1];
        String why;
        try {
            why = EthernetWire.readHello(h, out);
        } finally {
            release(h);
        }
        if (why == null && session.rank() >= 0 && out[0].receiver() != session.rank()) {
            why = "the hello is for rank " + out[0].receiver() + " but this is rank " + session.rank();
        }
        if (why != null) {
            reject(ctx, why);
            return;
        }
        hello = out[0];
        byte[] n = Proofs.nonce();
        nonce = n;
        state = State.PROOF;
        ctx.writeAndFlush(EthernetWire.challenge(ctx.alloc(), n,
                EthernetWire.acceptProof(session.secret(), out[0].bytes(), n)));
    }

    private void onProof(ChannelHandlerContext ctx, ByteBuf p) {
        byte[] proof = new byte[Proofs.BYTES];
        try {
            p.readBytes(proof);
        } finally {
            release(p);
        }
        EthernetWire.Hello h = Objects.requireNonNull(hello);
        byte[] expected = EthernetWire.dialProof(session.secret(), h.bytes(), Objects.requireNonNull(nonce));
        if (!Proofs.matches(expected, proof)) {
            reject(ctx, "wrong proof of the endpoint secret (a stale endpoint, another job, a stray connection, "
                    + "or a replay)");
            return;
        }
        cancelHandshakeDeadline();
        state = State.HEADER;
    }

    private void onHeader(ChannelHandlerContext ctx, EthernetWire.Header h) {
        String why = check(h);
        if (why != null) {
            reject(ctx, "frame " + h.sequence() + " (" + EthernetWire.typeName(h.type()) + ", region " + h.region()
                    + ", offset " + h.offset() + ", " + h.length() + " bytes): " + why);
            return;
        }
        if (h.type() == EthernetWire.SYNC) {
            // no body: applied once every frame before it is, then acknowledged
            expectedSequence++;
            ackWanted = h.sequence();
            if (offloadFrames == 0) {
                applied = h.sequence();
            } else {
                submit(ctx, h.sequence(), 0, () -> { });
            }
            return;
        }
        if ((h.reserved() & EthernetWire.ACK_WANTED) != 0) {
            ackWanted = h.sequence();
        }
        EthernetSession.Region r = session.region(h.region());
        type = h.type();
        sequence = h.sequence();
        remaining = h.length();
        bodyOffset = h.offset();
        region = r;
        expectedSequence++;
        if (r != null && r.buffer().hostAccessible() && offloadFrames == 0 && !session.offloadAlways()) {
            target = r.buffer().hostSegment().asSlice(h.offset(), h.length());
        } else {
            target = null;
            gathered = ctx.alloc().directBuffer(h.length(), h.length());
        }
        state = State.BODY;
    }

    /** Why a header is refused, or null. */
    private @Nullable String check(EthernetWire.Header h) {
        if (h.type() != EthernetWire.WRITE && h.type() != EthernetWire.TOKEN && h.type() != EthernetWire.SYNC) {
            return "a dialler sends WRITE, TOKEN and SYNC frames only";
        }
        if ((h.reserved() & ~EthernetWire.ACK_WANTED) != 0) {
            return "non-zero reserved bytes";
        }
        if (h.sequence() != expectedSequence) {
            return "sequence number " + h.sequence() + ", expected " + expectedSequence;
        }
        if (h.type() == EthernetWire.SYNC) {
            return h.length() == 0 && h.region() == 0 && h.offset() == 0 ? null
                    : "a SYNC has no body, region or offset";
        }
        if (h.type() == EthernetWire.WRITE && (h.length() <= 0 || h.length() > EthernetWire.MAX_CHUNK)) {
            return "a WRITE body is 1 to " + EthernetWire.MAX_CHUNK + " bytes";
        }
        if (h.type() == EthernetWire.TOKEN && h.length() != Long.BYTES) {
            return "a TOKEN body is 8 bytes";
        }
        EthernetSession.Region r = session.region(h.region());
        if (r == null) {
            return "no buffer of this process is registered for ETHERNET as region " + h.region();
        }
        long size = r.buffer().size();
        if (h.offset() < 0 || h.offset() > size || h.length() > size - h.offset()) {
            return "range [" + h.offset() + ", " + h.offset() + " + " + h.length() + ") is outside the region of "
                    + size + " bytes";
        }
        if (h.type() == EthernetWire.TOKEN && ((r.buffer().address() + h.offset()) & (Long.BYTES - 1)) != 0) {
            return "a token must be 8-byte aligned";
        }
        return null;
    }

    private void body(ChannelHandlerContext ctx, ByteBuf in) {
        int n = (int) Math.min(remaining, in.readableBytes());
        if (type == EthernetWire.TOKEN) {
            // 8 bytes: gathered whatever the destination, then stored as one word
            if (gathered == null) {
                gathered = ctx.alloc().heapBuffer(Long.BYTES, Long.BYTES);
            }
            gathered.writeBytes(in, n);
        } else if (target != null) {
            long at = target.byteSize() - remaining;
            in.readBytes(target.asSlice(at, n).asByteBuffer());
        } else {
            gathered.writeBytes(in, n);
        }
        remaining -= n;
        if (remaining == 0) {
            finishFrame(ctx);
        }
    }

    private void finishFrame(ChannelHandlerContext ctx) {
        EthernetSession.Region r = region;
        ByteBuf body = gathered;
        gathered = null;
        target = null;
        region = null;
        state = State.HEADER;
        long seq = sequence;
        if (type == EthernetWire.TOKEN) {
            long value = body.getLongLE(0);
            body.release();
            if (offloadFrames == 0 && r.buffer().hostAccessible() && !session.offloadAlways()) {
                storeToken(r.buffer(), bodyOffset, value);
                applied = seq;
                stored = true;
            } else {
                long off = bodyOffset;
                submit(ctx, seq, 0, () -> storeToken(r.buffer(), off, value));
            }
        } else if (body == null) {
            applied = seq;
            stored = true;
        } else {
            long off = bodyOffset;
            int bytes = body.readableBytes();
            submit(ctx, seq, bytes, () -> {
                try {
                    copyIn(r.buffer(), off, body);
                } finally {
                    body.release();
                }
            });
        }
    }

    private void storeToken(DeviceBuffer buffer, long offset, long value) {
        if (buffer.hostAccessible()) {
            WORD.setRelease(buffer.hostSegment(), offset, value);
        } else {
            MemorySegment word = MemorySegment.ofArray(new long[] {value});
            session.backend().copyFromHost(buffer, offset, word);
        }
    }

    private void copyIn(DeviceBuffer buffer, long offset, ByteBuf body) {
        Backend backend = session.backend();
        if (buffer.hostAccessible()) {
            body.getBytes(body.readerIndex(), buffer.hostSegment().asSlice(offset, body.readableBytes()).asByteBuffer());
        } else {
            backend.copyFromHost(buffer, offset, MemorySegment.ofBuffer(body.nioBuffer()));
        }
    }

    /**
     * Applies a frame on this connection's apply thread, after the frames submitted before it. A
     * platform thread: the peer's flush waits for what it applies, and a virtual thread can wait
     * behind whatever holds the few carrier threads of a small host (an ETHERNET test saw applies
     * delayed past a 30 s flush deadline on two loaded cores).
     */
    private void submit(ChannelHandlerContext ctx, long seq, int bytes, Runnable apply) {
        if (offload == null) {
            offload = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon()
                    .name("jmscclpp-ethernet-apply").factory());
        }
        offloadFrames++;
        offloadBytes += bytes;
        if (offloadBytes > OFFLOAD_HIGH) {
            ctx.channel().config().setAutoRead(false);
        }
        offload.execute(() -> {
            RuntimeException failed = null;
            try {
                apply.run();
            } catch (RuntimeException e) {
                failed = e;
            }
            RuntimeException f = failed;
            ctx.executor().execute(() -> {
                offloadFrames--;
                offloadBytes -= bytes;
                if (f != null) {
                    reject(ctx, "cannot apply frame " + seq + ": " + f);
                    return;
                }
                if (state == State.DEAD) {
                    return;
                }
                applied = seq;
                Waiting.wake();
                if (offloadBytes < OFFLOAD_LOW && !ctx.channel().config().isAutoRead()) {
                    ctx.channel().config().setAutoRead(true);
                }
                acknowledge(ctx);
            });
        });
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        acknowledge(ctx);
    }

    /** Acknowledges what is applied once the latest frame that asked for it is applied. */
    private void acknowledge(ChannelHandlerContext ctx) {
        if (state != State.DEAD && ackWanted > acknowledged && applied >= ackWanted) {
            acknowledged = applied;
            ctx.writeAndFlush(EthernetWire.ack(ctx.alloc(), applied));
        }
    }

    /** Ends this connection: logs why, tells the dialler, closes. Memory is not touched. */
    private void reject(ChannelHandlerContext ctx, String why) {
        if (state == State.DEAD) {
            return;
        }
        boolean proven = state != State.HELLO && state != State.PROOF;
        state = State.DEAD;
        String who = hello == null ? "an unidentified dialler"
                : "rank " + hello.sender() + " (tag " + hello.tag() + ")";
        LOG.log(Level.WARNING, "{0}: ETHERNET from {1} at {2} rejected: {3}; closing this connection",
                session.rankName(), who, ctx.channel().remoteAddress(), why);
        cleanUp();
        if (!ctx.channel().isActive()) {
            return;
        }
        if (!proven) {
            // a connection that never proved the secret is not read any further: the ERROR goes out
            // and the connection closes at once (an honest dialler waits for the challenge, so
            // nothing of its is unread and it sees the reason; anything else may get a reset)
            ctx.channel().config().setAutoRead(false);
            ctx.writeAndFlush(EthernetWire.error(ctx.alloc(), why)).addListener(f -> ctx.close());
            return;
        }
        // the ERROR frame must not be overtaken by a reset; what still comes is dropped (DEAD)
        LingeringClose.after(ctx.writeAndFlush(EthernetWire.error(ctx.alloc(), why)),
                TimeUnit.SECONDS.toMillis(LINGER_SECONDS));
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        state = State.DEAD;
        cleanUp();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        reject(ctx, "socket error: " + cause);
        ctx.close();
    }

    private void cleanUp() {
        cancelHandshakeDeadline();
        release(partial);
        partial = null;
        release(gathered);
        gathered = null;
        target = null;
        if (offload != null) {
            // queued frames still release their buffers; shutdown lets them run but takes no new ones
            offload.shutdown();
        }
    }

    private void cancelHandshakeDeadline() {
        if (handshakeDeadline != null) {
            handshakeDeadline.cancel(false);
            handshakeDeadline = null;
        }
    }

    private static void release(@Nullable ByteBuf b) {
        if (b != null && b.refCnt() > 0) {
            ReferenceCountUtil.release(b);
        }
    }
}
