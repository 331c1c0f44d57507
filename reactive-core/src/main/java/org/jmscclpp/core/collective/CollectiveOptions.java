package org.jmscclpp.core.collective;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import org.jmscclpp.core.ByteCount;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * How a {@link CollectiveComm} is set up: built once per communicator with
 * {@link CollectiveComm#create(Communicator, CollectiveOptions)}. Every rank must pass equal
 * options (the setup compares the ones that must agree and fails with INVALID_USAGE otherwise).
 *
 * @param timeout      the deadline of setup, of {@link CollectiveComm#register} and of each call
 *                     without a {@link CallOptions#timeout()}; null: the bootstrap's default
 * @param scratchBytes bytes of the communicator's own shared memory that unregistered buffers are
 *                     staged through (larger calls are cut into pieces of it); 0: the engine's
 *                     default (the host engine: 16 MiB; CUDA: see its engine)
 * @param tag          the communicator tag of the collective communicator's connections and
 *                     exchanges, in [0, {@link Communicator#MAX_TAG}]; two collective communicators
 *                     over one communicator need different tags
 * @param algorithms   algorithm overrides by kind (as {@code NCCL_ALGO} sets them), applied to
 *                     every call of that kind unless the call names its own
 * @param tuning       the table that chooses algorithms by size and ranks; null: the engine's
 *                     committed table
 */
public record CollectiveOptions(@Nullable Duration timeout, long scratchBytes, int tag,
                                Map<CollectiveKind, String> algorithms, @Nullable TuningTable tuning) {

    /** The tag {@link #defaults()} uses ("COL"). */
    public static final int DEFAULT_TAG = 0x434F4C;

    /** The variable {@link #fromEnvironment()} reads algorithm overrides from; syntax as {@link #parseAlgorithms}. */
    public static final String ALGORITHM_ENV = "JMSCCLPP_ALGO";
    /**
     * The variable {@link #fromEnvironment()} reads {@link #scratchBytes()} from, as {@code NCCL_BUFFSIZE}
     * sets NCCL's buffers: a byte count, with an optional binary suffix ({@code 268435456},
     * {@code 256M}, {@code 1G}); the same on every rank. Syntax as {@link #parseBytes}.
     */
    public static final String SCRATCH_ENV = "JMSCCLPP_SCRATCH_BYTES";

    public CollectiveOptions {
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw invalid("the timeout must be positive, got " + timeout);
        }
        if (scratchBytes < 0) {
            throw invalid("scratchBytes must be 0 (the engine's default) or positive, got " + scratchBytes);
        }
        if (tag < 0 || tag > Communicator.MAX_TAG) {
            throw invalid("the tag must be in [0, " + Communicator.MAX_TAG + "], got " + tag);
        }
        algorithms = Map.copyOf(Objects.requireNonNull(algorithms, "algorithms"));
    }

    /** The defaults: the bootstrap's deadline, the engine's scratch, tag {@link #DEFAULT_TAG}, no overrides, the engine's table. */
    public static CollectiveOptions defaults() {
        return new CollectiveOptions(null, 0, DEFAULT_TAG, Map.of(), null);
    }

    /**
     * {@link #defaults()} with the overrides of {@value #ALGORITHM_ENV} and the scratch size of
     * {@value #SCRATCH_ENV}, where set.
     *
     * @throws JmscclppException INVALID_USAGE naming the variable when a value does not parse
     */
    public static CollectiveOptions fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    /** {@link #fromEnvironment()} reading {@code env}. */
    public static CollectiveOptions fromEnvironment(Map<String, String> env) {
        CollectiveOptions options = defaults();
        String algo = env.get(ALGORITHM_ENV);
        if (algo != null && !algo.isBlank()) {
            options = options.withAlgorithms(parseAlgorithms(algo));
        }
        String scratch = env.get(SCRATCH_ENV);
        if (scratch != null && !scratch.isBlank()) {
            options = options.withScratchBytes(parseBytes(SCRATCH_ENV, scratch));
        }
        return options;
    }

    /**
     * A byte count in {@link ByteCount}'s syntax ({@code 268435456}, {@code 256M}, {@code 1G}), at least 1.
     *
     * @throws JmscclppException INVALID_USAGE naming {@code variable} and the value otherwise
     */
    public static long parseBytes(String variable, String value) {
        long n = ByteCount.parse(value);
        if (n < 1) {
            throw invalid(variable + " must be a byte count such as 268435456, 256M or 1G, got '" + value + "'");
        }
        return n;
    }

    /**
     * Parses algorithm overrides in {@code NCCL_ALGO}'s form: {@code kind:name} pairs separated by
     * {@code ;} ({@code allreduce:rsag;allgather:memory}), or a bare {@code name} for every kind
     * (an algorithm a kind lacks then fails that kind's calls, naming the kind's algorithms).
     *
     * @throws JmscclppException INVALID_USAGE for an unknown kind or an empty name
     */
    public static Map<CollectiveKind, String> parseAlgorithms(String spec) {
        Map<CollectiveKind, String> out = new EnumMap<>(CollectiveKind.class);
        for (String part : spec.split(";")) {
            String p = part.strip();
            if (p.isEmpty()) {
                continue;
            }
            int colon = p.indexOf(':');
            if (colon < 0) {
                for (CollectiveKind k : CollectiveKind.values()) {
                    out.put(k, p);
                }
                continue;
            }
            String name = p.substring(colon + 1).strip();
            if (name.isEmpty()) {
                throw invalid("'" + p + "' in " + ALGORITHM_ENV + " names no algorithm");
            }
            CollectiveKind kind = CollectiveKind.parse(p.substring(0, colon));
            out.put(kind, name);
            if (kind == CollectiveKind.SEND || kind == CollectiveKind.RECV) {
                out.put(kind == CollectiveKind.SEND ? CollectiveKind.RECV : CollectiveKind.SEND, name);
            }
        }
        return out;
    }

    public CollectiveOptions withTimeout(Duration limit) {
        return new CollectiveOptions(limit, scratchBytes, tag, algorithms, tuning);
    }

    public CollectiveOptions withScratchBytes(long bytes) {
        return new CollectiveOptions(timeout, bytes, tag, algorithms, tuning);
    }

    public CollectiveOptions withTag(int newTag) {
        return new CollectiveOptions(timeout, scratchBytes, newTag, algorithms, tuning);
    }

    public CollectiveOptions withAlgorithms(Map<CollectiveKind, String> overrides) {
        return new CollectiveOptions(timeout, scratchBytes, tag, overrides, tuning);
    }

    /** These options with {@code kind}'s calls running {@code algorithm}. */
    public CollectiveOptions withAlgorithm(CollectiveKind kind, String algorithm) {
        Map<CollectiveKind, String> m = new EnumMap<>(CollectiveKind.class);
        m.putAll(algorithms);
        m.put(kind, algorithm);
        return withAlgorithms(m);
    }

    public CollectiveOptions withTuning(TuningTable table) {
        return new CollectiveOptions(timeout, scratchBytes, tag, algorithms, table);
    }

    private static JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("collective options").build();
    }
}
