package org.jmscclpp.bootstrap.wire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.nio.ByteOrder;
import org.jspecify.annotations.Nullable;

/**
 * Splits the byte stream into {@link Frame}s, in the layout that {@link Frame} describes
 * ({@link FrameEncoder} writes them). The length is checked before any payload is buffered: a frame
 * longer than the limit, or shorter than a header, fails the decoder and the owner closes the
 * connection.
 */
public final class FrameDecoder extends LengthFieldBasedFrameDecoder {

    /** A decoder that refuses frames whose payload is longer than {@code maxPayloadBytes}. */
    public FrameDecoder(int maxPayloadBytes) {
        super(ByteOrder.LITTLE_ENDIAN, Frame.LENGTH_BYTES + Frame.HEADER_BYTES + maxPayloadBytes,
                0, Frame.LENGTH_BYTES, 0, Frame.LENGTH_BYTES, true);
        // A large frame arrives in many reads: keep them as components instead of copying each
        // into one growing buffer; the payload is copied once, into the message, by the mailbox.
        setCumulator(COMPOSITE_CUMULATOR);
    }

    @Override
    protected @Nullable Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
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
}
