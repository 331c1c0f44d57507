package org.jmscclpp.core;

import java.util.Objects;
import java.util.StringJoiner;
import org.jspecify.annotations.Nullable;

/**
 * The one exception type jmscclpp reports: an {@link ErrorCode} plus who, what and where.
 *
 * <p>The message always starts with the code and carries the rank that saw the error, the peer it
 * concerns, the tag and the phase, for example
 * {@code "TIMEOUT: rank 2, peer 3, tag 7, phase recv: no message within 1000 ms"}.
 * Fields that do not apply are {@link #NONE}.
 */
public final class JmscclppException extends RuntimeException {

    /** Value of {@link #rank()}, {@link #peer()} and {@link #tag()} where the field does not apply. */
    public static final int NONE = Integer.MIN_VALUE;

    private final ErrorCode code;
    private final int rank;
    private final int peer;
    private final int tag;
    private final String phase;
    private final String detail;

    private JmscclppException(Builder b) {
        super(format(b), b.cause);
        this.code = b.code;
        this.rank = b.rank;
        this.peer = b.peer;
        this.tag = b.tag;
        this.phase = b.phase;
        this.detail = b.detail;
    }

    /** Starts an exception with a code and a human explanation of what happened. */
    public static Builder builder(ErrorCode code, String detail) {
        return new Builder(code, detail);
    }

    public ErrorCode code() {
        return code;
    }

    /** The rank that observed the error, or {@link #NONE}. */
    public int rank() {
        return rank;
    }

    /** The peer rank the error concerns, or {@link #NONE}. */
    public int peer() {
        return peer;
    }

    /** The message tag the error concerns, or {@link #NONE}. */
    public int tag() {
        return tag;
    }

    /** The phase the error happened in (for example {@code "root check-in"}, {@code "allGather"}), or "". */
    public String phase() {
        return phase;
    }

    /** The explanation without the code and location prefix. */
    public String detail() {
        return detail;
    }

    /** Returns a copy of this error seen from another rank (used when a peer's error is relayed). */
    public JmscclppException withRank(int newRank) {
        return builder(code, detail).rank(newRank).peer(peer).tag(tag).phase(phase).cause(getCause()).build();
    }

    private static String format(Builder b) {
        StringJoiner where = new StringJoiner(", ");
        if (b.rank != NONE) {
            where.add("rank " + b.rank);
        }
        if (b.peer != NONE) {
            where.add("peer " + b.peer);
        }
        if (b.tag != NONE) {
            where.add("tag " + b.tag);
        }
        if (!b.phase.isEmpty()) {
            where.add("phase " + b.phase);
        }
        StringBuilder sb = new StringBuilder(b.code.name()).append(": ");
        if (where.length() > 0) {
            sb.append(where).append(": ");
        }
        return sb.append(b.detail).toString();
    }

    /** Builder for {@link JmscclppException}. */
    public static final class Builder {
        private final ErrorCode code;
        private final String detail;
        private int rank = NONE;
        private int peer = NONE;
        private int tag = NONE;
        private String phase = "";
        private @Nullable Throwable cause;

        private Builder(ErrorCode code, String detail) {
            this.code = Objects.requireNonNull(code, "code");
            this.detail = Objects.requireNonNull(detail, "detail");
        }

        public Builder rank(int rank) {
            this.rank = rank;
            return this;
        }

        public Builder peer(int peer) {
            this.peer = peer;
            return this;
        }

        public Builder tag(int tag) {
            this.tag = tag;
            return this;
        }

        public Builder phase(String phase) {
            this.phase = Objects.requireNonNull(phase, "phase");
            return this;
        }

        public Builder cause(@Nullable Throwable cause) {
            this.cause = cause;
            return this;
        }

        public JmscclppException build() {
            return new JmscclppException(this);
        }
    }
}
