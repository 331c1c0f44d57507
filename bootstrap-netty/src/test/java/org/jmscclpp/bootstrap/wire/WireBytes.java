package org.jmscclpp.bootstrap.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;

/**
 * Bytes of the bootstrap's wire format for tests, made with the main code's own encoders
 * ({@link Preamble#writeTo}, {@link FrameEncoder}) so the tests never carry a second copy of the
 * layout; tests that need malformed bytes start from these and change the documented offsets.
 */
public final class WireBytes {

    /** Offsets in a preamble, from the byte diagram of {@link Preamble}. */
    public static final int PREAMBLE_VERSION_OFFSET = 4;
    static final int PREAMBLE_TYPE_OFFSET = 6;
    static final int PREAMBLE_SECRET_OFFSET = 8;

    private WireBytes() {
    }

    /** A preamble with these fields, as {@link Preamble#writeTo} writes it. */
    public static byte[] preamble(byte type, byte[] secret, byte[] session, int sender, int receiverOrSize) {
        ByteBuf buf = Unpooled.buffer(Preamble.BYTES);
        try {
            new Preamble(type, secret, session, sender, receiverOrSize).writeTo(buf);
            return bytes(buf);
        } finally {
            buf.release();
        }
    }

    /** The preamble a rank sends to the root: type ROOT, no session, its rank and the job's rank count. */
    public static byte[] rootPreamble(byte[] secret, int rank, int size) {
        return preamble(Preamble.TYPE_ROOT, secret, Preamble.noSession(), rank, size);
    }

    /** One frame as {@link FrameEncoder} puts it on the wire. */
    public static byte[] frame(byte kind, byte flags, long channel, byte[] payload) {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameEncoder());
        try {
            ch.writeOutbound(new Frame(kind, flags, channel, Unpooled.wrappedBuffer(payload)));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (ByteBuf b = ch.readOutbound(); b != null; b = ch.readOutbound()) {
                try {
                    out.writeBytes(bytes(b));
                } finally {
                    b.release();
                }
            }
            return out.toByteArray();
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    /**
     * The preamble in {@code bytes}, read and checked as a receiver expecting {@code secret} does;
     * fails the test with the reason when it is unacceptable.
     */
    public static Preamble readPreamble(byte[] bytes, byte[] secret) {
        ByteBuf buf = Unpooled.wrappedBuffer(bytes);
        try {
            Preamble[] out = new Preamble[1];
            String why = Preamble.read(buf, secret, out);
            if (why != null) {
                throw new AssertionError("not an acceptable preamble: " + why);
            }
            return out[0];
        } finally {
            buf.release();
        }
    }

    /** The readable bytes of {@code buf}, leaving its reader index alone. */
    public static byte[] bytes(ByteBuf buf) {
        byte[] out = new byte[buf.readableBytes()];
        buf.getBytes(buf.readerIndex(), out);
        return out;
    }

    /** The parts one after the other. */
    public static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }
}
