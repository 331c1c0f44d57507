package org.jmscclpp.core;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A one-way data path from this rank into memory of one peer, over one {@link Transport}: MSCCL++'s
 * {@code Connection}. Made by {@link Communicator#connect} or {@link Communicator#connectOnSetup}.
 *
 * <p>{@link #write} and {@link #updateAndSync} start a transfer and return; {@link #flush} tells
 * when every transfer started before it is visible to the peer ({@link #awaitFlush} is its
 * blocking form). Ranges are checked: an offset or
 * size outside a registered region, memory not registered with the connection's transport, or
 * memory this process has not mapped is {@link ErrorCode#INVALID_USAGE}; the operation then does
 * nothing. {@link #write} and {@link #updateAndSync} may be called from any thread.
 */
public interface Connection extends AutoCloseable {

    /**
     * Copies {@code size} bytes from {@code src} at {@code srcOffset} (memory of this rank) to
     * {@code dst} at {@code dstOffset} (the peer's memory, received with
     * {@link Communicator#recvMemory}).
     */
    void write(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size);

    /**
     * Sets {@code localToken} to {@code newValue} and stores {@code newValue} as a 64-bit word at
     * {@code dst + dstOffset} with release semantics: a peer that reads the new value sees every
     * write this connection made before. This is how semaphores signal.
     */
    void updateAndSync(RegisteredMemory dst, long dstOffset, AtomicLong localToken, long newValue);

    /**
     * {@link #write} then {@link #updateAndSync} as one operation: a port channel's put-with-signal.
     * The token is stored after the written bytes, as with the two calls in a row; a transport that
     * can send both at once does ({@code ETHERNET}: the write's frames and the token's go out in one
     * socket write, one packet for a small write, where two calls cost two). Both are checked before
     * either goes out. The default makes the two calls.
     */
    default void writeAndUpdate(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size,
                                RegisteredMemory tokenDst, long tokenOffset, AtomicLong localToken, long newValue) {
        write(dst, dstOffset, src, srcOffset, size);
        updateAndSync(tokenDst, tokenOffset, localToken, newValue);
    }

    /**
     * Completes when every {@link #write} and {@link #updateAndSync} issued before the call is
     * visible at the peer; errors with {@link ErrorCode#TIMEOUT} after {@code timeout}. Lazy.
     */
    Mono<Void> flush(Duration timeout);

    /** {@link #flush(Duration)} with 30 seconds. */
    default Mono<Void> flush() {
        return flush(Bootstrap.DEFAULT_TIMEOUT);
    }

    /**
     * The synchronous form of {@link #flush(Duration)}, for threads that stand in for device code
     * (benchmarks, ping-pongs, a thread of the caller's own): blocks until every {@link #write} and
     * {@link #updateAndSync} issued before the call is visible at the peer, with the same errors
     * ({@link ErrorCode#TIMEOUT} after {@code timeout}, naming peer, tag and phase {@code flush}).
     * A transport may wait better than a subscriber can: ETHERNET reads the peer's acks on the
     * calling thread, which saves the hand-off from its ack thread. The default blocks on
     * {@link #flush(Duration)}. Not for a {@linkplain reactor.core.scheduler.Schedulers#isInNonBlockingThread()
     * non-blocking thread} (a Reactor parallel thread, a Netty event loop): there it throws
     * {@link IllegalStateException}, as {@link Mono#block()} does.
     */
    default void awaitFlush(Duration timeout) {
        // the flush keeps its own deadline; this one only bounds a transport that would not
        Duration limit = Waiting.bounded(timeout).plusSeconds(5);
        flush(timeout).timeout(limit, Mono.error(() -> {
            ConnectionContext ctx = context();
            return JmscclppException.builder(ErrorCode.TIMEOUT, "the flush did not end within " + limit.toMillis()
                    + " ms").rank(ctx.rank()).peer(ctx.remoteRank()).tag(ctx.tag()).phase("flush").build();
        })).block();
    }

    /**
     * Starts a flush that the caller polls instead of subscribing to, or returns null when this
     * transport has none (the default; then {@link #flush(Duration)}). A
     * {@link org.jmscclpp.core.proxy.ProxyService} checks such a flush between triggers, so that its
     * completion costs a load instead of a thread woken and a callback: {@code CUDA_IPC} enqueues a
     * store of the flush's number into pinned host memory behind the writes. The caller owns the
     * deadline: the flush never times out by itself.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the connection is closed;
     *                           {@link ErrorCode#SYSTEM_ERROR} when the transport refused to start it
     */
    default @Nullable PolledFlush pollableFlush() {
        return null;
    }

    /** A flush started by {@link #pollableFlush()}; polled by one thread at a time. */
    interface PolledFlush {
        /**
         * Whether every {@link #write} and {@link #updateAndSync} issued before the flush started is
         * visible at the peer. Never blocks; cheap enough to call in a polling loop.
         *
         * @throws JmscclppException when it never will be: {@link ErrorCode#SYSTEM_ERROR} when the
         *                           transport failed, {@link ErrorCode#INVALID_USAGE} when the
         *                           connection was closed
         */
        boolean done();
    }

    /** This end's transport. */
    Transport transport();

    /** The peer end's transport. */
    Transport remoteTransport();

    /** The device this end works for. */
    Device localDevice();

    /** The peer, this rank and tag the connection was made with. */
    ConnectionContext context();

    /** The most writes in flight before {@link #write} waits, or -1 for no limit. */
    int maxWriteQueueSize();

    /** Releases the transport's resources; later operations are {@link ErrorCode#INVALID_USAGE}. Idempotent. */
    @Override
    void close();
}
