package org.jmscclpp.core.semaphore;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceType;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.spi.Tokens;
import org.jmscclpp.core.spi.Waiting;
import reactor.core.publisher.Mono;

/**
 * A semaphore that host code signals and host code waits on, on both ranks: MSCCL++'s
 * {@code Host2HostSemaphore}. The connection must not be {@code CUDA_IPC} and its local device must
 * be the CPU (the inbound token lives in host memory, where {@link #poll()} reads it).
 *
 * <p>{@link #signal()} raises the peer's inbound token through
 * {@link Connection#updateAndSync}, after everything the connection wrote before it.
 * {@link #nextSignal(Duration)} and {@link #poll()} consume one signal each. Signal from any number of
 * threads; wait from one at a time.
 */
public final class Host2HostSemaphore {

    private final Semaphore semaphore;
    private final MemorySegment inbound;
    private final AtomicLong outbound = new AtomicLong();
    private final AtomicLong expected = new AtomicLong();

    /** Wraps a semaphore built by {@link Communicator#buildSemaphore}. */
    public Host2HostSemaphore(Semaphore semaphore) {
        Connection c = semaphore.connection();
        if (c.transport() == Transport.CUDA_IPC) {
            throw invalid(c, "a host-to-host semaphore cannot signal over CUDA_IPC");
        }
        if (c.localDevice().type() != DeviceType.CPU) {
            throw invalid(c, "a host-to-host semaphore needs a connection whose local device is the CPU, not "
                    + c.localDevice());
        }
        this.semaphore = semaphore;
        this.inbound = semaphore.localMemory().hostSegment();
    }

    /** Builds the semaphore over {@code connection} with its peer (which must build one too) and wraps it. */
    public static Mono<Host2HostSemaphore> build(Communicator communicator, Connection connection) {
        return communicator.buildSemaphore(connection).map(Host2HostSemaphore::new);
    }

    public Semaphore semaphore() {
        return semaphore;
    }

    /** Raises the peer's inbound token by one. */
    public void signal() {
        synchronized (outbound) {   // concurrent signals must reach the peer in increasing order
            semaphore.connection().updateAndSync(semaphore.remoteMemory(), 0, outbound, outbound.get() + 1);
        }
    }

    /**
     * Writes {@code size} bytes of {@code src} to {@code dst} over this semaphore's connection, then
     * raises the peer's token, as one {@link Connection#writeAndUpdate}: MSCCL++'s put-with-signal.
     */
    public void writeAndSignal(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        synchronized (outbound) {   // as signal(): tokens reach the peer in increasing order
            semaphore.connection().writeAndUpdate(dst, dstOffset, src, srcOffset, size, semaphore.remoteMemory(), 0,
                    outbound, outbound.get() + 1);
        }
    }

    /** Consumes one signal if one has arrived that was not consumed yet; never waits. */
    public boolean poll() {
        long e = expected.get();
        if (inboundToken("semaphore poll") > e) {
            expected.set(e + 1);
            return true;
        }
        return false;
    }

    /**
     * Completes once a signal not consumed before has arrived, and consumes it; errors with
     * {@link ErrorCode#TIMEOUT} naming the peer after {@code timeout} (nothing is consumed then).
     * Waits on a virtual thread, spinning briefly and then parking.
     */
    public Mono<Void> nextSignal(Duration timeout) {
        return Mono.defer(() -> {
            long target = expected.get() + 1;
            ConnectionContext ctx = semaphore.connection().context();
            return Waiting.until(semaphore.abortSignal().guard(() -> inboundToken("semaphore wait") >= target,
                            ctx.rank(), ctx.remoteRank(), "semaphore wait"), timeout,
                    () -> JmscclppException.builder(ErrorCode.TIMEOUT, "no signal " + target + " within "
                            + timeout.toMillis() + " ms (inbound token is " + inboundToken("semaphore wait") + ")")
                            .rank(ctx.rank()).peer(ctx.remoteRank()).tag(ctx.tag()).phase("semaphore wait").build())
                    .doOnSuccess(v -> expected.set(target));
        });
    }

    /** {@link #nextSignal(Duration)} with 30 seconds. */
    public Mono<Void> nextSignal() {
        return nextSignal(Bootstrap.DEFAULT_TIMEOUT);
    }

    /**
     * The inbound token; INVALID_USAGE once its memory is closed (the communicator that owns the
     * semaphore was closed), also under a wait, which then ends with it.
     */
    private long inboundToken(String phase) {
        try {
            return Tokens.acquire(inbound, 0);
        } catch (IllegalStateException e) {
            throw closed(semaphore.connection().context(), phase, e);
        }
    }

    /** The error of a semaphore whose memory was closed under it (its communicator was closed). */
    static JmscclppException closed(ConnectionContext ctx, String phase, RuntimeException cause) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "the semaphore's memory was closed while in use"
                + " (was its communicator closed?): " + cause.getMessage()).rank(ctx.rank()).peer(ctx.remoteRank())
                .tag(ctx.tag()).phase(phase).cause(cause).build();
    }

    static JmscclppException invalid(Connection c, String detail) {
        ConnectionContext ctx = c.context();
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(ctx.rank()).peer(ctx.remoteRank())
                .tag(ctx.tag()).phase("semaphore").build();
    }
}
