package org.jmscclpp.bootstrap.wire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageEncoder;
import java.util.List;

/**
 * Puts {@link Frame}s on the wire in the layout that {@link Frame} describes. Every bootstrap
 * connection has one in its pipeline from the start, so handlers and other code write frames as
 * messages ({@code channel.write(new Frame(...))}); {@link FrameDecoder} reads them back.
 *
 * <p>A payload of up to {@value #COPY_LIMIT} bytes (barriers, small all-gathers, check-ins) is copied
 * behind the header into one buffer: one outbound message is cheaper than two there. A larger one
 * follows the header's buffer as it is: a message-to-message encoder rather than a
 * {@link io.netty.handler.codec.MessageToByteEncoder}, which would copy every payload (up to
 * {@link org.jmscclpp.bootstrap.BootstrapOptions#maxFrameBytes()}) into one buffer with the header.
 * The frame's reference passes to the outbound buffers: the payload is released once written, or
 * when the write fails.
 */
public final class FrameEncoder extends MessageToMessageEncoder<Frame> {

    /** Payloads up to this many bytes travel in the header's buffer. */
    public static final int COPY_LIMIT = 512;

    /** An encoder for one channel's pipeline. */
    public FrameEncoder() {
        super(Frame.class);
    }

    @Override
    protected void encode(ChannelHandlerContext ctx, Frame frame, List<Object> out) {
        ByteBuf payload = frame.payload();
        int bytes = payload.readableBytes();
        boolean inline = bytes <= COPY_LIMIT;
        ByteBuf header = ctx.alloc().buffer(Frame.LENGTH_BYTES + Frame.HEADER_BYTES + (inline ? bytes : 0));
        header.writeIntLE(Frame.HEADER_BYTES + payload.readableBytes());
        header.writeByte(frame.kind());
        header.writeByte(frame.flags());
        header.writeShortLE(0);
        header.writeLongLE(frame.channel());
        if (inline) {
            header.writeBytes(payload, payload.readerIndex(), bytes);
            out.add(header);
        } else {
            out.add(header);
            out.add(payload.retain());   // the encoder releases the frame, and with it this reference
        }
    }
}
