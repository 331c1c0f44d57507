package org.jmscclpp.cuda.collective;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaStream;
import org.jspecify.annotations.Nullable;

/**
 * The host half of the copy-engine algorithms ({@code ce}; collectives.cu, "copy engine"): a kernel
 * cannot start the GPU's copy engines, so once a call's descriptors agree its first thread posts a
 * request per peer into a ring of pinned host memory, and this proxy's thread turns each into a
 * copy on that peer's copy stream followed by up to two stream writes (the peer's "in" word, this
 * rank's "out" word; a request without one has 0 there), which the kernels wait for. The kernel
 * computes every address (its peers' buffers as mapped here, located through their descriptors);
 * the proxy only checks that a request's lane is one of its streams.
 *
 * <p>The thread starts with the first copy-engine call and then polls the ring: it spins while
 * requests come (10 ms after the last one: calls of a GiB take milliseconds, and a request found
 * late delays the whole call; yielding its carrier every 200 µs, {@link Waiting.Backoff}), then
 * parks for growing intervals up to 50 µs, and up to a millisecond after 100 ms without a request.
 * A call issued here wakes it; a CUDA graph's replay does not go through the host, so its first
 * call after a long pause may wait up to that millisecond (calls of this algorithm run at tens of
 * MiB and up).
 *
 * <p>A copy or stream write the driver refuses fails the communicator: the proxy records the
 * error ({@link #failure()}) and calls its failure action (the communicator raises the abort
 * flag), so that the kernels waiting for its words give up, and the completion thread fails their
 * calls with it. So does a request with a lane it lacks or a negative size, and one overwritten
 * before it was read.
 */
final class CopyProxy implements AutoCloseable {

    /** Where the requests of one peer go: that peer's copy stream ({@link #of(CudaStream)}). */
    interface Lane {
        void copyAsync(long dst, long src, long bytes);

        void writeValueAsync(long address, long value);

        boolean isIdle();

        void synchronize(Duration timeout, String what);

        static Lane of(CudaStream s) {
            return new Lane() {
                @Override
                public void copyAsync(long dst, long src, long bytes) {
                    s.copyAsync(dst, src, bytes);
                }

                @Override
                public void writeValueAsync(long address, long value) {
                    s.writeValueAsync(address, value);
                }

                @Override
                public boolean isIdle() {
                    return s.isIdle();
                }

                @Override
                public void synchronize(Duration timeout, String what) {
                    s.synchronize(timeout, what);
                }
            };
        }
    }

    /** Request slots of the ring (collectives.cu's kCeSlots). */
    static final int SLOTS = 64;
    /** Bytes of a request: dst, src, bytes, in word, out word, value, lane, sequence (kCeRequestWords). */
    static final int REQUEST_BYTES = 64;

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();
    private static final long SPIN_NS = 10_000_000;
    private static final long IDLE_NS = 100_000_000;

    private final int rank;
    private final MemorySegment ring;
    private final Lane[] lanes;
    private final Runnable onFailure;
    private final Duration timeout;
    private final Object starting = new Object();
    private volatile boolean closed;
    private volatile @Nullable Thread thread;
    private volatile @Nullable JmscclppException failure;

    /**
     * A proxy for {@code rank} over {@code ring} (host memory of {@link #SLOTS} requests, zeroed: the
     * host view of the pinned ring the kernels write) with a lane per peer; it owns neither.
     * {@code onFailure} runs once when a request cannot be served.
     */
    CopyProxy(int rank, MemorySegment ring, Lane[] lanes, Runnable onFailure, Duration timeout) {
        if (ring.byteSize() < (long) SLOTS * REQUEST_BYTES) {
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "a copy request ring of " + ring.byteSize()
                    + " bytes, not " + SLOTS * REQUEST_BYTES).rank(rank).phase("copy proxy").build();
        }
        this.rank = rank;
        this.ring = ring;
        this.lanes = lanes.clone();
        this.onFailure = onFailure;
        this.timeout = timeout;
    }

    /** Allocates a ring for {@link #CopyProxy} on {@code cuda}. */
    static DeviceBuffer allocateRing(CudaBackend cuda) {
        return cuda.allocateHostVisible((long) SLOTS * REQUEST_BYTES);
    }

    /** The error that stopped the proxy, or null while it serves. */
    @Nullable JmscclppException failure() {
        return failure;
    }

    /** Before a copy-engine call is enqueued: starts the thread the first time, else wakes it. */
    void arm() {
        Thread t = thread;
        if (t == null) {
            synchronized (starting) {
                if (thread == null && !closed) {
                    thread = Thread.ofVirtual().name("jmscclpp-copy-proxy-r" + rank).start(this::serve);
                }
            }
        } else {
            LockSupport.unpark(t);
        }
    }

    private void serve() {
        long next = 0;
        // spinning, it yields its carrier every 200 µs (another virtual thread queued there gets in)
        Waiting.Backoff backoff = new Waiting.Backoff(50_000, SPIN_NS);
        while (!closed) {
            long at = (next % SLOTS) * REQUEST_BYTES;
            long seq = (long) WORD.getAcquire(ring, at + 56);
            if (seq == next + 1) {
                try {
                    handle(at, next);
                } catch (JmscclppException e) {
                    fail(e);
                    return;
                } catch (RuntimeException e) {
                    fail(JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "copy request " + next + ": " + e)
                            .rank(rank).phase("copy proxy").cause(e).build());
                    return;
                }
                next++;
                backoff.reset();
                continue;
            }
            if (seq > next + 1) {
                fail(JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "copy request " + next + " was overwritten"
                        + " by request " + (seq - 1) + " before the proxy read it").rank(rank).phase("copy proxy")
                        .build());
                return;
            }
            if (!backoff.spinning()) {
                if (backoff.idleNanos() < IDLE_NS) {
                    backoff.park(Long.MAX_VALUE);
                } else {
                    backoff.parkUpTo(1_000_000);
                }
            }
        }
    }

    private void handle(long at, long number) {
        MemorySegment r = ring;
        long dst = r.get(LONG, at);
        long src = r.get(LONG, at + 8);
        long bytes = r.get(LONG, at + 16);
        long in = r.get(LONG, at + 24);
        long out = r.get(LONG, at + 32);
        long value = r.get(LONG, at + 40);
        long lane = r.get(LONG, at + 48);
        if (lane < 0 || lane >= lanes.length || bytes < 0) {
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "copy request " + number + " names lane " + lane
                    + " of " + lanes.length + ", " + bytes + " bytes").rank(rank).phase("copy proxy").build();
        }
        Lane s = lanes[(int) lane];
        s.copyAsync(dst, src, bytes);
        if (in != 0) {
            s.writeValueAsync(in, value);
        }
        if (out != 0) {
            s.writeValueAsync(out, value);
        }
    }

    private void fail(JmscclppException e) {
        failure = e;
        onFailure.run();
    }

    /** Whether every copy and stream write it enqueued is done. */
    boolean idle() {
        for (Lane s : lanes) {
            if (!s.isIdle()) {
                return false;
            }
        }
        return true;
    }

    /** Stops the thread and waits for the copies it enqueued (the deadline of the communicator's close). */
    @Override
    public void close() {
        closed = true;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
            try {
                if (!t.join(timeout)) {
                    throw JmscclppException.builder(ErrorCode.TIMEOUT, "the copy proxy did not stop within "
                            + timeout).rank(rank).phase("close").build();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw JmscclppException.builder(ErrorCode.ABORTED, "interrupted while the copy proxy stopped")
                        .rank(rank).phase("close").cause(e).build();
            }
        }
        for (Lane s : lanes) {
            s.synchronize(timeout, "the copy proxy's copies");
        }
    }
}
