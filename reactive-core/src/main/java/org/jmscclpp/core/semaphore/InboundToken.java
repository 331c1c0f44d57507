package org.jmscclpp.core.semaphore;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.jmscclpp.core.AbortSignal;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Tokens;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;

/**
 * The waiting half of a device-side semaphore handle: an inbound token the peer raises and an
 * expected-inbound counter this side raises as it consumes signals, both in memory a kernel can
 * reach. On the host backend "device code" is a Java thread, and these methods are what it calls;
 * on a GPU the same two words are read by the CUDA version of the handle.
 *
 * <p>Like device code, these methods block the calling thread; they are meant for threads that
 * play the role of a kernel, not for reactive pipelines (use {@link Host2HostSemaphore#nextSignal} there).
 */
abstract class InboundToken {

    private final @Nullable MemorySegment inboundSegment;
    private final @Nullable MemorySegment expectedSegment;
    final ConnectionContext context;
    private final AbortSignal abortSignal;

    /**
     * Null segments stand for device memory the host cannot touch: such a handle only encodes.
     * Waits end with the cause of {@code abortSignal} once it is raised.
     */
    InboundToken(@Nullable MemorySegment inbound, @Nullable MemorySegment expected, ConnectionContext context,
                 AbortSignal abortSignal) {
        this.inboundSegment = inbound;
        this.expectedSegment = expected;
        this.context = context;
        this.abortSignal = abortSignal;
    }

    private MemorySegment inbound() {
        return hostView(inboundSegment);
    }

    private MemorySegment expected() {
        return hostView(expectedSegment);
    }

    final MemorySegment hostView(@Nullable MemorySegment segment) {
        if (segment == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "this semaphore's tokens are device memory: "
                    + "only GPU code can use its handle").rank(context.rank()).peer(context.remoteRank())
                    .tag(context.tag()).phase("device semaphore").build();
        }
        return segment;
    }

    /** Consumes one signal if one has arrived that was not consumed yet; never blocks. */
    public boolean poll() {
        try {
            long e = Tokens.plain(expected(), 0);
            if (Tokens.acquire(inbound(), 0) > e) {
                Tokens.setPlain(expected(), 0, e + 1);
                return true;
            }
            return false;
        } catch (IllegalStateException e) {
            throw Host2HostSemaphore.closed(context, "device semaphore poll", e);
        }
    }

    /**
     * Blocks until the next signal has arrived (acquire: writes made before it are visible) and
     * consumes it; throws {@link ErrorCode#TIMEOUT} naming the peer after {@code timeout}.
     */
    public void await(Duration timeout) {
        awaitSignal(timeout, true, null);
    }

    /** {@link #await(Duration)} without ordering the loads that follow (the token is read with opaque loads). */
    public void awaitRelaxed(Duration timeout) {
        awaitSignal(timeout, false, null);
    }

    /**
     * {@link #await(Duration)} that also gives up, consuming nothing and returning false, once
     * {@code abandoned} holds (checked between looks at the token): for callers whose signal can
     * no longer come, such as a channel whose proxy stopped.
     */
    public boolean awaitUnless(Duration timeout, BooleanSupplier abandoned) {
        return awaitSignal(timeout, true, abandoned);
    }

    private boolean awaitSignal(Duration timeout, boolean acquire, @Nullable BooleanSupplier abandoned) {
        try {
            return awaitSignalOn(timeout, acquire, abandoned);
        } catch (IllegalStateException e) {
            // the tokens' memory was closed, also under the wait: the communicator that owns them was closed
            throw Host2HostSemaphore.closed(context, "device semaphore wait", e);
        }
    }

    private boolean awaitSignalOn(Duration timeout, boolean acquire, @Nullable BooleanSupplier abandoned) {
        MemorySegment inbound = inbound();
        long target = Tokens.plain(expected(), 0) + 1;
        BooleanSupplier arrivedNow = () -> (acquire ? Tokens.acquire(inbound, 0) : Tokens.opaque(inbound, 0)) >= target;
        boolean arrived = Waiting.await(abortSignal.guard(abandoned == null ? arrivedNow
                        : () -> arrivedNow.getAsBoolean() || abandoned.getAsBoolean(),
                context.rank(), context.remoteRank(), "device semaphore wait"), Waiting.deadline(timeout));
        if (arrived && abandoned != null && !arrivedNow.getAsBoolean()) {
            return false;
        }
        if (!arrived) {
            throw JmscclppException.builder(ErrorCode.TIMEOUT, "no signal " + target + " within " + timeout.toMillis()
                    + " ms (inbound token is " + Tokens.acquire(inbound(), 0) + ")").rank(context.rank())
                    .peer(context.remoteRank()).tag(context.tag()).phase("device semaphore wait").build();
        }
        Tokens.setPlain(expected(), 0, target);
        return true;
    }

    /** The inbound token's current value. */
    public long inboundValue() {
        return Tokens.acquire(inbound(), 0);
    }

    /** How many signals this side has consumed. */
    public long expectedValue() {
        return Tokens.plain(expected(), 0);
    }
}
