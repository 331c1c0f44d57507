package org.jmscclpp.bootstrap.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * Bytes of the bootstrap's wire format for tests, made with the main code's own encoders
 * ({@link Preamble#writeTo}, {@link FrameEncoder}, {@link Proofs}) so the tests never carry a second
 * copy of the layout; tests that need malformed bytes start from these and change the documented
 * offsets. {@link #dial} runs the connecting side of the handshake over a plain socket.
 */
public final class WireBytes {

    /** Offsets in a preamble, from the byte diagram of {@link Preamble}. */
    public static final int PREAMBLE_VERSION_OFFSET = 4;
    static final int PREAMBLE_TYPE_OFFSET = 6;
    static final int PREAMBLE_NONCE_OFFSET = 8;
    /** What the accepting side answers a preamble with: its preamble, then its proof. */
    public static final int ANSWER_BYTES = Preamble.BYTES + Preamble.PROOF_BYTES;

    private WireBytes() {
    }

    /** A preamble with these fields and a fresh nonce, as {@link Preamble#writeTo} writes it. */
    public static byte[] preamble(byte type, byte[] session, int sender, int receiverOrSize) {
        return new Preamble(type, session, sender, receiverOrSize).toBytes();
    }

    /** The preamble a rank sends to the root: type ROOT, no session, its rank and the job's rank count. */
    public static byte[] rootPreamble(int rank, int size) {
        return preamble(Preamble.TYPE_ROOT, Preamble.noSession(), rank, size);
    }

    /** The accepting side's proof of {@code secret} for this pair of preambles, as {@link PreambleHandler} makes it. */
    public static byte[] acceptProof(byte[] secret, byte[] dialler, byte[] acceptor) {
        return Proofs.compute(secret, Preamble.ACCEPT_LABEL, dialler, acceptor);
    }

    /** The connecting side's proof of {@code secret} for this pair of preambles. */
    public static byte[] dialProof(byte[] secret, byte[] dialler, byte[] acceptor) {
        return Proofs.compute(secret, Preamble.DIAL_LABEL, dialler, acceptor);
    }

    /**
     * Dials as a rank does, over a plain socket: sends {@code preamble}, reads the answer (the
     * acceptor's preamble and proof), checks the acceptor's proof of {@code secret} (an
     * {@link AssertionError} if wrong) and sends this side's proof made with {@code proofSecret}
     * followed by {@code then}. Returns the acceptor's preamble bytes; the bytes this side sent are
     * appended to {@code sent} when it is not null (tests replay them).
     */
    public static byte[] dial(Socket s, byte[] preamble, byte[] secret, byte[] proofSecret, byte[] then,
                              @Nullable ByteArrayOutputStream sent)
            throws IOException {
        s.getOutputStream().write(preamble);
        byte[] answer = s.getInputStream().readNBytes(ANSWER_BYTES);
        if (answer.length != ANSWER_BYTES) {
            throw new AssertionError("the acceptor closed after " + answer.length + " of " + ANSWER_BYTES
                    + " bytes of its answer");
        }
        byte[] theirs = Arrays.copyOf(answer, Preamble.BYTES);
        byte[] proof = Arrays.copyOfRange(answer, Preamble.BYTES, ANSWER_BYTES);
        if (!Arrays.equals(acceptProof(secret, preamble, theirs), proof)) {
            throw new AssertionError("the acceptor's proof of the job secret is wrong");
        }
        byte[] mine = concat(dialProof(proofSecret, preamble, theirs), then);
        s.getOutputStream().write(mine);
        if (sent != null) {
            sent.writeBytes(preamble);
            sent.writeBytes(mine);
        }
        return theirs;
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
     * The preamble in {@code bytes}, read and checked (magic, version, type) as a receiver does;
     * fails the test with the reason when it is unacceptable.
     */
    public static Preamble readPreamble(byte[] bytes) {
        ByteBuf buf = Unpooled.wrappedBuffer(bytes);
        try {
            Preamble[] out = new Preamble[1];
            String why = Preamble.read(buf, out);
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
