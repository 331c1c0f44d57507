package org.jmscclpp.core.proxy;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.DeviceType;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.DeviceHandles;
import org.jmscclpp.core.spi.Tokens;
import org.jspecify.annotations.Nullable;

/**
 * A ring of {@link ProxyTrigger}s that producers (device code, host threads, other processes)
 * push and one proxy thread consumes: MSCCL++'s {@code Fifo}, with its lap-parity commit protocol
 * (MSCCL++ PR #864). The fifo owns one host-visible buffer of its {@link Backend}; another process
 * of the host maps that buffer ({@link #buffer()}, exported like any other) and pushes through
 * {@link #producer(DeviceBuffer, int)}.
 *
 * <h2>Memory</h2>
 * 64-bit words in the host's byte order (little-endian on every host jmscclpp runs on, as on
 * the GPUs) at these offsets of {@link #buffer()}, {@code C} the capacity:
 * <pre>
 *  offset        width   field
 *       0            8   head: positions claimed so far (producers' atomics, see below)
 *       8            8   proxy state: 0 running or not started, 1 stopped, 2 failed (bits 8-15:
 *                          the failure's ErrorCode ordinal + 1); the proxy's release store
 *      16            8   the fifo position at which the proxy stopped or failed
 *      24            8   tail cache of device producers (an atomic max of tails they read)
 *      32           32   unused, so that head and the state have their cache line to themselves
 *      64            8   tail: positions consumed so far (the proxy's release store)
 *      72           56   unused
 *     128       16 * C   ring: slot i holds the trigger of every position p with p mod C = i
 *                          +0  8  fst
 *                          +8  8  snd, bit 63 the commit bit
 * </pre>
 * The buffer is {@code 128 + 16 * C} bytes and starts zeroed.
 *
 * <h2>GPU fifos</h2>
 * When the backend's device is a GPU, head and the tail cache live in a separate 64-byte block of
 * device memory (head at 0, tail cache at 8), as in MSCCL++: a kernel's push is then a device
 * atomic, and the tail in host memory is read across the bus only when the ring looks full by the
 * cached value. The ring, tail and state stay in the host-visible buffer, where the proxy reads
 * and writes them. Only device code pushes into such a fifo; a host {@link FifoProducer}'s push is
 * {@link ErrorCode#INVALID_USAGE}, its {@link FifoProducer#sync} works.
 *
 * <h2>Protocol</h2>
 * Position {@code p} lies on lap {@code p / C}; its commit bit is 1 on even laps and 0 on odd ones.
 * <ul>
 *   <li>A producer writes position {@code p}'s slot only while it holds {@code p} and
 *       {@code p < tail + C}: the slot no longer holds an unconsumed trigger (that of
 *       {@code p - C}). A host producer claims {@code p = head} by a compare-and-set of head from
 *       {@code p} to {@code p + 1}, and only while {@code p < tail + C}. Device code claims with
 *       one fetch-and-add of head, as MSCCL++ does (one atomic a push while there is room); a
 *       device push that finds the ring full gives its position back by a compare-and-set of head
 *       from {@code p + 1} to {@code p} (once every later claim has been given back: their slots
 *       cannot be free before {@code p}'s), unless {@code p}'s slot became free meanwhile, and then
 *       claims as a host producer does. Either way no producer holds a claim while it waits for
 *       room, so a producer that gives up (its deadline, an interrupt, a kernel's abort) leaves the
 *       ring as it found it, and every position that stays claimed is written at once: the proxy
 *       never waits for a position nobody will write. Then it writes {@code fst}, and {@code snd}
 *       with {@code p}'s commit bit by a release store.</li>
 *   <li>The proxy looks at the slot of {@code tail}: the trigger is there once the commit bit of
 *       {@code snd} (an acquire load) equals {@code tail}'s. Any other value is the previous lap's
 *       trigger or zeros, so a zeroed ring reads empty and a trigger whose words are all zero is a
 *       trigger like any other. After handling it the proxy stores {@code tail + 1} with release;
 *       slots are never cleared.</li>
 *   <li>A proxy that stops or fails writes its position, then a non-zero state (release). A
 *       producer checks the state after claiming a position and while it waits, and throws
 *       instead of waiting for a consumer that will not come: {@link ErrorCode#ABORTED} when the
 *       proxy stopped, {@link ErrorCode#REMOTE_ERROR} when it failed. Device code finds the state
 *       at tail's address - 56 (head's + 8 only while head is in this buffer), and looks at it
 *       only while it waits, since reading host memory on every push costs a PCIe round trip;
 *       it stops its kernel instead of throwing.</li>
 * </ul>
 *
 * <h2>Threads</h2>
 * {@link #poll}, {@link #pop} and {@link #tail} are the consumer's: one thread at a time (the
 * proxy's). {@link #producer()} and everything on a {@link FifoProducer} may be called from any
 * thread.
 */
public final class Fifo implements AutoCloseable {

    /** MSCCL++'s default capacity. */
    public static final int DEFAULT_CAPACITY = 512;
    /** Bytes of {@link #encodeDeviceHandle}. */
    public static final int DEVICE_HANDLE_BYTES = FifoLayout.DEVICE_HANDLE_BYTES;


    private final DeviceBuffer buffer;
    /** Head and tail cache in device memory for a GPU fifo; null when they are in {@link #buffer}. */
    private final @Nullable DeviceBuffer deviceWords;
    private final MemorySegment segment;
    private final int capacity;
    private final long mask;
    private final int shift;
    private final long[] scratch = new long[2];
    /** Consumer-confined copy of the tail word, which only the consumer writes. */
    private long tail;
    /** Whether the last poll found the trigger at {@link #tail}: {@link #pop} needs one. */
    private boolean polled;
    private volatile boolean closed;

    private Fifo(DeviceBuffer buffer, @Nullable DeviceBuffer deviceWords, MemorySegment segment, int capacity) {
        this.buffer = buffer;
        this.deviceWords = deviceWords;
        this.segment = segment;
        this.capacity = capacity;
        this.mask = capacity - 1L;
        this.shift = Integer.numberOfTrailingZeros(capacity);
    }

    /** {@link #create(Backend, int)} with {@link #DEFAULT_CAPACITY}. */
    public static Fifo create(Backend backend) {
        return create(backend, DEFAULT_CAPACITY);
    }

    /**
     * An empty fifo of {@code capacity} triggers in a new host-visible buffer of {@code backend};
     * on a GPU backend, head and tail cache in 64 bytes of its device memory (see the class comment).
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when {@code capacity} is not a power of
     *                           two from 1 to 2^26; what the backend throws when it cannot allocate
     */
    public static Fifo create(Backend backend, int capacity) {
        FifoLayout.checkCapacity(capacity, "fifo create");
        DeviceBuffer buffer = backend.allocateHostVisible(FifoLayout.bytes(capacity));
        DeviceBuffer deviceWords = null;
        try {
            if (backend.device().type() == DeviceType.GPU) {
                deviceWords = backend.allocate(FifoLayout.LINE);
            }
            return new Fifo(buffer, deviceWords, buffer.hostSegment(), capacity);
        } catch (RuntimeException e) {
            if (deviceWords != null) {
                deviceWords.close();
            }
            buffer.close();
            throw e;
        }
    }

    /**
     * A producer pushing into the fifo whose buffer {@code fifoBuffer} is, typically another
     * process's fifo mapped here through an IPC transport. The producer does not own the mapping:
     * its owner closes it, after which pushes fail.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when {@code capacity} is not a power
     *                           of two, the buffer is closed, not host-accessible, not 8-byte
     *                           aligned, or not the size of a fifo of {@code capacity} triggers
     */
    public static FifoProducer producer(DeviceBuffer fifoBuffer, int capacity) {
        String phase = "fifo producer";
        FifoLayout.checkCapacity(capacity, phase);
        if (fifoBuffer.size() != FifoLayout.bytes(capacity)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a fifo of " + capacity + " triggers has "
                    + FifoLayout.bytes(capacity) + " bytes, this buffer " + fifoBuffer.size() + ": " + fifoBuffer)
                    .phase(phase).build();
        }
        if ((fifoBuffer.address() & 7) != 0) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a fifo's buffer is 8-byte aligned, this one starts "
                    + "at 0x" + Long.toHexString(fifoBuffer.address())).phase(phase).build();
        }
        return new FifoProducer(fifoBuffer, fifoBuffer.hostSegment(), capacity, true);
    }

    /**
     * A new producer for this fifo, with its own tail cache. For a GPU fifo (head in device memory)
     * its pushes are {@link ErrorCode#INVALID_USAGE}; its syncs work.
     */
    public FifoProducer producer() {
        checkOpen("fifo producer");
        return new FifoProducer(buffer, segment, capacity, deviceWords == null);
    }

    /** Whether head and tail cache are in device memory, so that only device code pushes. */
    public boolean headInDeviceMemory() {
        return deviceWords != null;
    }

    /** Triggers the ring holds. */
    public int capacity() {
        return capacity;
    }

    /** The memory of the fifo, laid out as the class comment says: what another process maps. */
    public DeviceBuffer buffer() {
        return buffer;
    }

    /**
     * Looks at the trigger at {@link #tail()} without consuming it: when it has been pushed,
     * writes its {@code fst} and {@code snd} (commit bit cleared) to {@code out[0]} and
     * {@code out[1]} and returns true; otherwise returns false and leaves {@code out} alone. Never
     * waits and allocates nothing. Consumer thread only.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when {@code out} has fewer than two
     *                           elements or the fifo is closed
     */
    public boolean poll(long[] out) {
        if (out.length < 2) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "poll writes two words, the array has "
                    + out.length).phase("fifo poll").build();
        }
        checkOpen("fifo poll");
        long t = tail;
        long slot = FifoLayout.slot(t, mask);
        long snd;
        try {
            snd = Tokens.acquire(segment, slot + FifoLayout.SND);
            if ((snd & ProxyTrigger.COMMIT_BIT) != FifoLayout.commitBit(t, shift)) {
                return false;
            }
            // the acquire above saw the producer's release store, so its fst is visible too
            out[0] = Tokens.plain(segment, slot);
        } catch (IllegalStateException | WrongThreadException e) {
            throw closedException("fifo poll", e);
        }
        out[1] = snd & ~ProxyTrigger.COMMIT_BIT;
        polled = true;
        return true;
    }

    /**
     * The trigger at {@link #tail()} if it has been pushed, else null; does not consume it. The
     * same as {@link #poll(long[])}, with one allocation per trigger found. Consumer thread only.
     */
    public @Nullable ProxyTrigger poll() {
        return poll(scratch) ? ProxyTrigger.decode(scratch[0], scratch[1]) : null;
    }

    /**
     * Consumes the trigger the last poll found: stores {@code tail + 1} with release, which frees
     * its slot for the producers (a producer waiting for room, or in {@link FifoProducer#sync},
     * sees it). Consumer thread only.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when no poll found the trigger at
     *                           the tail since the last pop (popping an unwritten position would
     *                           lose the trigger later written there), or the fifo is closed
     */
    public void pop() {
        checkOpen("fifo pop");
        if (!polled) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "pop at position " + tail + " without a poll "
                    + "that found its trigger").phase("fifo pop").build();
        }
        try {
            Tokens.release(segment, FifoLayout.TAIL, tail + 1);
        } catch (IllegalStateException | WrongThreadException e) {
            throw closedException("fifo pop", e);
        }
        tail++;
        polled = false;
    }

    /** The position the consumer is at: triggers consumed so far, and the position of the next. Consumer thread only. */
    public long tail() {
        return tail;
    }

    /**
     * Triggers pushed (positions claimed by producers) and not yet consumed, as this process sees
     * them now: between 0 and the capacity; -1 for a GPU fifo, whose head is in device memory; 0
     * once closed. A moment's reading for monitoring, on any thread.
     */
    public long occupancy() {
        if (deviceWords != null) {
            return -1;
        }
        if (closed) {
            return 0;
        }
        try {
            long t = Tokens.acquire(segment, FifoLayout.TAIL);
            long h = Tokens.acquire(segment, FifoLayout.HEAD);
            return Math.max(0, Math.min(capacity, h - t));
        } catch (IllegalStateException | WrongThreadException e) {
            return 0;   // closed meanwhile
        }
    }

    /**
     * Writes what device code needs to push into this fifo, little-endian, at {@code out}'s
     * position (which advances by 40 bytes; the buffer's byte order is left as it was):
     * <pre>
     *  offset  width  field
     *       0      8  address of the ring (slot 0)
     *       8      8  address of head
     *      16      8  address of tail
     *      24      8  address of the tail cache
     *      32      4  capacity
     *      36      4  zero
     * </pre>
     * The addresses are {@link DeviceBuffer#address()} plus the offsets of the class comment (head
     * and tail cache in the device words of a GPU fifo). Device code finds the proxy state at
     * tail - 56.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when fewer than 40 bytes remain, or
     *                           the fifo is closed
     */
    public void encodeDeviceHandle(ByteBuffer out) {
        checkOpen("fifo device handle");
        long base = buffer.address();
        DeviceHandles.fifo(out, base + FifoLayout.RING, headAddress(), base + FifoLayout.TAIL, tailCacheAddress(),
                capacity);
    }

    /** Where device code finds head. */
    public long headAddress() {
        return deviceWords != null ? deviceWords.address() + FifoLayout.DEVICE_HEAD : buffer.address() + FifoLayout.HEAD;
    }

    /** Where device code finds the shared tail cache. */
    public long tailCacheAddress() {
        return deviceWords != null ? deviceWords.address() + FifoLayout.DEVICE_TAIL_CACHE
                : buffer.address() + FifoLayout.TAIL_CACHE;
    }

    /**
     * Consumer only: tells producers that the proxy stopped at {@code position} and takes no more
     * triggers; their waits end with {@link ErrorCode#ABORTED}. Does nothing once a state is set.
     */
    void markStopped(long position) {
        markState(FifoLayout.STOPPED, position);
    }

    /**
     * Consumer only: tells producers that the proxy failed with {@code code} at {@code position};
     * their waits end with {@link ErrorCode#REMOTE_ERROR}. Does nothing once a state is set.
     */
    void markFailed(ErrorCode code, long position) {
        markState(FifoLayout.failedState(code), position);
    }

    private void markState(long state, long position) {
        checkOpen("fifo state");
        try {
            if (Tokens.acquire(segment, FifoLayout.STATE) == 0) {
                Tokens.setPlain(segment, FifoLayout.STATE_POSITION, position);
                Tokens.release(segment, FifoLayout.STATE, state);
            }
        } catch (IllegalStateException | WrongThreadException e) {
            throw closedException("fifo state", e);
        }
    }

    /** Frees the buffer; producers of this process fail from then on. Idempotent. */
    @Override
    public void close() {
        closed = true;
        if (deviceWords != null) {
            deviceWords.close();
        }
        buffer.close();
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    private void checkOpen(String phase) {
        if (closed) {
            throw closedException(phase, null);
        }
    }

    private JmscclppException closedException(String phase, @Nullable RuntimeException cause) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "the fifo is closed: " + buffer).phase(phase)
                .cause(cause).build();
    }

    @Override
    public String toString() {
        return "Fifo[" + capacity + " triggers, tail " + tail + ", " + buffer + "]";
    }
}
