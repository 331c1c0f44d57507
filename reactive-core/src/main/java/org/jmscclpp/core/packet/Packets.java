package org.jmscclpp.core.packet;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.time.Duration;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.channel.MemoryChannel;
import org.jspecify.annotations.Nullable;

/**
 * What {@link LL16Packet}, {@link LL8Packet} and {@link MemoryChannel}'s packet verbs share: the
 * 64-bit {@code (data, flag)} word both formats are made of, the checks of flags, offsets and
 * ranges, and the deadline of a wait.
 *
 * <p>A word is little-endian: its low 32 bits (bytes 0–3) are the data, its high 32 bits (bytes
 * 4–7) the flag, so that one 64-bit store publishes both, atomically, on any 8-byte-aligned
 * address.
 */
public final class Packets {

    /** The 64-bit word, little-endian and aligned: release stores and acquire loads are single atomic accesses. */
    public static final VarHandle WORD = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN).varHandle();
    /** Payload read from or written to ordinary data, which needs no alignment. */
    static final ValueLayout.OfLong PAYLOAD64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt PAYLOAD32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static final long LOW = 0xFFFF_FFFFL;

    private Packets() {
    }

    static long word(int data, int flag) {
        return ((long) flag << 32) | (data & LOW);
    }

    static int flagOf(long word) {
        return (int) (word >>> 32);
    }

    static long dataOf(long word) {
        return word & LOW;
    }

    /** Flag 0 is what a zeroed or cleared packet holds: a reader could not tell a packet written with it from none. */
    public static void checkFlag(int flag, @Nullable ConnectionContext context, String phase) {
        if (flag == 0) {
            throw invalid(context, phase, "flag 0 is the flag of a cleared packet buffer, so a reader could not tell "
                    + "a packet from no packet: use flags from 1 (as an unsigned 32-bit number)");
        }
    }

    /**
     * Checks [offset, offset + length) against a region of {@code size} bytes.
     *
     * @param what names the region in the message ("the peer's memory (dst)")
     */
    public static void checkRange(long offset, long length, long size, String what, @Nullable ConnectionContext context,
                           String phase) {
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
            throw invalid(context, phase, "range [" + offset + ", " + offset + " + " + length + ") is outside "
                    + what + " of " + size + " bytes");
        }
    }

    /** Checks that {@code value} (an offset or a size, named by {@code what}) is a multiple of {@code multiple}. */
    public static void checkMultiple(long value, int multiple, String what, @Nullable ConnectionContext context, String phase) {
        if (value % multiple != 0) {
            throw invalid(context, phase, what + " " + value + " is not a multiple of " + multiple);
        }
    }

    /**
     * Checks that packets of {@code packetBytes} fit {@code payloadBytes} of payload at
     * {@code offset} of {@code segment}: the packets' address aligned to {@code packetBytes},
     * {@code 2 * payloadBytes} bytes inside the segment.
     */
    static void checkPackets(MemorySegment segment, long offset, long payloadBytes, int packetBytes, int payloadPerPacket,
                             @Nullable ConnectionContext context, String phase) {
        checkMultiple(payloadBytes, payloadPerPacket, "payload size", context, phase);
        if (payloadBytes < 0 || payloadBytes > Long.MAX_VALUE / 2) {
            throw invalid(context, phase, "payload size " + payloadBytes + " is out of range");
        }
        checkRange(offset, 2 * payloadBytes, segment.byteSize(), "the packet buffer", context, phase);
        checkAligned(segment, offset, packetBytes, context, phase);
    }

    /** Checks that {@code segment}'s address plus {@code offset} is a multiple of {@code alignment}. */
    public static void checkAligned(MemorySegment segment, long offset, int alignment, @Nullable ConnectionContext context,
                             String phase) {
        if (!segment.isNative() || ((segment.address() + offset) & (alignment - 1)) != 0) {
            throw invalid(context, phase, "packets are " + alignment + "-byte aligned native memory; offset " + offset
                    + " of " + segment + " is not");
        }
    }

    public static JmscclppException invalid(@Nullable ConnectionContext context, String phase, String detail) {
        return located(JmscclppException.builder(ErrorCode.INVALID_USAGE, detail), context, phase);
    }

    /** The error of memory closed (unmapped) while a packet or copy verb used it. */
    public static JmscclppException closed(@Nullable ConnectionContext context, String phase, RuntimeException cause) {
        return located(JmscclppException.builder(ErrorCode.INVALID_USAGE, "the memory was closed while in use ("
                + cause.getMessage() + ")").cause(cause), context, phase);
    }

    /**
     * The error of a packet that did not arrive: names the packet, the flags found and the one
     * expected, and whether the wait was interrupted (which ends it early).
     */
    public static JmscclppException timeout(@Nullable ConnectionContext context, String phase, long index, long offset,
                                     String found, int flag, Duration timeout) {
        String why = Thread.currentThread().isInterrupted() ? "the waiting thread was interrupted"
                : "not within " + timeout.toMillis() + " ms";
        return located(JmscclppException.builder(ErrorCode.TIMEOUT, "packet " + index + " (offset " + offset
                + " of the packet buffer) did not arrive: " + why + "; its flags are " + found + ", expected "
                + Integer.toUnsignedString(flag)), context, phase);
    }

    private static JmscclppException located(JmscclppException.Builder b, @Nullable ConnectionContext context,
                                             String phase) {
        if (context != null) {
            b.rank(context.rank()).peer(context.remoteRank()).tag(context.tag());
        }
        return b.phase(phase).build();
    }
}
