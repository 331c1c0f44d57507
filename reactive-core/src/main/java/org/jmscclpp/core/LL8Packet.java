package org.jmscclpp.core;

import java.lang.foreign.MemorySegment;
import java.time.Duration;

/**
 * MSCCL++'s {@code LL8Packet} (low-latency protocol, 8 bytes, 4 bytes of payload), as static
 * helpers over packet memory: a {@link MemorySegment} of native memory, typically a packet buffer
 * that a peer maps and writes while this rank reads it. Half the payload per byte of
 * {@link LL16Packet}, but a packet is a single 64-bit word, written by one atomic store.
 *
 * <h2>Layout</h2>
 * Little-endian, 8-byte aligned:
 * <pre>
 *  offset  width  field
 *       0      4  data: the payload
 *       4      4  flag
 * </pre>
 * The writer publishes a packet with one 64-bit release store; the reader loads it with acquire
 * and accepts it when its flag equals the expected flag, so data and flag always come from the
 * same store.
 *
 * <p>A payload of {@code n} bytes (a multiple of {@value #PAYLOAD_BYTES}) takes {@code 2 * n}
 * bytes of packets. Flag 0 is reserved: a zeroed or {@linkplain #clear cleared} buffer holds it,
 * so every method refuses it ({@link ErrorCode#INVALID_USAGE}); flags are compared as 32-bit
 * words. A packet is rewritten only after its reader consumed it.
 *
 * <p>Payload in ordinary data needs no alignment and is read and written little-endian. Every
 * offset and size is checked before anything is written: a rejected call is
 * {@link ErrorCode#INVALID_USAGE} and changes nothing.
 */
public final class LL8Packet {

    /** Bytes of one packet, and its alignment. */
    public static final int BYTES = 8;
    /** Payload bytes one packet carries. */
    public static final int PAYLOAD_BYTES = 4;

    private LL8Packet() {
    }

    /** Bytes of packets that carry {@code payloadBytes} of payload: twice as many. */
    public static long bufferBytes(long payloadBytes) {
        Packets.checkMultiple(payloadBytes, PAYLOAD_BYTES, "payload size", null, "LL8 buffer size");
        Packets.checkRange(0, payloadBytes, Long.MAX_VALUE / 2, "the largest payload", null, "LL8 buffer size");
        return 2 * payloadBytes;
    }

    /** Writes one packet at {@code offset}: {@code data} with {@code flag}. */
    public static void write(MemorySegment packets, long offset, int data, int flag) {
        String phase = "LL8 write";
        Packets.checkFlag(flag, null, phase);
        Packets.checkPackets(packets, offset, PAYLOAD_BYTES, BYTES, PAYLOAD_BYTES, null, phase);
        try {
            store(packets, offset, data, flag);
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }

    /**
     * Waits until the packet at {@code offset} carries {@code flag} and returns its data. Spins
     * briefly, then parks with a growing delay.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} after {@code timeout}, or when the thread
     *                           is interrupted, naming the flag found
     */
    public static int read(MemorySegment packets, long offset, int flag, Duration timeout) {
        String phase = "LL8 read";
        Packets.checkFlag(flag, null, phase);
        Packets.checkPackets(packets, offset, PAYLOAD_BYTES, BYTES, PAYLOAD_BYTES, null, phase);
        long deadline = Waiting.deadline(timeout);
        try {
            if (!arrived(packets, offset, flag) && !Waiting.await(() -> arrived(packets, offset, flag), deadline)) {
                throw Packets.timeout(null, phase, 0, offset, flags(packets, offset), flag, timeout);
            }
            return (int) (long) Packets.WORD.getAcquire(packets, offset);
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }

    /**
     * Packs {@code payloadBytes} of {@code data} from {@code dataOffset} into packets at
     * {@code packetOffset} of {@code packets}, every one with {@code flag}: MSCCL++'s
     * {@code copyToPackets}. {@code payloadBytes} is a multiple of {@value #PAYLOAD_BYTES}.
     */
    public static void copyToPackets(MemorySegment packets, long packetOffset, MemorySegment data, long dataOffset,
                                     long payloadBytes, int flag) {
        String phase = "LL8 copyToPackets";
        Packets.checkFlag(flag, null, phase);
        Packets.checkPackets(packets, packetOffset, payloadBytes, BYTES, PAYLOAD_BYTES, null, phase);
        Packets.checkRange(dataOffset, payloadBytes, data.byteSize(), "the data", null, phase);
        try {
            pack(packets, packetOffset, data, dataOffset, payloadBytes / PAYLOAD_BYTES, flag);
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }

    /**
     * Waits for each of the packets at {@code packetOffset} to carry {@code flag} and unpacks
     * their {@code payloadBytes} of payload into {@code data} at {@code dataOffset}, in order:
     * MSCCL++'s {@code copyFromPackets}. {@code timeout} bounds the whole call.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} naming the first packet that did not
     *                           arrive (the ones before it are unpacked)
     */
    public static void copyFromPackets(MemorySegment data, long dataOffset, MemorySegment packets, long packetOffset,
                                       long payloadBytes, int flag, Duration timeout) {
        String phase = "LL8 copyFromPackets";
        Packets.checkFlag(flag, null, phase);
        Packets.checkPackets(packets, packetOffset, payloadBytes, BYTES, PAYLOAD_BYTES, null, phase);
        Packets.checkRange(dataOffset, payloadBytes, data.byteSize(), "the data", null, phase);
        long count = payloadBytes / PAYLOAD_BYTES;
        try {
            long done = unpack(packets, packetOffset, data, dataOffset, count, flag, Waiting.deadline(timeout));
            if (done < count) {
                long at = packetOffset + done * BYTES;
                throw Packets.timeout(null, phase, done, at, flags(packets, at), flag, timeout);
            }
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }

    /** Zeroes {@code bytes} of packets at {@code offset} (8-byte aligned, a multiple of 8 bytes). */
    public static void clear(MemorySegment packets, long offset, long bytes) {
        String phase = "LL8 clear";
        Packets.checkMultiple(bytes, BYTES, "size", null, phase);
        Packets.checkRange(offset, bytes, packets.byteSize(), "the packet buffer", null, phase);
        Packets.checkAligned(packets, offset, BYTES, null, phase);
        try {
            packets.asSlice(offset, bytes).fill((byte) 0);
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }

    // ------------------------------------------------------------------------------------------
    // unchecked machinery, shared with MemoryChannel's device handle (callers checked everything)

    static void store(MemorySegment packets, long offset, int data, int flag) {
        Packets.WORD.setRelease(packets, offset, Packets.word(data, flag));
    }

    static boolean arrived(MemorySegment packets, long offset, int flag) {
        return Packets.flagOf((long) Packets.WORD.getAcquire(packets, offset)) == flag;
    }

    static String flags(MemorySegment packets, long offset) {
        return "(" + Integer.toUnsignedString(Packets.flagOf((long) Packets.WORD.getAcquire(packets, offset))) + ")";
    }

    /** Packs {@code count} packets. */
    static void pack(MemorySegment packets, long packetOffset, MemorySegment data, long dataOffset, long count, int flag) {
        for (long i = 0; i < count; i++) {
            store(packets, packetOffset + i * BYTES, data.get(Packets.PAYLOAD32, dataOffset + i * PAYLOAD_BYTES), flag);
        }
    }

    /** Unpacks up to {@code count} packets; returns how many arrived before {@code deadline} (count when all did). */
    static long unpack(MemorySegment packets, long packetOffset, MemorySegment data, long dataOffset, long count,
                       int flag, long deadline) {
        for (long i = 0; i < count; i++) {
            long at = packetOffset + i * BYTES;
            long w = (long) Packets.WORD.getAcquire(packets, at);
            if (Packets.flagOf(w) != flag) {
                if (!Waiting.await(() -> arrived(packets, at, flag), deadline)) {
                    return i;
                }
                w = (long) Packets.WORD.getAcquire(packets, at);
            }
            data.set(Packets.PAYLOAD32, dataOffset + i * PAYLOAD_BYTES, (int) w);
        }
        return count;
    }
}
