package org.jmscclpp.samples;

import java.time.Duration;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import reactor.core.publisher.Mono;

/**
 * Blocking waits for the samples' main threads, each with a deadline: a sample is a program whose
 * steps happen in order, so it waits for each {@link Mono} instead of composing them.
 */
public final class Blocking {

    private Blocking() {
    }

    /**
     * Waits for {@code mono}'s value.
     *
     * @throws JmscclppException the Mono's own error; {@link ErrorCode#TIMEOUT} after {@code deadline};
     *                           {@link ErrorCode#INTERNAL_ERROR} when it completes empty
     */
    public static <T> T value(Mono<T> mono, Duration deadline, int rank, String phase) {
        T v = bounded(mono, deadline, rank, phase).block();
        if (v == null) {
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "completed without a value")
                    .rank(rank).phase(phase).build();
        }
        return v;
    }

    /** Waits for {@code mono} to complete, ignoring any value; errors as {@link #value}. */
    public static void done(Mono<?> mono, Duration deadline, int rank, String phase) {
        bounded(mono, deadline, rank, phase).block();
    }

    private static <T> Mono<T> bounded(Mono<T> mono, Duration deadline, int rank, String phase) {
        return mono.timeout(deadline, Mono.error(() -> JmscclppException.builder(ErrorCode.TIMEOUT,
                "no completion within " + deadline.toMillis() + " ms").rank(rank).phase(phase).build()));
    }
}
