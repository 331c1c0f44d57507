package org.jmscclpp.core.proxy;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * Where a {@link Fifo}'s words live in its buffer, and the lap arithmetic of its protocol: the one
 * definition that producers, the consumer, the device handle and every backend use. The diagram is
 * in {@link Fifo}'s class comment.
 */
public final class FifoLayout {

    /** A cache line: head, tail and the ring each start on their own, so producers and the proxy do not share one. */
    static final int LINE = 64;
    /**
     * The producers' claim counter (u64: a host producer's compare-and-set from h to h + 1 only
     * while h < tail + capacity; device code's fetch-and-add, given back while the ring is full).
     */
    public static final long HEAD = 0;
    /**
     * The proxy's state (u64, release store by the proxy, acquire load by producers): 0 while the
     * proxy runs or has not started, {@link #STOPPED}, or {@link #FAILED} with the failure's
     * {@link ErrorCode} ordinal in bits 8-15. It shares head's line, which every producer has just
     * written, so checking it costs a push nothing; the proxy writes it once.
     */
    public static final long STATE = 8;
    /** The fifo position at which the proxy stopped or failed (u64, written before {@link #STATE}). */
    static final long STATE_POSITION = 16;
    /**
     * A tail value that device code shares among its producers (u64, atomic max by pushers), so
     * that a push reads the proxy's {@link #TAIL} only when the ring looks full by it. Used when the
     * head is in this buffer; a GPU fifo keeps head and tail cache in device memory instead.
     */
    public static final long TAIL_CACHE = 24;
    /** The proxy's consumed count (u64, release store). */
    public static final long TAIL = LINE;
    /** First trigger slot. */
    public static final long RING = 2L * LINE;
    /** Bytes of one trigger slot: {@code fst} then {@code snd}. */
    static final int TRIGGER_BYTES = 16;
    /** Offset of {@code snd} in a slot. */
    static final int SND = 8;
    /** Bytes {@link Fifo#encodeDeviceHandle} writes. */
    public static final int DEVICE_HANDLE_BYTES = 40;
    /** In a GPU fifo's device words: offset of head, then of the tail cache. */
    static final long DEVICE_HEAD = 0;
    static final long DEVICE_TAIL_CACHE = 8;
    /** {@link #STATE}: the proxy stopped and takes no more triggers. */
    static final long STOPPED = 1;
    /** {@link #STATE}: the proxy failed handling a trigger and takes no more. */
    static final long FAILED = 2;

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

    /** The {@link #STATE} word of a failure with {@code code}. */
    static long failedState(ErrorCode code) {
        return FAILED | (long) (code.ordinal() + 1) << 8;
    }

    /**
     * The error a producer reports when it finds the proxy gone ({@code state} non-zero, as read
     * from {@link #STATE}, {@code position} from {@link #STATE_POSITION}): {@link ErrorCode#ABORTED}
     * when the proxy stopped, {@link ErrorCode#REMOTE_ERROR} naming the failure's code when it
     * failed. The words may come from another process and are not trusted.
     */
    static JmscclppException proxyGone(long state, long position, String phase) {
        if ((state & 0xFF) == FAILED) {
            int ordinal = (int) (state >>> 8 & 0xFF) - 1;
            ErrorCode[] codes = ErrorCode.values();
            String code = ordinal >= 0 && ordinal < codes.length ? codes[ordinal].name() : "an unknown error";
            return JmscclppException.builder(ErrorCode.REMOTE_ERROR, "the proxy failed with " + code
                    + " handling the trigger at fifo position " + position + " and takes no more triggers")
                    .phase(phase).build();
        }
        return JmscclppException.builder(ErrorCode.ABORTED, "the proxy stopped at fifo position " + position
                + " and takes no more triggers").phase(phase).build();
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
