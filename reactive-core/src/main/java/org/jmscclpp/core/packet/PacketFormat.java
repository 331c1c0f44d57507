package org.jmscclpp.core.packet;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import org.jmscclpp.core.channel.MemoryChannel;
import org.jmscclpp.core.spi.Waiting;

/**
 * One low-latency packet format ({@link LL16Packet#FORMAT}, {@link LL8Packet#FORMAT}): the
 * checked verbs both formats offer, written once over the few per-packet accesses a format
 * defines (how a packet is stored, when it has arrived, what its payload is). The per-packet
 * accesses are unchecked: the verbs here check flags, offsets and ranges first, and
 * {@link MemoryChannel}'s device handle, which uses {@link #pack} and {@link #unpack} directly,
 * checks its own.
 */
public abstract class PacketFormat {

    /** Bytes of one packet, and its alignment. */
    public final int packetBytes;
    /** Payload bytes one packet carries. */
    public final int payloadBytes;
    /** Names the format in the phase of an error ("LL16"). */
    private final String name;

    PacketFormat(int packetBytes, int payloadBytes, String name) {
        this.packetBytes = packetBytes;
        this.payloadBytes = payloadBytes;
        this.name = name;
    }

    // ------------------------------------------------------------------------------------------
    // per-packet accesses, unchecked

    /** Publishes one packet at {@code offset} carrying the low {@link #payloadBytes} of {@code payload}. */
    abstract void store(MemorySegment packets, long offset, long payload, int flag);

    /** Whether the packet at {@code offset} carries {@code flag} (acquire). */
    abstract boolean arrived(MemorySegment packets, long offset, int flag);

    /** The payload of a packet that has {@linkplain #arrived arrived}: no writer changes it until it is consumed. */
    abstract long payload(MemorySegment packets, long offset);

    /** The flags the packet at {@code offset} holds, for an error message: "(5, 4)". */
    public abstract String flags(MemorySegment packets, long offset);

    /** Packs the payload in {@code data} at {@code dataOffset} into a packet at {@code offset}. */
    abstract void packOne(MemorySegment packets, long offset, MemorySegment data, long dataOffset, int flag);

    /**
     * Unpacks the packet at {@code offset} into {@code data} at {@code dataOffset} if it carries
     * {@code flag}; returns whether it did (when it did not, {@code data} is unchanged).
     */
    abstract boolean unpackOne(MemorySegment packets, long offset, MemorySegment data, long dataOffset, int flag);

    // ------------------------------------------------------------------------------------------
    // unchecked loops, shared with MemoryChannel's device handle

    /** Packs {@code count} packets. */
    public final void pack(MemorySegment packets, long packetOffset, MemorySegment data, long dataOffset, long count,
                    int flag) {
        for (long i = 0; i < count; i++) {
            packOne(packets, packetOffset + i * packetBytes, data, dataOffset + i * payloadBytes, flag);
        }
    }

    /** Unpacks up to {@code count} packets; returns how many arrived before {@code deadline} (count when all did). */
    public final long unpack(MemorySegment packets, long packetOffset, MemorySegment data, long dataOffset, long count,
                      int flag, long deadline) {
        for (long i = 0; i < count; i++) {
            long at = packetOffset + i * packetBytes;
            long dataAt = dataOffset + i * payloadBytes;
            if (!unpackOne(packets, at, data, dataAt, flag)) {
                if (!Waiting.await(() -> arrived(packets, at, flag), deadline)) {
                    return i;
                }
                // arrived, and no writer rewrites it before this rank consumes it
                unpackOne(packets, at, data, dataAt, flag);
            }
        }
        return count;
    }

    // ------------------------------------------------------------------------------------------
    // checked verbs, behind the public ones of LL16Packet and LL8Packet

    final long bufferBytes(long bytes) {
        String phase = name + " buffer size";
        Packets.checkMultiple(bytes, payloadBytes, "payload size", null, phase);
        Packets.checkRange(0, bytes, Long.MAX_VALUE / 2, "the largest payload", null, phase);
        return 2 * bytes;
    }

    final void write(MemorySegment packets, long offset, long payload, int flag) {
        String phase = name + " write";
        Packets.checkFlag(flag, null, phase);
        Packets.checkPackets(packets, offset, payloadBytes, packetBytes, payloadBytes, null, phase);
        try {
            store(packets, offset, payload, flag);
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }

    final long read(MemorySegment packets, long offset, int flag, Duration timeout) {
        String phase = name + " read";
        Packets.checkFlag(flag, null, phase);
        Packets.checkPackets(packets, offset, payloadBytes, packetBytes, payloadBytes, null, phase);
        long deadline = Waiting.deadline(timeout);
        try {
            if (!arrived(packets, offset, flag) && !Waiting.await(() -> arrived(packets, offset, flag), deadline)) {
                throw Packets.timeout(null, phase, 0, offset, flags(packets, offset), flag, timeout);
            }
            return payload(packets, offset);
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }

    final void copyToPackets(MemorySegment packets, long packetOffset, MemorySegment data, long dataOffset,
                             long bytes, int flag) {
        String phase = name + " copyToPackets";
        Packets.checkFlag(flag, null, phase);
        Packets.checkPackets(packets, packetOffset, bytes, packetBytes, payloadBytes, null, phase);
        Packets.checkRange(dataOffset, bytes, data.byteSize(), "the data", null, phase);
        try {
            pack(packets, packetOffset, data, dataOffset, bytes / payloadBytes, flag);
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }

    final void copyFromPackets(MemorySegment data, long dataOffset, MemorySegment packets, long packetOffset,
                               long bytes, int flag, Duration timeout) {
        String phase = name + " copyFromPackets";
        Packets.checkFlag(flag, null, phase);
        Packets.checkPackets(packets, packetOffset, bytes, packetBytes, payloadBytes, null, phase);
        Packets.checkRange(dataOffset, bytes, data.byteSize(), "the data", null, phase);
        long count = bytes / payloadBytes;
        try {
            long done = unpack(packets, packetOffset, data, dataOffset, count, flag, Waiting.deadline(timeout));
            if (done < count) {
                long at = packetOffset + done * packetBytes;
                throw Packets.timeout(null, phase, done, at, flags(packets, at), flag, timeout);
            }
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }

    final void clear(MemorySegment packets, long offset, long bytes) {
        String phase = name + " clear";
        Packets.checkMultiple(bytes, packetBytes, "size", null, phase);
        Packets.checkRange(offset, bytes, packets.byteSize(), "the packet buffer", null, phase);
        Packets.checkAligned(packets, offset, packetBytes, null, phase);
        try {
            packets.asSlice(offset, bytes).fill((byte) 0);
        } catch (IllegalStateException e) {
            throw Packets.closed(null, phase, e);
        }
    }
}
