package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import java.security.MessageDigest;
import java.util.Arrays;

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
final class Preamble {

    static final int BYTES = 64;
    static final int MAGIC = 0x53424D4A; // "JMBS" read little-endian
    static final short VERSION = 1;
    static final byte TYPE_ROOT = 1;
    static final byte TYPE_PEER = 2;
    static final int SECRET_BYTES = 32;
    static final int SESSION_BYTES = 16;

    final byte type;
    final byte[] secret;
    final byte[] session;
    final int sender;
    final int receiverOrSize;

    Preamble(byte type, byte[] secret, byte[] session, int sender, int receiverOrSize) {
        this.type = type;
        this.secret = secret;
        this.session = session;
        this.sender = sender;
        this.receiverOrSize = receiverOrSize;
    }

    void writeTo(ByteBuf out) {
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
    static String read(ByteBuf in, byte[] expectedSecret, Preamble[] out) {
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

    boolean sessionEquals(byte[] expected) {
        return MessageDigest.isEqual(session, expected);
    }

    static byte[] noSession() {
        return new byte[SESSION_BYTES];
    }

    @Override
    public String toString() {
        return "Preamble[type=" + type + ", sender=" + sender + ", other=" + receiverOrSize
                + ", session=" + Arrays.hashCode(session) + "]";
    }
}
