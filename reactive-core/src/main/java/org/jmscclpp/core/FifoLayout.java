package org.jmscclpp.core;

/**
 * Where a {@link Fifo}'s words live in its buffer, and the lap arithmetic of its protocol: the one
 * definition that producers, the consumer, the device handle and every backend use. The diagram is
 * in {@link Fifo}'s class comment.
 */
final class FifoLayout {

    /** A cache line: head, tail and the ring each start on their own, so producers and the proxy do not share one. */
    static final int LINE = 64;
    /** The producers' claim counter (u64, atomic fetch-add). */
    static final long HEAD = 0;
    /** The proxy's consumed count (u64, release store). */
    static final long TAIL = LINE;
    /** First trigger slot. */
    static final long RING = 2L * LINE;
    /** Bytes of one trigger slot: {@code fst} then {@code snd}. */
    static final int TRIGGER_BYTES = 16;
    /** Offset of {@code snd} in a slot. */
    static final int SND = 8;
    /** Bytes {@link Fifo#encodeDeviceHandle} writes. */
    static final int DEVICE_HANDLE_BYTES = 32;
    /** Largest capacity: the buffer of 16-byte slots stays below 2^31 bytes, a direct buffer's limit. */
    static final int MAX_CAPACITY = 1 << 26;

    private FifoLayout() {
    }

    /**
     * Checks that {@code capacity} is a power of two from 1 to {@link #MAX_CAPACITY}.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} naming the capacity
     */
    static int checkCapacity(int capacity, String phase) {
        if (capacity < 1 || capacity > MAX_CAPACITY || Integer.bitCount(capacity) != 1) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a fifo's capacity must be a power of two from 1 to "
                    + MAX_CAPACITY + ", got " + capacity).phase(phase).build();
        }
        return capacity;
    }

    /** Bytes of the buffer of a fifo of {@code capacity} triggers. */
    static long bytes(int capacity) {
        return RING + (long) capacity * TRIGGER_BYTES;
    }

    /** Offset of the slot that position {@code pos} uses; {@code mask} is capacity - 1. */
    static long slot(long pos, long mask) {
        return RING + (pos & mask) * TRIGGER_BYTES;
    }

    /**
     * The commit bit that position {@code pos} writes into bit 63 of {@code snd}: set on even laps,
     * clear on odd ones ({@code shift} is log2 of the capacity). A zeroed ring therefore reads as
     * empty on lap 0, and a slot still holding the previous lap's trigger never looks committed.
     */
    static long commitBit(long pos, int shift) {
        return ((pos >>> shift) & 1) == 0 ? ProxyTrigger.COMMIT_BIT : 0;
    }
}
