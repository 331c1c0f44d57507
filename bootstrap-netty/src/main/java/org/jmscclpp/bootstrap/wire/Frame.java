package org.jmscclpp.bootstrap.wire;

import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCounted;

/**
 * One frame of a bootstrap connection, after the preamble. Every frame is length-prefixed; the
 * length is checked against the limit ({@link org.jmscclpp.bootstrap.BootstrapOptions#maxFrameBytes()})
 * before anything is buffered, and a message larger than the limit travels as several frames of the
 * same kind and channel, the last one flagged {@link #LAST}.
 *
 * <p>This diagram is the one description of the layout: {@link FrameEncoder} writes it (the only
 * code that does) and {@link FrameDecoder} reads it. A frame holds one reference to its payload;
 * writing it hands that reference to the encoder.
 *
 * <pre>
 * offset  width  meaning (integers little-endian)
 *      0      4  length of the rest of the frame (12 + payload bytes)
 *      4      1  kind (see the constants below)
 *      5      1  flags: bit 0 = LAST (final frame of a message)
 *      6      2  reserved, 0
 *      8      8  channel: the tag (user messages), the collective's sequence number
 *                (collective messages), an error code (errors), how many connections the
 *                sender has with the receiver (goodbye); 0 otherwise
 *     16      n  payload
 * </pre>
 */
public record Frame(byte kind, byte flags, long channel, ByteBuf payload) implements ReferenceCounted {

    static final int HEADER_BYTES = 12; // after the length field
    static final int LENGTH_BYTES = 4;

    /** A user message of {@code Bootstrap.send}; channel = tag. */
    public static final byte USER = 1;
    /** A message of a collective (allGather, barrier, broadcast, init); channel = sequence number. */
    public static final byte COLLECTIVE = 2;
    /** Rank to root: the rank's check-in (rank, size, host, listen address). */
    public static final byte CHECK_IN = 3;
    /** Root to rank: the job session and, for rank 0, the address book. */
    public static final byte WELCOME = 4;
    /**
     * An error for the receiver: channel = ErrorCode ordinal; payload = the error as the bootstrap
     * encodes it ({@code Failure}).
     */
    public static final byte FAILURE = 5;
    /**
     * The sender is closing its bootstrap normally; no more frames follow on this connection.
     * Channel = the sender's number of connections with the receiver, each of which carries one.
     */
    public static final byte GOODBYE = 6;

    /** Flag of the final frame of a message. */
    public static final byte LAST = 1;

    /** Whether this is the final frame of its message. */
    public boolean last() {
        return (flags & LAST) != 0;
    }

    @Override
    public int refCnt() {
        return payload.refCnt();
    }

    @Override
    public Frame retain() {
        payload.retain();
        return this;
    }

    @Override
    public Frame retain(int increment) {
        payload.retain(increment);
        return this;
    }

    @Override
    public Frame touch() {
        payload.touch();
        return this;
    }

    @Override
    public Frame touch(Object hint) {
        payload.touch(hint);
        return this;
    }

    @Override
    public boolean release() {
        return payload.release();
    }

    @Override
    public boolean release(int decrement) {
        return payload.release(decrement);
    }
}
