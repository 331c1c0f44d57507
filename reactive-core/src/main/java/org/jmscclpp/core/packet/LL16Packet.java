package org.jmscclpp.core.packet;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.channel.MemoryChannel;

/**
 * MSCCL++'s {@code LL16Packet} (low-latency protocol, 16 bytes, 8 bytes of payload), as static
 * helpers over packet memory: a {@link MemorySegment} of native memory, typically a packet buffer
 * that a peer maps and writes while this rank reads it. Each packet carries its own flags, so a
 * reader needs no semaphore: it waits until the flags equal the flag of the round it expects.
 *
 * <h2>Layout</h2>
 * Little-endian, 16-byte aligned:
 * <pre>
 *  offset  width  field
 *       0      4  data1: payload bytes 0–3
 *       4      4  flag1
 *       8      4  data2: payload bytes 4–7
 *      12      4  flag2
 * </pre>
 * A GPU writes the packet with one 128-bit store. Java has no 128-bit store, so a packet is
 * written as two 64-bit release stores, {@code (data1, flag1)} then {@code (data2, flag2)}: each
 * half is atomic, and a reader accepts the packet only when <em>both</em> flags equal the
 * expected flag. That is why the format has two flags: whichever half a reader sees first, it
 * cannot take a half of the previous round for one of this round. Readers load with acquire, so
 * a reader that accepts a packet also sees every store the writer made before writing it.
 *
 * <p>A payload of {@code n} bytes (a multiple of {@value #PAYLOAD_BYTES}) takes {@code 2 * n}
 * bytes of packets. Flag 0 is reserved: a zeroed or {@linkplain #clear cleared} buffer holds it,
 * so every method refuses it ({@link ErrorCode#INVALID_USAGE}); flags are compared as 32-bit
 * words, and a sender usually uses the round number plus one. A packet is rewritten only after
 * its reader consumed it (the reader's next packets, or a semaphore, tell the writer so).
 *
 * <p>Payload in ordinary data needs no alignment and is read and written little-endian (an
 * {@code int[]} payload on x86 and on GPUs). Every offset and size is checked before anything is
 * written: a rejected call is {@link ErrorCode#INVALID_USAGE} and changes nothing.
 */
public final class LL16Packet {

    /** Bytes of one packet, and its alignment. */
    public static final int BYTES = 16;
    /** Payload bytes one packet carries. */
    public static final int PAYLOAD_BYTES = 8;

    /** This format: the verbs written once in {@link PacketFormat}, and {@link MemoryChannel}'s packet verbs. */
    public static final PacketFormat FORMAT = new Format();

    private LL16Packet() {
    }

    /** Bytes of packets that carry {@code payloadBytes} of payload: twice as many. */
    public static long bufferBytes(long payloadBytes) {
        return FORMAT.bufferBytes(payloadBytes);
    }

    /** Writes one packet at {@code offset}: {@code data1} and {@code data2} with {@code flag} in both halves. */
    public static void write(MemorySegment packets, long offset, int data1, int data2, int flag) {
        FORMAT.write(packets, offset, Integer.toUnsignedLong(data1) | ((long) data2 << 32), flag);
    }

    /** Writes one packet carrying {@code payload}: its low 32 bits as {@code data1}, its high 32 bits as {@code data2}. */
    public static void write(MemorySegment packets, long offset, long payload, int flag) {
        FORMAT.write(packets, offset, payload, flag);
    }

    /**
     * Waits until the packet at {@code offset} carries {@code flag} in both halves and returns its
     * payload ({@code data1} in the low 32 bits). Spins briefly, then parks with a growing delay.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} after {@code timeout}, or when the thread
     *                           is interrupted, naming the flags found
     */
    public static long read(MemorySegment packets, long offset, int flag, Duration timeout) {
        return FORMAT.read(packets, offset, flag, timeout);
    }

    /**
     * Packs {@code payloadBytes} of {@code data} from {@code dataOffset} into packets at
     * {@code packetOffset} of {@code packets}, every one with {@code flag}: MSCCL++'s
     * {@code copyToPackets}. {@code payloadBytes} is a multiple of {@value #PAYLOAD_BYTES}.
     */
    public static void copyToPackets(MemorySegment packets, long packetOffset, MemorySegment data, long dataOffset,
                                     long payloadBytes, int flag) {
        FORMAT.copyToPackets(packets, packetOffset, data, dataOffset, payloadBytes, flag);
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
        FORMAT.copyFromPackets(data, dataOffset, packets, packetOffset, payloadBytes, flag, timeout);
    }

    /** Zeroes {@code bytes} of packets at {@code offset} (16-byte aligned, a multiple of 16 bytes). */
    public static void clear(MemorySegment packets, long offset, long bytes) {
        FORMAT.clear(packets, offset, bytes);
    }

    /** Two words, {@code (data1, flag)} then {@code (data2, flag)}: the packet has arrived when both carry the flag. */
    private static final class Format extends PacketFormat {

        Format() {
            super(BYTES, PAYLOAD_BYTES, "LL16");
        }

        @Override
        void store(MemorySegment packets, long offset, long payload, int flag) {
            Packets.WORD.setRelease(packets, offset, Packets.word((int) payload, flag));
            Packets.WORD.setRelease(packets, offset + 8, Packets.word((int) (payload >>> 32), flag));
        }

        @Override
        boolean arrived(MemorySegment packets, long offset, int flag) {
            return Packets.flagOf((long) Packets.WORD.getAcquire(packets, offset)) == flag
                    && Packets.flagOf((long) Packets.WORD.getAcquire(packets, offset + 8)) == flag;
        }

        @Override
        long payload(MemorySegment packets, long offset) {
            long w1 = (long) Packets.WORD.getAcquire(packets, offset);
            long w2 = (long) Packets.WORD.getAcquire(packets, offset + 8);
            return Packets.dataOf(w1) | (Packets.dataOf(w2) << 32);
        }

        @Override
        public String flags(MemorySegment packets, long offset) {
            int flag1 = Packets.flagOf((long) Packets.WORD.getAcquire(packets, offset));
            int flag2 = Packets.flagOf((long) Packets.WORD.getAcquire(packets, offset + 8));
            return "(" + Integer.toUnsignedString(flag1) + ", " + Integer.toUnsignedString(flag2) + ")";
        }

        @Override
        void packOne(MemorySegment packets, long offset, MemorySegment data, long dataOffset, int flag) {
            store(packets, offset, data.get(Packets.PAYLOAD64, dataOffset), flag);
        }

        @Override
        boolean unpackOne(MemorySegment packets, long offset, MemorySegment data, long dataOffset, int flag) {
            long w1 = (long) Packets.WORD.getAcquire(packets, offset);
            long w2 = (long) Packets.WORD.getAcquire(packets, offset + 8);
            if (Packets.flagOf(w1) != flag || Packets.flagOf(w2) != flag) {
                return false;
            }
            data.set(Packets.PAYLOAD64, dataOffset, Packets.dataOf(w1) | (Packets.dataOf(w2) << 32));
            return true;
        }
    }
}
