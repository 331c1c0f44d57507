package org.jmscclpp.bootstrap;

import java.util.concurrent.atomic.AtomicBoolean;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * A result that arrives once, from whichever thread gets there first: a {@link Sinks.One} whose first
 * completion wins (later ones are ignored, as nobody has to care who lost) and which says whether it
 * has completed. Subscribers that come late get the result; signals go out on the completing thread.
 */
final class OneShot<T> {

    private final Sinks.One<T> sink = Sinks.unsafe().one();
    private final AtomicBoolean done = new AtomicBoolean();

    /** Completes with {@code value}; false if already completed. */
    boolean succeed(T value) {
        if (!done.compareAndSet(false, true)) {
            return false;
        }
        sink.tryEmitValue(value);
        return true;
    }

    /** Completes empty; false if already completed. */
    boolean succeedEmpty() {
        if (!done.compareAndSet(false, true)) {
            return false;
        }
        sink.tryEmitEmpty();
        return true;
    }

    /** Fails with {@code error}; false if already completed. */
    boolean fail(Throwable error) {
        if (!done.compareAndSet(false, true)) {
            return false;
        }
        sink.tryEmitError(error);
        return true;
    }

    /** Whether it has completed (or is completing on another thread). */
    boolean isDone() {
        return done.get();
    }

    /** The result. */
    Mono<T> mono() {
        return sink.asMono();
    }
}
