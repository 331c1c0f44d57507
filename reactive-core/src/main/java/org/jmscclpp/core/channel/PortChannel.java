package org.jmscclpp.core.channel;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.AbortSignal;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.proxy.Fifo;
import org.jmscclpp.core.proxy.FifoLayout;
import org.jmscclpp.core.proxy.FifoProducer;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.proxy.ProxyTrigger;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.core.spi.DeviceHandles;
import org.jmscclpp.core.spi.Tokens;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;

/**
 * A channel whose data moves through a {@link ProxyService}: MSCCL++'s {@code PortChannel}, with
 * its device verbs for Java threads that play the role of a kernel on the host backend. Each verb
 * pushes one {@link ProxyTrigger} for the channel's semaphore, destination memory (the peer's) and
 * source memory (this rank's) into the service's fifo; the proxy does the work. Made by
 * {@link ProxyService#portChannel}.
 *
 * <p>Like device code, every method blocks the calling thread and returns when its part is done:
 * a push returns once the trigger is in the fifo (waiting while the fifo is full, up to 30 s),
 * {@link #flush} once the proxy's flush covered everything pushed before it, {@link #await} once
 * the peer's signal arrived. Call them from threads standing in for kernels, not from reactive
 * pipelines or event loops. Waits spin briefly, then park with a growing delay; each ends at its
 * deadline with {@link ErrorCode#TIMEOUT}, and as soon as this channel's proxy has stopped or
 * failed with {@link ErrorCode#ABORTED} or {@link ErrorCode#REMOTE_ERROR} (the failure attached as
 * the cause) instead of spinning on.
 *
 * <p>Puts, signals and flushes may be called from any number of threads at once; {@link #await}
 * and {@link #poll()} consume the peer's signals and belong to one thread at a time.
 */
public final class PortChannel {

    /** Bytes of {@link #encodeDeviceHandle}. */
    public static final int DEVICE_HANDLE_BYTES = DeviceHandles.PORT_CHANNEL_BYTES;

    private final ProxyService service;
    private final SemaphoreId semaphoreId;
    private final MemoryId dst;
    private final MemoryId src;
    private final RegisteredMemory dstMemory;
    private final RegisteredMemory srcMemory;
    private final Host2DeviceSemaphore.DeviceHandle handle;
    private final FifoProducer producer;
    private final MemorySegment flushed;
    private final long flushedOffset;
    private final ConnectionContext context;
    private final AbortSignal abortSignal;

    public PortChannel(ProxyService service, ProxyService.Entry entry, RegisteredMemory dstMemory, MemoryId dst,
                RegisteredMemory srcMemory, MemoryId src, FifoProducer producer) {
        this.service = service;
        this.semaphoreId = entry.id();
        this.dst = dst;
        this.src = src;
        this.dstMemory = dstMemory;
        this.srcMemory = srcMemory;
        this.handle = entry.semaphore().deviceHandle();
        this.producer = producer;
        this.flushed = service.flushedSegment();
        this.flushedOffset = (long) semaphoreId.value() * Long.BYTES;
        this.context = entry.connection().context();
        this.abortSignal = entry.semaphore().semaphore().abortSignal();
    }

    public SemaphoreId semaphoreId() {
        return semaphoreId;
    }

    /** The destination memory's id: the peer's memory the puts write. */
    public MemoryId dst() {
        return dst;
    }

    /** The source memory's id: this rank's memory the puts read. */
    public MemoryId src() {
        return src;
    }

    /** The peer, this rank and tag of the semaphore's connection. */
    public ConnectionContext context() {
        return context;
    }

    // ------------------------------------------------------------------------------------------
    // device verbs

    /**
     * Pushes a DATA trigger: the proxy copies {@code size} bytes from the source at
     * {@code srcOffset} to the destination at {@code dstOffset}. Returns once the trigger is in the
     * fifo, not when the bytes moved ({@link #flush} tells that).
     *
     * @return the trigger's fifo position
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when a range falls outside its
     *                           memory (nothing is pushed); what a push throws
     */
    public long put(long dstOffset, long srcOffset, long size) {
        checkRanges(dstOffset, srcOffset, size, "put");
        return push(ProxyTrigger.DATA, dstOffset, srcOffset, size, Bootstrap.DEFAULT_TIMEOUT, "put");
    }

    /** {@link #put(long, long, long)} with the same offset on both sides. */
    public long put(long offset, long size) {
        return put(offset, offset, size);
    }

    /**
     * Pushes a FLAG trigger: the proxy raises the peer's inbound token after everything pushed
     * before on this connection.
     *
     * @return the trigger's fifo position
     */
    public long signal() {
        return push(ProxyTrigger.FLAG, 0, 0, 0, Bootstrap.DEFAULT_TIMEOUT, "signal");
    }

    /** A put and a signal in one trigger: the peer sees the signal after the data. Returns the fifo position. */
    public long putWithSignal(long dstOffset, long srcOffset, long size) {
        checkRanges(dstOffset, srcOffset, size, "putWithSignal");
        return push(ProxyTrigger.DATA | ProxyTrigger.FLAG, dstOffset, srcOffset, size, Bootstrap.DEFAULT_TIMEOUT,
                "putWithSignal");
    }

    /** {@link #putWithSignal(long, long, long)} with the same offset on both sides. */
    public long putWithSignal(long offset, long size) {
        return putWithSignal(offset, offset, size);
    }

    /**
     * A put, a signal and a flush in one trigger; returns once the proxy's flush of the
     * connection covered it, within {@code timeout} (push and flush together).
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} at the deadline; see the class comment
     */
    public void putWithSignalAndFlush(long dstOffset, long srcOffset, long size, Duration timeout) {
        checkRanges(dstOffset, srcOffset, size, "putWithSignalAndFlush");
        long deadline = deadline(timeout);
        long pos = push(ProxyTrigger.DATA | ProxyTrigger.FLAG | ProxyTrigger.SYNC, dstOffset, srcOffset, size,
                timeout, "putWithSignalAndFlush");
        awaitFlushed(pos, deadline, timeout, "putWithSignalAndFlush");
    }

    /** {@link #putWithSignalAndFlush(long, long, long, Duration)} with the same offset on both sides. */
    public void putWithSignalAndFlush(long offset, long size, Duration timeout) {
        putWithSignalAndFlush(offset, offset, size, timeout);
    }

    /** {@link #flush(Duration)} with 30 seconds. */
    public void flush() {
        flush(Bootstrap.DEFAULT_TIMEOUT);
    }

    /**
     * Pushes a SYNC trigger and waits until the proxy's flush of the connection covering it has
     * completed: every put and signal this channel's connection was given before (by any thread)
     * is then at the peer. Waits on the semaphore's flushed-position word.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} when the flush has not completed within
     *                           {@code timeout} (push and wait together), naming the position;
     *                           ABORTED or REMOTE_ERROR as the class comment says
     */
    public void flush(Duration timeout) {
        long deadline = deadline(timeout);
        long pos = push(ProxyTrigger.SYNC, 0, 0, 0, timeout, "flush");
        awaitFlushed(pos, deadline, timeout, "flush");
    }

    /**
     * Waits for the next signal from the peer (its proxy's FLAG, raised after its data) and
     * consumes it: the data the peer put before the signal is visible once this returns.
     *
     * @throws JmscclppException {@link ErrorCode#TIMEOUT} naming the peer after {@code timeout};
     *                           ABORTED or REMOTE_ERROR once this channel's proxy stopped or failed
     *                           (a signal that already arrived is still consumed first)
     */
    public void await(Duration timeout) {
        try {
            if (!handle.awaitUnless(Waiting.bounded(timeout),
                    () -> producer.proxyState() != 0)) {
                throw gone(producer.proxyState(), "await");
            }
        } catch (IllegalStateException | WrongThreadException e) {
            throw closed("await", e);
        }
    }

    /** Consumes one signal from the peer if one has arrived and was not consumed yet; never waits. */
    public boolean poll() {
        return handle.poll();
    }

    // ------------------------------------------------------------------------------------------
    // device handle

    /**
     * Writes what a CUDA kernel gets for this channel ({@value #DEVICE_HANDLE_BYTES} bytes, the
     * fields of MSCCL++'s {@code PortChannelDeviceHandle} in its order) at {@code out}'s position,
     * little-endian; the buffer's own byte order is left as it was:
     * <pre>
     *  offset  width  field
     *       0      4  semaphore id (u32)
     *       4      4  zero (alignment)
     *       8      8  address of this rank's inbound token    } the Host2DeviceSemaphore's
     *      16      8  address of the expected-inbound word     } device handle
     *      24      8  address of the fifo's ring               }
     *      32      8  address of the fifo's head               } the fifo's device handle
     *      40      8  address of the fifo's tail               } ({@link Fifo#encodeDeviceHandle});
     *      48      8  address of the fifo's tail cache         } the proxy state is at tail - 56
     *      56      4  fifo capacity (u32)                      }
     *      60      4  zero                                     }
     *      64      8  address of this semaphore's flushed-position word (see {@link ProxyService})
     *      72      4  destination memory id (u32)
     *      76      4  source memory id (u32)
     * </pre>
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when fewer bytes remain, or the
     *                           service is closed
     */
    public void encodeDeviceHandle(ByteBuffer out) {
        DeviceBuffer fifoBuffer = service.fifo().buffer();
        DeviceBuffer words = service.flushedWords();
        if (fifoBuffer.isClosed() || words.isClosed()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the proxy service is closed").rank(context.rank())
                    .peer(context.remoteRank()).tag(context.tag()).phase("port channel device handle").build();
        }
        Fifo fifo = service.fifo();
        long base = fifoBuffer.address();
        DeviceHandles.portChannel(out, semaphoreId.value(), handle.inboundAddress(), handle.expectedAddress(),
                base + FifoLayout.RING, fifo.headAddress(), base + FifoLayout.TAIL, fifo.tailCacheAddress(),
                service.fifoCapacity(), words.address() + flushedOffset, dst.value(), src.value());
    }

    // ------------------------------------------------------------------------------------------
    // machinery

    private void checkRanges(long dstOffset, long srcOffset, long size, String phase) {
        try {
            dstMemory.checkRange(dstOffset, size, phase);
            srcMemory.checkRange(srcOffset, size, phase);
        } catch (JmscclppException e) {
            throw located(e, phase);
        }
    }

    private long push(int type, long dstOffset, long srcOffset, long size, Duration timeout, String phase) {
        ProxyTrigger trigger = ProxyTrigger.of(type, dst.value(), dstOffset, src.value(), srcOffset, size,
                semaphoreId.value());
        try {
            return producer.push(trigger, Waiting.bounded(timeout));
        } catch (JmscclppException e) {
            if (e.code() == ErrorCode.ABORTED || e.code() == ErrorCode.REMOTE_ERROR) {
                abortSignal.throwIfRaised(context.rank(), context.remoteRank(), "port channel " + phase);
            }
            throw located(e, phase);
        }
    }

    private void awaitFlushed(long pos, long deadline, Duration timeout, String phase) {
        try {
            boolean ended = Waiting.await(() -> Tokens.acquire(flushed, flushedOffset) > pos
                    || producer.proxyState() != 0, deadline);
            long done = Tokens.acquire(flushed, flushedOffset);
            if (done > pos) {
                return;
            }
            if (ended) {
                throw gone(producer.proxyState(), phase);
            }
            String why = Thread.currentThread().isInterrupted() ? "interrupted while waiting"
                    : "not within " + timeout.toMillis() + " ms";
            throw JmscclppException.builder(ErrorCode.TIMEOUT, "the flush of the trigger at fifo position " + pos
                    + " did not complete: " + why + " (the semaphore's flushed position is " + done + ")")
                    .rank(context.rank()).peer(context.remoteRank()).tag(context.tag()).phase("port channel " + phase)
                    .build();
        } catch (IllegalStateException | WrongThreadException e) {
            throw closed(phase, e);
        }
    }

    private static long deadline(Duration timeout) {
        if (timeout.isNegative()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the timeout is negative: " + timeout)
                    .phase("port channel").build();
        }
        return Waiting.deadline(timeout);
    }

    /**
     * The error for a proxy that stopped or failed, with the failure (when in this process) as the
     * cause; the job's abort, which fails the proxy, is reported as itself.
     */
    private JmscclppException gone(long state, String phase) {
        abortSignal.throwIfRaised(context.rank(), context.remoteRank(), "port channel " + phase);
        JmscclppException e = producer.proxyGone(state, phase);
        return JmscclppException.builder(e.code(), e.detail()).rank(context.rank()).peer(context.remoteRank())
                .tag(context.tag()).phase("port channel " + phase).cause(service.failure()).build();
    }

    /** Re-addresses an error of the fifo or of a range check to this channel. */
    private JmscclppException located(JmscclppException e, String phase) {
        @Nullable Throwable cause = e.getCause();
        if (cause == null && (e.code() == ErrorCode.ABORTED || e.code() == ErrorCode.REMOTE_ERROR)) {
            cause = service.failure();
        }
        return JmscclppException.builder(e.code(), e.detail()).rank(context.rank()).peer(context.remoteRank())
                .tag(context.tag()).phase("port channel " + phase).cause(cause == null ? e : cause).build();
    }

    private JmscclppException closed(String phase, RuntimeException cause) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "the proxy service's memory is closed")
                .rank(context.rank()).peer(context.remoteRank()).tag(context.tag()).phase("port channel " + phase)
                .cause(cause).build();
    }

    @Override
    public String toString() {
        return "PortChannel[semaphore " + semaphoreId.value() + ", dst " + dst.value() + ", src " + src.value() + ", "
                + context + "]";
    }
}
