package org.jmscclpp.bootstrap.wire;

import io.netty.buffer.ByteBuf;
import java.security.MessageDigest;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The 64 bytes that open every TCP connection of the bootstrap, in both directions: the connecting
 * side sends its preamble first, the accepting side checks it and answers with its own, and each
 * side drops a connection whose preamble is wrong without disturbing the job.
 *
 * <pre>
 * offset  width  meaning (integers little-endian)
 *      0      4  magic "JMBS" (0x4A 0x4D 0x42 0x53)
 *      4      2  protocol version ({@link #VERSION})
 *      6      1  socket type: 1 = rank to root, 2 = rank to rank
 *      7      1  reserved, 0
 *      8     32  job secret (from the unique id, or derived from the explicit address)
 *     40     16  job session: 0 towards the root; the session the root handed out otherwise
 *     56      4  sender rank
 *     60      4  receiver rank (rank to rank), or the sender's rank count (rank to root)
 * </pre>
 * The secret is compared in constant time.
 */
public final class Preamble {

    /** Size of a preamble. */
    public static final int BYTES = 64;
    static final int MAGIC = 0x53424D4A; // "JMBS" read little-endian
    /** The protocol version this side speaks (also carried in the unique id). */
    public static final short VERSION = 1;
    /** Socket type of a rank's connection to the root. */
    public static final byte TYPE_ROOT = 1;
    /** Socket type of a connection between two ranks. */
    public static final byte TYPE_PEER = 2;
    /** Size of the job secret. */
    public static final int SECRET_BYTES = 32;
    /** Size of the job session. */
    public static final int SESSION_BYTES = 16;

    /** {@link #TYPE_ROOT} or {@link #TYPE_PEER}. */
    public final byte type;
    final byte[] secret;
    final byte[] session;
    /** The sender's rank. */
    public final int sender;
    /** The receiver's rank (rank to rank), or the sender's rank count (rank to root). */
    public final int receiverOrSize;

    /** A preamble with the fields of the diagram; {@link #writeTo} puts it on the wire. */
    public Preamble(byte type, byte[] secret, byte[] session, int sender, int receiverOrSize) {
        this.type = type;
        this.secret = secret;
        this.session = session;
        this.sender = sender;
        this.receiverOrSize = receiverOrSize;
    }

    /** Appends the {@link #BYTES} bytes of this preamble to {@code out}. */
    public void writeTo(ByteBuf out) {
        out.writeIntLE(MAGIC);
        out.writeShortLE(VERSION);
        out.writeByte(type);
        out.writeByte(0);
        out.writeBytes(secret, 0, SECRET_BYTES);
        out.writeBytes(session, 0, SESSION_BYTES);
        out.writeIntLE(sender);
        out.writeIntLE(receiverOrSize);
    }

    /**
     * Reads a preamble from exactly {@link #BYTES} readable bytes and checks magic, version and
     * secret; returns the reason it is unacceptable, or null when it is acceptable (then {@code out[0]}
     * holds it).
     */
    static @Nullable String read(ByteBuf in, byte[] expectedSecret, Preamble[] out) {
        int magic = in.readIntLE();
        short version = in.readShortLE();
        byte type = in.readByte();
        in.skipBytes(1);
        byte[] secret = new byte[SECRET_BYTES];
        in.readBytes(secret);
        byte[] session = new byte[SESSION_BYTES];
        in.readBytes(session);
        int sender = in.readIntLE();
        int other = in.readIntLE();
        if (magic != MAGIC) {
            return "not a jmscclpp bootstrap connection (bad magic 0x" + Integer.toHexString(magic) + ")";
        }
        if (version != VERSION) {
            return "protocol version " + version + ", this side speaks " + VERSION;
        }
        if (!MessageDigest.isEqual(secret, expectedSecret)) {
            return "wrong job secret (a different job, or a stray connection)";
        }
        if (type != TYPE_ROOT && type != TYPE_PEER) {
            return "unknown socket type " + type;
        }
        out[0] = new Preamble(type, secret, session, sender, other);
        return null;
    }

    /** Whether this preamble carries the job session {@code expected}; compared in constant time. */
    public boolean sessionEquals(byte[] expected) {
        return MessageDigest.isEqual(session, expected);
    }

    /** The session of a preamble towards the root, before the job has one: all zero. */
    public static byte[] noSession() {
        return new byte[SESSION_BYTES];
    }

    @Override
    public String toString() {
        return "Preamble[type=" + type + ", sender=" + sender + ", other=" + receiverOrSize
                + ", session=" + Arrays.hashCode(session) + "]";
    }
}
