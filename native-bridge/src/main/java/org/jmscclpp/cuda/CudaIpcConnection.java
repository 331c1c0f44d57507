package org.jmscclpp.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.spi.ConnectionChecks;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.Tunables;
import org.jmscclpp.nativebridge.CudaDriver;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A {@link Connection} over {@link Transport#CUDA_IPC}: the peer's GPU memory is mapped into
 * this process, and the GPU's copy engines move the bytes, in order, on one stream of this
 * connection.
 *
 * <ul>
 *   <li>{@link #write} enqueues {@code cuMemcpyDtoDAsync} and returns at once.</li>
 *   <li>{@link #updateAndSync} enqueues the store of the 64-bit token behind the writes: with
 *       {@code cuStreamWriteValue64} where the GPU supports 64-bit stream memory operations (no
 *       staging; the default flags order the store after every earlier operation of the
 *       stream), else as an 8-byte host-to-device copy from a ring of pinned words (a word is
 *       rewritten only after the stream was drained since its last use).</li>
 *   <li>{@link #flush} records an event and completes when the stream reached it, found by
 *       polling {@code cuEventQuery} on a virtual thread: nothing blocks inside the driver.
 *       {@link #pollableFlush} (what a proxy uses) instead enqueues a store of the flush's number
 *       into pinned host memory, which the proxy's loop reads with a plain load.</li>
 * </ul>
 * Ranges are checked before anything is enqueued: a rejected call moves nothing. Thread-safe
 * (the driver orders calls on one stream from several threads as they arrive).
 */
final class CudaIpcConnection implements Connection {

    /** Pinned token words of the fallback path; the stream is drained every half ring. */
    private static final int TOKEN_RING = 256;
    /** How often a polled flush that is not done asks the stream whether it failed. */
    private static final long STREAM_CHECK_NANOS = 1_000_000;
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private final CudaBackend backend;
    private final CudaContext context;
    private final Endpoint local;
    private final Endpoint remote;
    private final ConnectionContext where;
    private final CudaStream stream;
    private final boolean writeValue;
    private final DeviceBuffer tokenRing;
    private final MemorySegment tokens;
    private long tokenCount;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Pinned, host-mapped: the number of the last polled flush the stream reached; guarded by its segment. */
    private final DeviceBuffer flushWord;
    private final MemorySegment flushMark;
    private long flushes;

    CudaIpcConnection(CudaBackend backend, Endpoint local, Endpoint remote, ConnectionContext where) {
        this.backend = backend;
        this.context = backend.context();
        this.local = local;
        this.remote = remote;
        this.where = where;
        this.writeValue = context.supportsStreamMemOps64() && !Tunables.booleanValue("jmscclpp.cuda.tokenCopies", false);
        this.tokenRing = backend.allocateHostVisible((long) TOKEN_RING * Long.BYTES);
        this.tokens = tokenRing.hostSegment();
        try {
            this.flushWord = backend.allocateHostVisible(Long.BYTES);
        } catch (RuntimeException e) {
            tokenRing.close();
            throw e;
        }
        this.flushMark = flushWord.hostSegment();
        try {
            this.stream = new CudaStream(context, "connection " + where);
        } catch (RuntimeException e) {
            tokenRing.close();
            flushWord.close();
            throw e;
        }
        backend.retain();
    }

    @Override
    public void write(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        String phase = "write";
        checkOpen(phase);
        ConnectionChecks.write(where, Transport.CUDA_IPC, dst, dstOffset, src, srcOffset, size);
        if (size == 0) {
            return;
        }
        context.makeCurrent();
        int result = CudaDriver.cuMemcpyDtoDAsync_v2(dst.address() + dstOffset, src.address() + srcOffset, size,
                stream.handle());
        if (result != CudaDriver.CUDA_SUCCESS) {
            throw system(phase, result, "cuMemcpyDtoDAsync_v2(" + size + " bytes)");
        }
    }

    @Override
    public void updateAndSync(RegisteredMemory dst, long dstOffset, AtomicLong localToken, long newValue) {
        String phase = "updateAndSync";
        checkOpen(phase);
        ConnectionChecks.token(where, Transport.CUDA_IPC, dst, dstOffset);
        localToken.set(newValue);
        long address = dst.address() + dstOffset;
        if (writeValue) {
            context.makeCurrent();
            int result = CudaDriver.cuStreamWriteValue64_v2(stream.handle(), address, newValue,
                    CudaDriver.CU_STREAM_WRITE_VALUE_DEFAULT);
            if (result != CudaDriver.CUDA_SUCCESS) {
                throw system(phase, result, "cuStreamWriteValue64_v2");
            }
            return;
        }
        synchronized (tokens) {
            long slot = tokenCount++ % TOKEN_RING;
            if (slot % (TOKEN_RING / 2) == 0 && tokenCount > TOKEN_RING / 2) {
                // every word of this half was last used at least half a ring ago: drain so none is still being read
                stream.synchronize(Duration.ofSeconds(30), "token copies of " + where);
            }
            tokens.setAtIndex(ValueLayout.JAVA_LONG, slot, newValue);
            context.makeCurrent();
            int result = CudaDriver.cuMemcpyHtoDAsync_v2(address, tokenRing.address() + slot * Long.BYTES, Long.BYTES,
                    stream.handle());
            if (result != CudaDriver.CUDA_SUCCESS) {
                throw system(phase, result, "cuMemcpyHtoDAsync_v2(token)");
            }
        }
    }

    /**
     * Enqueues a store of the flush's number into a pinned, host-mapped word behind everything
     * enqueued so far, so that the flush is done once a plain load of that word shows the number:
     * no event, no thread. While it is not, a {@code cuStreamQuery} once a millisecond finds a
     * failed stream. Null where the GPU has no 64-bit stream memory operations.
     */
    @Override
    public @Nullable PolledFlush pollableFlush() {
        if (!writeValue) {
            return null;
        }
        synchronized (flushMark) {
            checkOpen("flush");
            long number = flushes + 1;
            context.makeCurrent();
            int result = CudaDriver.cuStreamWriteValue64_v2(stream.handle(), flushWord.address(), number,
                    CudaDriver.CU_STREAM_WRITE_VALUE_DEFAULT);
            if (result != CudaDriver.CUDA_SUCCESS) {
                throw system("flush", result, "cuStreamWriteValue64_v2(flush mark)");
            }
            flushes = number;   // numbers reach the stream in order, so the word only grows
            return new MarkedFlush(number);
        }
    }

    /** A flush of {@link #pollableFlush()}: done once the flush word reached its number. */
    private final class MarkedFlush implements PolledFlush {
        private final long number;
        private long nextQuery = System.nanoTime() + STREAM_CHECK_NANOS;

        MarkedFlush(long number) {
            this.number = number;
        }

        @Override
        public boolean done() {
            synchronized (flushMark) {
                checkOpen("flush");
                if ((long) WORD.getAcquire(flushMark, 0L) >= number) {
                    return true;
                }
                long now = System.nanoTime();
                if (now - nextQuery >= 0) {
                    nextQuery = now + STREAM_CHECK_NANOS;
                    try {
                        stream.isIdle();
                    } catch (JmscclppException e) {
                        throw JmscclppException.builder(e.code(), e.detail()).rank(where.rank())
                                .peer(where.remoteRank()).tag(where.tag()).phase("flush").cause(e).build();
                    }
                }
                return false;
            }
        }
    }

    /**
     * Completes when every write and token store enqueued before the subscription has reached the
     * peer's memory; errors with {@link ErrorCode#TIMEOUT} after {@code timeout}, with
     * {@link ErrorCode#SYSTEM_ERROR} when the stream failed, and {@link ErrorCode#INVALID_USAGE}
     * when the connection is closed. Polls on a virtual thread.
     */
    @Override
    public Mono<Void> flush(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return Mono.defer(() -> {
            checkOpen("flush");
            return stream.drained(timeout, "the flush");
        }).onErrorMap(JmscclppException.class, e -> e.rank() == JmscclppException.NONE
                ? JmscclppException.builder(e.code(), e.detail()).rank(where.rank()).peer(where.remoteRank())
                        .tag(where.tag()).phase("flush").cause(e).build()
                : e);
    }

    @Override
    public Transport transport() {
        return Transport.CUDA_IPC;
    }

    @Override
    public Transport remoteTransport() {
        return remote.transport();
    }

    @Override
    public Device localDevice() {
        return local.device();
    }

    @Override
    public ConnectionContext context() {
        return where;
    }

    @Override
    public int maxWriteQueueSize() {
        return local.maxWriteQueueSize();
    }

    /** Destroys the stream (work already enqueued still completes) and frees the token words. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                stream.synchronize(Duration.ofSeconds(30), "closing " + where);
            } catch (JmscclppException ignored) {
                // a failed or stuck stream is destroyed anyway; the driver reports the failure elsewhere
            }
            stream.close();
            tokenRing.close();
            synchronized (flushMark) {
                flushWord.close();   // a polled flush looks at closed first, under the same lock
            }
            backend.unretain();
        }
    }

    private void checkOpen(String phase) {
        if (closed.get()) {
            throw invalid(phase, "the connection is closed");
        }
    }

    private JmscclppException invalid(String phase, String detail) {
        return ConnectionChecks.invalid(where, phase, detail);
    }

    private JmscclppException system(String phase, int result, String call) {
        return JmscclppException.builder(ErrorCode.SYSTEM_ERROR, call + " failed: " + CudaDriver.describe(result))
                .rank(where.rank()).peer(where.remoteRank()).tag(where.tag()).phase(phase).build();
    }

    @Override
    public String toString() {
        return "CudaIpcConnection[" + where + ", GPU " + context.ordinal() + " to " + remote.device()
                + (closed.get() ? ", closed" : "") + "]";
    }
}
