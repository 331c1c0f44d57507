package org.jmscclpp.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The first failure of a job as this process learned it: a peer that died (REMOTE_ERROR), an
 * {@code abort} anywhere in the job (ABORTED). A {@link Communicator} owns one and raises it when
 * its bootstrap reports a failure or when {@link Communicator#abort(String)} is called; every wait
 * that belongs to the communicator (semaphores, port channels, the proxy's fifo, collectives, and
 * on GPUs the kernels, through a device-visible flag) looks at it and ends with its cause instead
 * of running to its own deadline, as NCCL's {@code ncclCommAbort} ends the operations in flight.
 *
 * <p>Raised once: the first cause wins and later ones are ignored. Raising wakes every thread
 * parked in the library's waits so that they notice at once. Reading costs one volatile load.
 */
public final class AbortSignal {

    /** A signal that is never raised: for resources made outside a communicator. */
    public static final AbortSignal NEVER = new AbortSignal();

    private final Object lock = new Object();
    private final Sinks.One<JmscclppException> raised = Sinks.one();
    private final List<Consumer<JmscclppException>> listeners = new ArrayList<>();
    private volatile @Nullable JmscclppException cause;

    /** A signal that is not raised yet. */
    public static AbortSignal create() {
        return new AbortSignal();
    }

    private AbortSignal() {
    }

    /** Whether the signal was raised. */
    public boolean isRaised() {
        return cause != null;
    }

    /** The cause of the first {@link #raise}, if any. */
    public Optional<JmscclppException> cause() {
        return Optional.ofNullable(cause);
    }

    /**
     * Raises the signal with {@code cause} unless it was raised already; then tells the listeners
     * (on this thread) and wakes the library's parked waiters. Returns whether this call raised it.
     *
     * @throws UnsupportedOperationException on {@link #NEVER}
     */
    public boolean raise(JmscclppException cause) {
        Objects.requireNonNull(cause, "cause");
        if (this == NEVER) {
            throw new UnsupportedOperationException("AbortSignal.NEVER cannot be raised");
        }
        List<Consumer<JmscclppException>> toTell;
        synchronized (lock) {
            if (this.cause != null) {
                return false;
            }
            this.cause = cause;
            toTell = new ArrayList<>(listeners);
            listeners.clear();
        }
        raised.tryEmitValue(cause);
        RuntimeException first = null;
        for (Consumer<JmscclppException> l : toTell) {
            try {
                l.accept(cause);
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        // after the listeners, which set the flags some waits look at (a collective's failure)
        Waiting.wake();
        if (first != null) {
            throw first;
        }
        return true;
    }

    /**
     * Calls {@code listener} with the cause once the signal is raised (at once, on this thread, if
     * it is raised already). Disposing the result removes a listener that has not run.
     */
    public Disposable onRaise(Consumer<JmscclppException> listener) {
        Objects.requireNonNull(listener, "listener");
        JmscclppException now;
        synchronized (lock) {
            now = cause;
            if (now == null) {
                listeners.add(listener);
                return () -> {
                    synchronized (lock) {
                        listeners.remove(listener);
                    }
                };
            }
        }
        listener.accept(now);
        return () -> { };
    }

    /** Emits the cause once the signal is raised; never completes otherwise. */
    public Mono<JmscclppException> whenRaised() {
        return raised.asMono();
    }

    /**
     * Throws the cause, located at this rank, peer and phase (the cause's own peer is kept where it
     * names one: the rank that failed first), when the signal is raised.
     */
    public void throwIfRaised(int rank, int peer, String phase) {
        JmscclppException c = cause;
        if (c != null) {
            throw failure(c, rank, peer, phase);
        }
    }

    /**
     * {@code condition} for a wait that also ends once the signal is raised: true while the
     * condition holds (a signal that arrived still counts after an abort), else throws as
     * {@link #throwIfRaised} does. {@link #NEVER} returns {@code condition} itself.
     */
    public BooleanSupplier guard(BooleanSupplier condition, int rank, int peer, String phase) {
        if (this == NEVER) {
            return condition;
        }
        return () -> {
            if (condition.getAsBoolean()) {
                return true;
            }
            throwIfRaised(rank, peer, phase);
            return false;
        };
    }

    /** {@code cause} re-thrown from a wait of {@code rank} in {@code phase}, naming the rank that failed first. */
    static JmscclppException failure(JmscclppException cause, int rank, int peer, String phase) {
        return JmscclppException.builder(cause.code(), "the job failed while this rank waited: " + cause.detail())
                .rank(rank).peer(cause.peer() != JmscclppException.NONE ? cause.peer() : peer).phase(phase)
                .cause(cause).build();
    }

    @Override
    public String toString() {
        JmscclppException c = cause;
        return this == NEVER ? "AbortSignal.NEVER" : c == null ? "AbortSignal(not raised)" : "AbortSignal(" + c.getMessage() + ")";
    }
}
