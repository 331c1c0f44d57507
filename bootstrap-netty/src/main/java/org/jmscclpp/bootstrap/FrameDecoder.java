package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.nio.ByteOrder;

/**
 * Splits the byte stream into {@link Frame}s. The length is checked before any payload is
 * buffered: a frame longer than the limit, or shorter than a header, fails the decoder and the
 * owner closes the connection.
 */
final class FrameDecoder extends LengthFieldBasedFrameDecoder {

    FrameDecoder(int maxPayloadBytes) {
        super(ByteOrder.LITTLE_ENDIAN, Frame.LENGTH_BYTES + Frame.HEADER_BYTES + maxPayloadBytes,
                0, Frame.LENGTH_BYTES, 0, Frame.LENGTH_BYTES, true);
        // A large frame arrives in many reads: keep them as components instead of copying each
        // into one growing buffer; the payload is copied once, into the message, by the mailbox.
        setCumulator(COMPOSITE_CUMULATOR);
    }

    @Override
    protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
        ByteBuf body = (ByteBuf) super.decode(ctx, in);
        if (body == null) {
            return null;
        }
        try {
            if (body.readableBytes() < Frame.HEADER_BYTES) {
                throw new CorruptedFrameException("frame of " + body.readableBytes()
                        + " bytes is shorter than its " + Frame.HEADER_BYTES + "-byte header");
            }
            byte kind = body.readByte();
            byte flags = body.readByte();
            body.skipBytes(2);
            long channel = body.readLongLE();
            return new Frame(kind, flags, channel, body.retainedSlice());
        } finally {
            body.release();
        }
    }

    /**
     * How long a connection that sent its last frame waits for the peer to close too (see
     * {@link LingeringClose}); below the 2 s that closing a bootstrap waits for its connections.
     */
    static final long LAST_FRAME_LINGER_MS = 1_000;

    /**
     * Sends one last frame on {@code ch} from its event loop, then closes it once the frame is
     * written and the peer has closed too, at most {@link #LAST_FRAME_LINGER_MS} later (a welcome,
     * a failure report, a goodbye): an abrupt close could reset the connection before the peer read
     * the frame, and the peer would lose it.
     */
    static void writeLastAndClose(io.netty.channel.Channel ch, byte kind, long channel, ByteBuf payload) {
        ch.eventLoop().execute(() -> {
            write(ch, kind, Frame.LAST, channel, payload, ch.newPromise());
            LingeringClose.after(ch.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER), LAST_FRAME_LINGER_MS);
        });
    }

    /** Writes one frame (header, then payload without copying it); the caller flushes. */
    static void write(io.netty.channel.Channel ch, byte kind, byte flags, long channel, ByteBuf payload,
                      io.netty.channel.ChannelPromise promise) {
        ByteBuf header = ch.alloc().buffer(Frame.LENGTH_BYTES + Frame.HEADER_BYTES);
        header.writeIntLE(Frame.HEADER_BYTES + payload.readableBytes());
        header.writeByte(kind);
        header.writeByte(flags);
        header.writeShortLE(0);
        header.writeLongLE(channel);
        ch.write(header, ch.voidPromise());
        ch.write(payload, promise);
    }
}
