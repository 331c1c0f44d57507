package org.jmscclpp.ethernet;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.jmscclpp.bootstrap.wire.Preamble;
import org.jmscclpp.bootstrap.wire.Proofs;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * The one description of what the {@code ETHERNET} transport puts on its sockets, with the
 * encoders of every frame; {@link EthernetReceiver} and {@link EthernetAckReader} are its decoders.
 * Integers are little-endian.
 *
 * <p>Each {@link EthernetConnection} is one TCP connection, dialled by the writing rank to the
 * listening socket of the peer's {@link EthernetSession}: writes flow from dialler to listener,
 * acknowledgements back. A pair of ranks connected both ways thus uses two TCP connections.
 *
 * <h2>Endpoint info (inside {@link org.jmscclpp.core.spi.Endpoint}, through the bootstrap)</h2>
 * <pre>
 *  offset  width  field
 *       0     32  the listener's session secret (random per communicator; the key of the handshake,
 *                 never sent on an ETHERNET connection)
 *      32      1  A = address length, 4 (IPv4) or 16 (IPv6)
 *      33      A  listening address
 *    33+A      2  listening port
 * </pre>
 *
 * <h2>Memory handle (inside {@link org.jmscclpp.core.RegisteredMemory})</h2>
 * 8 bytes: the region id the owner's session gave the buffer. Writes name a region and an offset
 * in it, never a raw address, so a receiver checks a range against a table of its own buffers.
 *
 * <h2>Handshake: the dialler proves it knows the listener's secret, and the listener proves it too</h2>
 * First the dialler sends its hello, {@value #HELLO_BYTES} bytes:
 * <pre>
 *  offset  width  field
 *       0      4  magic "JMET" (0x4A 0x4D 0x45 0x54)
 *       4      2  version, {@value #VERSION}
 *       6      2  reserved, 0
 *       8     32  the dialler's nonce: fresh random bytes (SecureRandom)
 *      40      4  sender rank (the dialler)
 *      44      4  receiver rank (the listener)
 *      48      4  communicator tag of the connection
 *      52      4  reserved, 0
 * </pre>
 * The listener checks it and answers with a {@code CHALLENGE} frame (sequence 0) whose
 * {@value #CHALLENGE_BYTES}-byte body is its own 32-byte nonce N followed by
 * {@code HMAC-SHA256(secret, "jmscclpp-ethernet-v2 accept" || hello || N)}, or with an
 * {@code ERROR} frame and closes. The dialler checks that proof (a wrong one ends the connection),
 * then sends {@code HMAC-SHA256(secret, "jmscclpp-ethernet-v2 dial" || hello || N)}, 32 bytes with
 * no header, and its frames may follow at once. The listener reads no frame before that proof
 * checked (compared in constant time); a wrong one, or a handshake unfinished after
 * {@code EthernetSession#HANDSHAKE_TIMEOUT_NANOS}, gets an {@code ERROR} frame and the connection
 * closed at once, unread. Both proofs cover both nonces and every field of the hello, so a recorded
 * handshake opens no other connection, and neither proof is valid in the other direction.
 *
 * <h2>Frames, both directions after the hello</h2>
 * <pre>
 *  offset  width  field
 *       0      1  type: 1 WRITE, 2 TOKEN, 6 SYNC (dialler to listener); 3 ACK, 4 ERROR, 5 CHALLENGE
 *                 (listener to dialler)
 *       1      1  flags: bit 0 ACK_WANTED (WRITE, TOKEN); other bits 0
 *       2      2  reserved, 0
 *       4      4  L = length of the body that follows the header
 *       8      8  sequence number: 1, 2, 3, ... per connection, one per WRITE, TOKEN and SYNC;
 *                 for ACK the highest sequence applied (every lower one is applied too)
 *      16      8  region id (WRITE, TOKEN; 0 otherwise)
 *      24      8  offset in the region (WRITE, TOKEN; 0 otherwise)
 *      32      L  body: WRITE the bytes, at most {@value #MAX_CHUNK}; TOKEN the 64-bit value
 *                 (L = 8, offset 8-byte aligned); SYNC and ACK nothing; ERROR the reason in UTF-8, at
 *                 most {@value #MAX_REASON}; CHALLENGE the listener's nonce and proof (L = {@value #CHALLENGE_BYTES})
 * </pre>
 * The listener acknowledges only when asked, at the end of the read that applied the frame that
 * asked (every lower sequence is applied too): a SYNC frame asks, and so does a WRITE or TOKEN with
 * ACK_WANTED. The dialler sets ACK_WANTED on the frames that follow a flush closely (within
 * {@code EthernetConnection#EAGER_FRAMES} frames of the last one), where another flush is likely
 * to wait for them, so that flush needs no SYNC of its own and its ack is on its way as soon as the
 * data is in; a flush whose last frame did not ask sends a SYNC. A stream of writes and signals with
 * no flush (a ping-pong, a pipeline that signals its peer) thus costs the listener no send and the
 * dialler's ack thread no wake-up. A rejected frame is still reported at once, with ERROR.
 * A write larger than {@value #MAX_CHUNK} bytes travels as several WRITE frames. A receiver checks
 * each header before taking a byte of its body (known type, zero reserved bytes, length within
 * bounds, region registered here, range inside the region, next sequence number) and on any
 * failure sends ERROR with the reason and closes that connection only: memory is never touched by
 * a frame that failed a check.
 */
final class EthernetWire {

    static final int MAGIC = 0x54454D4A; // "JMET" read little-endian
    static final short VERSION = 3;
    static final int SECRET_BYTES = 32;
    static final int HELLO_BYTES = 56;
    static final int HEADER_BYTES = 32;
    static final int HANDLE_BYTES = 8;

    static final byte WRITE = 1;
    static final byte TOKEN = 2;
    static final byte ACK = 3;
    static final byte ERROR = 4;
    static final byte CHALLENGE = 5;
    static final byte SYNC = 6;
    /** Flag in a WRITE or TOKEN header: acknowledge once this frame is applied. */
    static final int ACK_WANTED = 1;
    /** Body of a CHALLENGE: the listener's nonce, then its proof. */
    static final int CHALLENGE_BYTES = Preamble.NONCE_BYTES + Proofs.BYTES;
    static final String ACCEPT_LABEL = "jmscclpp-ethernet-v2 accept";
    static final String DIAL_LABEL = "jmscclpp-ethernet-v2 dial";

    /** Largest WRITE body; writes are cut into chunks of this size. */
    static final int MAX_CHUNK = 1 << 20;
    static final int MAX_REASON = 1024;

    private EthernetWire() {
    }

    // ---- endpoint info

    /** The endpoint info of a listener at {@code address} with {@code secret}. */
    static byte[] endpointInfo(byte[] secret, InetSocketAddress address) {
        byte[] ip = address.getAddress().getAddress();
        ByteBuffer b = ByteBuffer.allocate(SECRET_BYTES + 1 + ip.length + 2).order(ByteOrder.LITTLE_ENDIAN);
        b.put(secret).put((byte) ip.length).put(ip).putShort((short) address.getPort());
        return b.array();
    }

    /** A peer's listener, read from its endpoint info. */
    record Listener(byte[] secret, InetSocketAddress address) {
    }

    /** Parses {@link #endpointInfo}; anything else is {@link ErrorCode#INVALID_USAGE}. */
    static Listener parseEndpointInfo(byte[] info) {
        ByteBuffer b = ByteBuffer.wrap(info).order(ByteOrder.LITTLE_ENDIAN);
        if (info.length < SECRET_BYTES + 1) {
            throw badInfo("only " + info.length + " bytes");
        }
        byte[] secret = new byte[SECRET_BYTES];
        b.get(secret);
        int a = Byte.toUnsignedInt(b.get());
        if ((a != 4 && a != 16) || b.remaining() != a + 2) {
            throw badInfo("address length " + a + " with " + b.remaining() + " bytes left");
        }
        byte[] ip = new byte[a];
        b.get(ip);
        int port = Short.toUnsignedInt(b.getShort());
        if (port == 0) {
            throw badInfo("port 0");
        }
        try {
            return new Listener(secret, new InetSocketAddress(InetAddress.getByAddress(ip), port));
        } catch (UnknownHostException e) {
            throw badInfo(e.getMessage());
        }
    }

    private static JmscclppException badInfo(String why) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "malformed ETHERNET endpoint: " + why)
                .phase("connect").build();
    }

    // ---- memory handle

    static byte[] handle(long region) {
        return ByteBuffer.allocate(HANDLE_BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(region).array();
    }

    /** The region id of a handle, or null when it is not a handle of this transport. */
    static @Nullable Long region(byte @Nullable [] handle) {
        if (handle == null || handle.length != HANDLE_BYTES) {
            return null;
        }
        return ByteBuffer.wrap(handle).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    // ---- hello

    /** A hello of {@code sender} to {@code receiver} for {@code tag}, with a fresh nonce. */
    static byte[] hello(int sender, int receiver, int tag) {
        return hello(Proofs.nonce(), sender, receiver, tag);
    }

    static byte[] hello(byte[] nonce, int sender, int receiver, int tag) {
        ByteBuffer b = ByteBuffer.allocate(HELLO_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).putShort(VERSION).putShort((short) 0);
        b.put(nonce, 0, Preamble.NONCE_BYTES);
        b.putInt(sender).putInt(receiver).putInt(tag).putInt(0);
        return b.array();
    }

    /** A hello that passed its checks, and its bytes (the proofs cover them). */
    record Hello(int sender, int receiver, int tag, byte[] bytes) {
    }

    /**
     * Reads a hello from {@link #HELLO_BYTES} readable bytes; returns why it is unacceptable, or
     * null with the hello in {@code out[0]}. Whether the dialler knows the secret is the proofs' business.
     */
    static @Nullable String readHello(ByteBuf in, Hello[] out) {
        byte[] bytes = new byte[HELLO_BYTES];
        in.readBytes(bytes);
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int magic = b.getInt();
        int version = Short.toUnsignedInt(b.getShort());
        int reserved = Short.toUnsignedInt(b.getShort());
        b.position(b.position() + Preamble.NONCE_BYTES);
        int sender = b.getInt();
        int receiver = b.getInt();
        int tag = b.getInt();
        int reserved2 = b.getInt();
        if (magic != MAGIC) {
            return "not a jmscclpp ETHERNET connection (magic 0x" + Integer.toHexString(magic) + ")";
        }
        if (version != VERSION) {
            return "protocol version " + version + ", this side speaks " + VERSION;
        }
        if (reserved != 0 || reserved2 != 0) {
            return "non-zero reserved bytes in the hello";
        }
        if (sender < 0 || receiver < 0 || tag < 0) {
            return "negative rank or tag in the hello (" + sender + ", " + receiver + ", " + tag + ")";
        }
        out[0] = new Hello(sender, receiver, tag, bytes);
        return null;
    }

    /** The listener's proof in its CHALLENGE: over the dialler's {@code hello} and its own {@code nonce}. */
    static byte[] acceptProof(byte[] secret, byte[] hello, byte[] nonce) {
        return Proofs.compute(secret, ACCEPT_LABEL, hello, nonce);
    }

    /** The dialler's proof, sent once the listener's checked. */
    static byte[] dialProof(byte[] secret, byte[] hello, byte[] nonce) {
        return Proofs.compute(secret, DIAL_LABEL, hello, nonce);
    }

    /** The CHALLENGE frame: header, the listener's nonce, its proof. */
    static ByteBuf challenge(ByteBufAllocator alloc, byte[] nonce, byte[] proof) {
        ByteBuf out = alloc.buffer(HEADER_BYTES + CHALLENGE_BYTES);
        header(out, CHALLENGE, CHALLENGE_BYTES, 0, 0, 0);
        out.writeBytes(nonce, 0, Preamble.NONCE_BYTES).writeBytes(proof, 0, Proofs.BYTES);
        return out;
    }

    // ---- frames

    static void header(ByteBuf out, byte type, int length, long sequence, long region, long offset) {
        header(out, type, 0, length, sequence, region, offset);
    }

    /** A header with {@code flags} ({@link #ACK_WANTED} or 0) in its first reserved byte. */
    static void header(ByteBuf out, byte type, int flags, int length, long sequence, long region, long offset) {
        out.writeByte(type).writeByte(flags).writeShortLE(0).writeIntLE(length)
                .writeLongLE(sequence).writeLongLE(region).writeLongLE(offset);
    }

    static ByteBuf writeHeader(ByteBufAllocator alloc, int length, long sequence, long region, long offset) {
        ByteBuf out = alloc.directBuffer(HEADER_BYTES);
        header(out, WRITE, length, sequence, region, offset);
        return out;
    }

    static ByteBuf token(ByteBufAllocator alloc, long sequence, long region, long offset, long value) {
        return token(alloc.directBuffer(HEADER_BYTES + Long.BYTES), sequence, region, offset, value);
    }

    /** Appends a whole TOKEN frame to {@code out}; returns it. */
    static ByteBuf token(ByteBuf out, long sequence, long region, long offset, long value) {
        return token(out, 0, sequence, region, offset, value);
    }

    /** Appends a whole TOKEN frame with {@code flags} to {@code out}; returns it. */
    static ByteBuf token(ByteBuf out, int flags, long sequence, long region, long offset, long value) {
        header(out, TOKEN, flags, Long.BYTES, sequence, region, offset);
        return out.writeLongLE(value);
    }

    /** Appends a whole SYNC frame to {@code out}; returns it. */
    static ByteBuf sync(ByteBuf out, long sequence) {
        header(out, SYNC, 0, sequence, 0, 0);
        return out;
    }

    static ByteBuf ack(ByteBufAllocator alloc, long sequence) {
        ByteBuf out = alloc.buffer(HEADER_BYTES);
        header(out, ACK, 0, sequence, 0, 0);
        return out;
    }

    static ByteBuf error(ByteBufAllocator alloc, String reason) {
        byte[] text = reason.getBytes(StandardCharsets.UTF_8);
        int n = Math.min(text.length, MAX_REASON);
        ByteBuf out = alloc.buffer(HEADER_BYTES + n);
        header(out, ERROR, n, 0, 0, 0);
        out.writeBytes(text, 0, n);
        return out;
    }

    /** A frame header as read, before its checks. */
    record Header(byte type, int reserved, int length, long sequence, long region, long offset) {
    }

    static Header readHeader(ByteBuf in) {
        byte type = in.readByte();
        int reserved = in.readUnsignedMediumLE();
        int length = in.readIntLE();
        return new Header(type, reserved, length, in.readLongLE(), in.readLongLE(), in.readLongLE());
    }

    static String typeName(byte type) {
        return switch (type) {
            case WRITE -> "WRITE";
            case TOKEN -> "TOKEN";
            case ACK -> "ACK";
            case ERROR -> "ERROR";
            case CHALLENGE -> "CHALLENGE";
            case SYNC -> "SYNC";
            default -> "unknown type " + Byte.toUnsignedInt(type);
        };
    }
}
