package org.jmscclpp.core.packet;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.channel.MemoryChannel;

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

    /** This format: the verbs written once in {@link PacketFormat}, and {@link MemoryChannel}'s packet verbs. */
    public static final PacketFormat FORMAT = new Format();

    private LL8Packet() {
    }

    /** Bytes of packets that carry {@code payloadBytes} of payload: twice as many. */
    public static long bufferBytes(long payloadBytes) {
        return FORMAT.bufferBytes(payloadBytes);
    }

    /** Writes one packet at {@code offset}: {@code data} with {@code flag}. */
    public static void write(MemorySegment packets, long offset, int data, int flag) {
        FORMAT.write(packets, offset, data, flag);
    }

    /**
     * Waits until the packet at {@code offset} carries {@code flag} and returns its data. Spins
     * briefly, then parks with a growing delay.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} after {@code timeout}, or when the thread
     *                           is interrupted, naming the flag found
     */
    public static int read(MemorySegment packets, long offset, int flag, Duration timeout) {
        return (int) FORMAT.read(packets, offset, flag, timeout);
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

    /** Zeroes {@code bytes} of packets at {@code offset} (8-byte aligned, a multiple of 8 bytes). */
    public static void clear(MemorySegment packets, long offset, long bytes) {
        FORMAT.clear(packets, offset, bytes);
    }

    /** One word, {@code (data, flag)}, published and read by single atomic accesses. */
    private static final class Format extends PacketFormat {

        Format() {
            super(BYTES, PAYLOAD_BYTES, "LL8");
        }

        @Override
        void store(MemorySegment packets, long offset, long payload, int flag) {
            Packets.WORD.setRelease(packets, offset, Packets.word((int) payload, flag));
        }

        @Override
        boolean arrived(MemorySegment packets, long offset, int flag) {
            return Packets.flagOf((long) Packets.WORD.getAcquire(packets, offset)) == flag;
        }

        @Override
        long payload(MemorySegment packets, long offset) {
            return Packets.dataOf((long) Packets.WORD.getAcquire(packets, offset));
        }

        @Override
        public String flags(MemorySegment packets, long offset) {
            return "(" + Integer.toUnsignedString(Packets.flagOf((long) Packets.WORD.getAcquire(packets, offset))) + ")";
        }

        @Override
        void packOne(MemorySegment packets, long offset, MemorySegment data, long dataOffset, int flag) {
            store(packets, offset, data.get(Packets.PAYLOAD32, dataOffset), flag);
        }

        @Override
        boolean unpackOne(MemorySegment packets, long offset, MemorySegment data, long dataOffset, int flag) {
            long w = (long) Packets.WORD.getAcquire(packets, offset);
            if (Packets.flagOf(w) != flag) {
                return false;
            }
            data.set(Packets.PAYLOAD32, dataOffset, (int) w);
            return true;
        }
    }
}
