package org.jmscclpp.bootstrap.wire;

import io.netty.buffer.ByteBuf;
import java.security.MessageDigest;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The 64 bytes each side of a bootstrap TCP connection sends first, and the proofs that follow
 * them: the two sides prove to each other that they know the job secret without sending it.
 *
 * <pre>
 * offset  width  meaning (integers little-endian)
 *      0      4  magic "JMBS" (0x4A 0x4D 0x42 0x53)
 *      4      2  protocol version ({@link #VERSION})
 *      6      1  socket type: 1 = rank to root, 2 = rank to rank
 *      7      1  reserved, 0
 *      8     32  nonce: fresh random bytes of the side that sends this preamble (SecureRandom)
 *     40     16  job session: 0 towards the root; the session the root handed out otherwise
 *     56      4  sender rank (-1 for the root)
 *     60      4  receiver rank (rank to rank), or the job's rank count (rank to root)
 * </pre>
 *
 * <p>The handshake ({@link PreambleHandler}), D the side that connects and A the side that accepts:
 * <ol>
 *   <li>D sends its preamble;</li>
 *   <li>A checks it, then sends its own preamble followed by the 32-byte
 *       {@code HMAC-SHA256(secret, "jmscclpp-bootstrap-v2 accept" || D's preamble || A's preamble)};</li>
 *   <li>D checks that proof, then sends
 *       {@code HMAC-SHA256(secret, "jmscclpp-bootstrap-v2 dial" || D's preamble || A's preamble)},
 *       and its frames may follow at once;</li>
 *   <li>A checks that proof before it reads a frame.</li>
 * </ol>
 * Both proofs cover both nonces and every field (type, session, sender, receiver or rank count),
 * so a recorded exchange proves nothing on a new connection, and neither proof is valid in the
 * other direction. Proofs are compared in constant time ({@link MessageDigest#isEqual}). The
 * secret itself never travels.
 */
public final class Preamble {

    /** Size of a preamble. */
    public static final int BYTES = 64;
    static final int MAGIC = 0x53424D4A; // "JMBS" read little-endian
    /** The protocol version this side speaks (also carried in the unique id). */
    public static final short VERSION = 2;
    /** Socket type of a rank's connection to the root. */
    public static final byte TYPE_ROOT = 1;
    /** Socket type of a connection between two ranks. */
    public static final byte TYPE_PEER = 2;
    /** Size of the job secret. */
    public static final int SECRET_BYTES = 32;
    /** Size of the job session. */
    public static final int SESSION_BYTES = 16;
    /** Size of a preamble's nonce. */
    public static final int NONCE_BYTES = 32;
    /** Size of a proof ({@link Proofs#BYTES}). */
    public static final int PROOF_BYTES = Proofs.BYTES;
    static final String ACCEPT_LABEL = "jmscclpp-bootstrap-v2 accept";
    static final String DIAL_LABEL = "jmscclpp-bootstrap-v2 dial";

    /** {@link #TYPE_ROOT} or {@link #TYPE_PEER}. */
    public final byte type;
    final byte[] session;
    /** The sender's rank. */
    public final int sender;
    /** The receiver's rank (rank to rank), or the job's rank count (rank to root). */
    public final int receiverOrSize;
    /** The {@link #BYTES} bytes of this preamble as they travel (proofs cover them). */
    private final byte[] wire;

    /**
     * This side's preamble with the fields of the diagram and a fresh nonce; {@link #writeTo} puts
     * it on the wire.
     */
    public Preamble(byte type, byte[] session, int sender, int receiverOrSize) {
        this(type, session, sender, receiverOrSize, Proofs.nonce());
    }

    /** A preamble with a given nonce (tests replay and forge with it). */
    public Preamble(byte type, byte[] session, int sender, int receiverOrSize, byte[] nonce) {
        this.type = type;
        this.session = session.clone();
        this.sender = sender;
        this.receiverOrSize = receiverOrSize;
        ByteBuf out = io.netty.buffer.Unpooled.wrappedBuffer(new byte[BYTES]).clear();
        out.writeIntLE(MAGIC);
        out.writeShortLE(VERSION);
        out.writeByte(type);
        out.writeByte(0);
        out.writeBytes(nonce, 0, NONCE_BYTES);
        out.writeBytes(session, 0, SESSION_BYTES);
        out.writeIntLE(sender);
        out.writeIntLE(receiverOrSize);
        this.wire = out.array();
    }

    private Preamble(byte[] wire, byte type, byte[] session, int sender, int receiverOrSize) {
        this.wire = wire;
        this.type = type;
        this.session = session;
        this.sender = sender;
        this.receiverOrSize = receiverOrSize;
    }

    /** Appends the {@link #BYTES} bytes of this preamble to {@code out}. */
    public void writeTo(ByteBuf out) {
        out.writeBytes(wire);
    }

    /** A copy of the bytes of this preamble as they travel. */
    public byte[] toBytes() {
        return wire.clone();
    }

    /**
     * Reads a preamble from exactly {@link #BYTES} readable bytes and checks magic, version and
     * type; returns the reason it is unacceptable, or null when it is acceptable (then {@code out[0]}
     * holds it). Whether its sender knows the secret is the proofs' business.
     */
    static @Nullable String read(ByteBuf in, Preamble[] out) {
        byte[] wire = new byte[BYTES];
        in.readBytes(wire);
        ByteBuf b = io.netty.buffer.Unpooled.wrappedBuffer(wire);
        int magic = b.readIntLE();
        short version = b.readShortLE();
        byte type = b.readByte();
        b.skipBytes(1 + NONCE_BYTES);
        byte[] session = new byte[SESSION_BYTES];
        b.readBytes(session);
        int sender = b.readIntLE();
        int other = b.readIntLE();
        if (magic != MAGIC) {
            return "not a jmscclpp bootstrap connection (bad magic 0x" + Integer.toHexString(magic) + ")";
        }
        if (version != VERSION) {
            return "protocol version " + version + ", this side speaks " + VERSION;
        }
        if (type != TYPE_ROOT && type != TYPE_PEER) {
            return "unknown socket type " + type;
        }
        out[0] = new Preamble(wire, type, session, sender, other);
        return null;
    }

    /** The proof the accepting side sends after its preamble {@code acceptor}, answering {@code dialler}. */
    static byte[] acceptProof(byte[] secret, Preamble dialler, Preamble acceptor) {
        return Proofs.compute(secret, ACCEPT_LABEL, dialler.wire, acceptor.wire);
    }

    /** The proof the connecting side sends once it has checked the acceptor's. */
    static byte[] dialProof(byte[] secret, Preamble dialler, Preamble acceptor) {
        return Proofs.compute(secret, DIAL_LABEL, dialler.wire, acceptor.wire);
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
