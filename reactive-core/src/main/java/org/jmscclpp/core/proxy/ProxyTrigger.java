package org.jmscclpp.core.proxy;

import java.util.HexFormat;
import java.util.StringJoiner;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * One request to a proxy: move {@code size} bytes from a source memory to a destination memory,
 * raise a semaphore, flush the connection, or any combination. 128 bits in two 64-bit words, bit
 * for bit MSCCL++'s {@code ProxyTrigger}, so device code and host code push the same values into a
 * {@link Fifo}. This is the one place the layout is written down:
 *
 * <pre>
 *  fst:  63                               32 31                                0
 *       +-----------------------------------+-----------------------------------+
 *       |            srcOffset (32)          |              size (32)            |
 *       +-----------------------------------+-----------------------------------+
 *
 *  snd:  63 62         53 52  50 49        41 40        32 31                    0
 *       +--+-------------+------+------------+------------+-----------------------+
 *       |C | semaphoreId |type  |dstMemoryId |srcMemoryId |     dstOffset (32)    |
 *       |  |    (10)     | (3)  |    (9)     |    (9)     |                       |
 *       +--+-------------+------+------------+------------+-----------------------+
 * </pre>
 * {@code type} is a set of {@link #DATA} (1, copy), {@link #FLAG} (2, signal the semaphore) and
 * {@link #SYNC} (4, flush). {@code C}, bit 63 of {@code snd}, is the fifo's commit bit: the
 * producer's push sets it to the parity of the ring's lap, and the consumer's poll clears it, so
 * a trigger never carries it: {@link #decode} refuses a {@code snd} with bit 63 set.
 *
 * <p>Immutable; equal when both words are equal.
 */
public final class ProxyTrigger {

    /** Type bit: copy {@code size} bytes from the source to the destination memory. */
    public static final int DATA = 1;
    /** Type bit: raise the semaphore {@code semaphoreId} on the peer. */
    public static final int FLAG = 2;
    /** Type bit: flush the connection (complete every earlier write). */
    public static final int SYNC = 4;

    /** Largest size and offset: they are 32-bit fields. */
    public static final long MAX_SIZE = 0xFFFF_FFFFL;
    /** Largest memory id: a 9-bit field. */
    public static final int MAX_MEMORY_ID = (1 << 9) - 1;
    /** Largest semaphore id: a 10-bit field. */
    public static final int MAX_SEMAPHORE_ID = (1 << 10) - 1;

    /** Bit 63 of {@code snd}, which belongs to the fifo. */
    public static final long COMMIT_BIT = 1L << 63;

    private static final int SRC_ID_SHIFT = 32;
    private static final int DST_ID_SHIFT = 41;
    private static final int TYPE_SHIFT = 50;
    private static final int SEMAPHORE_SHIFT = 53;
    private static final long WORD_MASK = 0xFFFF_FFFFL;

    private final long fst;
    private final long snd;

    private ProxyTrigger(long fst, long snd) {
        this.fst = fst;
        this.snd = snd;
    }

    /**
     * A trigger from its fields, in MSCCL++'s constructor order.
     *
     * @param type        a non-empty combination of {@link #DATA}, {@link #FLAG} and {@link #SYNC}
     * @param dstMemoryId the destination memory, 0 to {@value #MAX_MEMORY_ID}
     * @param dstOffset   byte offset into the destination, 0 to {@link #MAX_SIZE}
     * @param srcMemoryId the source memory, 0 to {@value #MAX_MEMORY_ID}
     * @param srcOffset   byte offset into the source, 0 to {@link #MAX_SIZE}
     * @param size        bytes to copy, 0 to {@link #MAX_SIZE}
     * @param semaphoreId the semaphore a {@link #FLAG} raises, 0 to {@value #MAX_SEMAPHORE_ID}
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} naming the first field out of range and its value
     */
    public static ProxyTrigger of(int type, int dstMemoryId, long dstOffset, int srcMemoryId, long srcOffset,
                                  long size, int semaphoreId) {
        check(type >= 1 && type <= (DATA | FLAG | SYNC), "type", type, "a non-empty combination of DATA=1, FLAG=2, SYNC=4");
        check(dstMemoryId >= 0 && dstMemoryId <= MAX_MEMORY_ID, "dstMemoryId", dstMemoryId, "0 to " + MAX_MEMORY_ID);
        check(dstOffset >= 0 && dstOffset <= MAX_SIZE, "dstOffset", dstOffset, "0 to " + MAX_SIZE);
        check(srcMemoryId >= 0 && srcMemoryId <= MAX_MEMORY_ID, "srcMemoryId", srcMemoryId, "0 to " + MAX_MEMORY_ID);
        check(srcOffset >= 0 && srcOffset <= MAX_SIZE, "srcOffset", srcOffset, "0 to " + MAX_SIZE);
        check(size >= 0 && size <= MAX_SIZE, "size", size, "0 to " + MAX_SIZE);
        check(semaphoreId >= 0 && semaphoreId <= MAX_SEMAPHORE_ID, "semaphoreId", semaphoreId, "0 to " + MAX_SEMAPHORE_ID);
        long fst = srcOffset << 32 | size;
        long snd = (long) semaphoreId << SEMAPHORE_SHIFT | (long) type << TYPE_SHIFT
                | (long) dstMemoryId << DST_ID_SHIFT | (long) srcMemoryId << SRC_ID_SHIFT | dstOffset;
        return new ProxyTrigger(fst, snd);
    }

    /**
     * The trigger with these raw words, fields unchecked (what a proxy reads from a fifo; any
     * value, a zero type included, is a trigger the fifo carries unchanged).
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when bit 63 of {@code snd}, the
     *                           fifo's commit bit, is set
     */
    public static ProxyTrigger decode(long fst, long snd) {
        if ((snd & COMMIT_BIT) != 0) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "bit 63 of snd is the fifo's commit bit and must "
                    + "be clear in a trigger, got snd=0x" + HexFormat.of().toHexDigits(snd)).phase("proxy trigger")
                    .build();
        }
        return new ProxyTrigger(fst, snd);
    }

    private static void check(boolean ok, String field, long value, String range) {
        if (!ok) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "trigger field " + field + " is " + value
                    + ", allowed " + range).phase("proxy trigger").build();
        }
    }

    /** The low word: size and source offset. */
    public long fst() {
        return fst;
    }

    /** The high word: destination offset, memory ids, type and semaphore id; bit 63 clear. */
    public long snd() {
        return snd;
    }

    public long size() {
        return size(fst);
    }

    public long srcOffset() {
        return srcOffset(fst);
    }

    public long dstOffset() {
        return dstOffset(snd);
    }

    public int srcMemoryId() {
        return srcMemoryId(snd);
    }

    public int dstMemoryId() {
        return dstMemoryId(snd);
    }

    /** The type bits: {@link #DATA}, {@link #FLAG}, {@link #SYNC} or-ed (0 only in a raw decoded trigger). */
    public int type() {
        return type(snd);
    }

    public int semaphoreId() {
        return semaphoreId(snd);
    }

    // Field extraction from raw words, for the proxy loop, which reads a fifo slot without making a trigger.

    static long size(long fst) {
        return fst & WORD_MASK;
    }

    static long srcOffset(long fst) {
        return fst >>> 32;
    }

    static long dstOffset(long snd) {
        return snd & WORD_MASK;
    }

    static int srcMemoryId(long snd) {
        return (int) (snd >>> SRC_ID_SHIFT) & MAX_MEMORY_ID;
    }

    static int dstMemoryId(long snd) {
        return (int) (snd >>> DST_ID_SHIFT) & MAX_MEMORY_ID;
    }

    static int type(long snd) {
        return (int) (snd >>> TYPE_SHIFT) & 7;
    }

    static int semaphoreId(long snd) {
        return (int) (snd >>> SEMAPHORE_SHIFT) & MAX_SEMAPHORE_ID;
    }

    public boolean hasData() {
        return (type() & DATA) != 0;
    }

    public boolean hasFlag() {
        return (type() & FLAG) != 0;
    }

    public boolean hasSync() {
        return (type() & SYNC) != 0;
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof ProxyTrigger t && t.fst == fst && t.snd == snd;
    }

    @Override
    public int hashCode() {
        return 31 * Long.hashCode(fst) + Long.hashCode(snd);
    }

    @Override
    public String toString() {
        StringJoiner types = new StringJoiner("|");
        if (hasData()) {
            types.add("DATA");
        }
        if (hasFlag()) {
            types.add("FLAG");
        }
        if (hasSync()) {
            types.add("SYNC");
        }
        return "ProxyTrigger[" + (type() == 0 ? "no type" : types.toString()) + ", dst " + dstMemoryId() + "+"
                + dstOffset() + ", src " + srcMemoryId() + "+" + srcOffset() + ", size " + size() + ", semaphore "
                + semaphoreId() + ", fst=0x" + HexFormat.of().toHexDigits(fst) + ", snd=0x"
                + HexFormat.of().toHexDigits(snd) + "]";
    }
}
