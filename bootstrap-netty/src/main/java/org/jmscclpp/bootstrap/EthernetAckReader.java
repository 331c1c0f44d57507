package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The dialler's decoder of what the listener sends back ({@link EthernetWire}): ACK frames, handed
 * to the connection as they arrive, and at most one ERROR frame, after which the listener closes.
 * Anything else ends the connection with the reason.
 */
final class EthernetAckReader extends ByteToMessageDecoder {

    private final EthernetConnection connection;
    private boolean done;

    EthernetAckReader(EthernetConnection connection) {
        this.connection = connection;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        while (!done && in.readableBytes() >= EthernetWire.HEADER_BYTES) {
            int start = in.readerIndex();
            int length = in.getIntLE(start + 4);
            byte type = in.getByte(start);
            if (type == EthernetWire.ERROR && length >= 0 && length <= EthernetWire.MAX_REASON
                    && in.readableBytes() < EthernetWire.HEADER_BYTES + length) {
                return;   // the reason is not all here yet
            }
            EthernetWire.Header h = EthernetWire.readHeader(in);
            String why = null;
            if (h.reserved() != 0 || h.region() != 0 || h.offset() != 0) {
                why = "non-zero reserved fields in a " + EthernetWire.typeName(h.type()) + " frame";
            } else if (h.type() == EthernetWire.ACK && h.length() == 0) {
                why = connection.onAck(h.sequence());
            } else if (h.type() == EthernetWire.ERROR && h.length() >= 0 && h.length() <= EthernetWire.MAX_REASON) {
                String reason = in.readCharSequence(h.length(), StandardCharsets.UTF_8).toString();
                connection.onPeerError(reason);
                done = true;
                ctx.close();
            } else {
                why = "unexpected " + EthernetWire.typeName(h.type()) + " frame of " + h.length() + " bytes";
            }
            if (why != null) {
                connection.onProtocolError(why);
                done = true;
                ctx.close();
            }
        }
        if (done) {
            in.skipBytes(in.readableBytes());
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
        connection.wakeWriters();
        super.channelWritabilityChanged(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        connection.onClosed();
        super.channelInactive(ctx);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        connection.onProtocolError("socket error: " + cause);
        ctx.close();
    }
}
