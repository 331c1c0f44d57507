package org.jmscclpp.core.collective;

import java.time.Duration;
import java.util.Objects;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * Options of individual calls, applied through {@link CollectiveComm#with(CallOptions)}: the
 * algorithm (overriding the tuning table and {@link CollectiveOptions#algorithms()}) and the
 * deadline (overriding {@link CollectiveOptions#timeout()}). Immutable; {@code null} fields mean
 * "the communicator's choice". Every rank must choose the same algorithm for a call: a call whose
 * algorithm differs between ranks fails on every rank with {@link ErrorCode#INVALID_USAGE}.
 *
 * @param algorithm an algorithm name of the backend ({@code ll16}, {@code rsag}, ...; see
 *                  {@link CollectiveComm#algorithms()}), or null
 * @param timeout   the deadline of each call, or null
 */
public record CallOptions(@Nullable String algorithm, @Nullable Duration timeout) {

    private static final CallOptions DEFAULTS = new CallOptions(null, null);

    public CallOptions {
        if (algorithm != null && algorithm.isBlank()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "an algorithm name must not be blank")
                    .phase("call options").build();
        }
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a call's timeout must be positive, got " + timeout)
                    .phase("call options").build();
        }
    }

    /** No overrides. */
    public static CallOptions defaults() {
        return DEFAULTS;
    }

    /** Calls with the algorithm {@code name}. */
    public static CallOptions algorithm(String name) {
        return new CallOptions(Objects.requireNonNull(name, "name"), null);
    }

    /** Calls with the deadline {@code timeout}. */
    public static CallOptions timeout(Duration timeout) {
        return new CallOptions(null, Objects.requireNonNull(timeout, "timeout"));
    }

    /** These options with the algorithm {@code name}. */
    public CallOptions withAlgorithm(String name) {
        return new CallOptions(Objects.requireNonNull(name, "name"), timeout);
    }

    /** These options with the deadline {@code limit}. */
    public CallOptions withTimeout(Duration limit) {
        return new CallOptions(algorithm, Objects.requireNonNull(limit, "limit"));
    }
}
