package org.jmscclpp.bootstrap;

import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;

/**
 * Immutable settings of a {@link TcpBootstrap}. {@link #fromEnvironment()} reads the variables the
 * README lists; {@link #builder()} starts from those and lets code override each one.
 *
 * <table>
 *   <caption>Environment</caption>
 *   <tr><th>variable</th><th>meaning</th><th>default</th></tr>
 *   <tr><td>{@code MSCCLPP_BOOTSTRAP_TIMEOUT}</td><td>initialize deadline, seconds (fractions allowed; at most
 *       {@link #MAX_TIMEOUT})</td><td>30</td></tr>
 *   <tr><td>{@code MSCCLPP_SOCKET_IFNAME}</td><td>interface list, NCCL syntax: prefixes, {@code ^} excludes, {@code =} exact</td><td>auto</td></tr>
 *   <tr><td>{@code MSCCLPP_SOCKET_FAMILY}</td><td>{@code AF_INET} or {@code AF_INET6}</td><td>any</td></tr>
 *   <tr><td>{@code MSCCLPP_BOOTSTRAP_SECRET}</td><td>the job secret of explicit-address jobs: the same string on
 *       every rank, at least {@value #MIN_SECRET_CHARS} characters (for example 32 random bytes in hex, as
 *       {@code jmscclpp run} makes); hashed with SHA-256 together with the root address</td><td>none: required</td></tr>
 *   <tr><td>{@code MSCCLPP_BOOTSTRAP_INSECURE}</td><td>{@code 1}: an explicit-address job without
 *       {@code MSCCLPP_BOOTSTRAP_SECRET} derives its secret from the address alone (anyone who knows the
 *       address can join or disrupt the job), with a warning</td><td>0</td></tr>
 *   <tr><td>{@code MSCCLPP_BOOTSTRAP_MAX_FRAME}</td><td>largest frame on the wire, bytes; larger messages are chunked</td><td>4194304</td></tr>
 * </table>
 *
 * <p>Two settings come from code only, for a service that runs its own threads: the Netty
 * {@linkplain Builder#eventLoopGroup event-loop group} the bootstrap's connections (and the {@code ETHERNET}
 * listener of a communicator on it) run on, and the Reactor {@linkplain Builder#scheduler scheduler} its
 * timers and blocking launcher rendezvous run on. The library never shuts a supplied group or scheduler down.
 */
public final class BootstrapOptions {

    /** Variable holding the job secret of explicit-address jobs. */
    public static final String SECRET_ENV = "MSCCLPP_BOOTSTRAP_SECRET";
    /** Variable that lets explicit-address jobs run without a secret (derived from the address). */
    public static final String INSECURE_ENV = "MSCCLPP_BOOTSTRAP_INSECURE";
    /** Shortest accepted {@link #SECRET_ENV}. */
    public static final int MIN_SECRET_CHARS = 16;

    /** Smallest allowed frame limit; the control messages of the protocol fit in it. */
    public static final int MIN_FRAME_BYTES = 4096;
    /**
     * The longest {@code initTimeout} and {@code operationTimeout}: a longer one given to the builder (a caller's
     * "forever") is cut to it, one in {@code MSCCLPP_BOOTSTRAP_TIMEOUT} refused.
     */
    public static final Duration MAX_TIMEOUT = Waiting.MAX_WAIT;

    private final Duration initTimeout;
    private final Duration operationTimeout;
    private final int maxFrameBytes;
    private final @Nullable String socketIfname;
    private final @Nullable String socketFamily;
    private final @Nullable String secret;
    private final boolean insecure;
    private final @Nullable EventLoopGroup eventLoopGroup;
    private final @Nullable Scheduler scheduler;

    private BootstrapOptions(Builder b) {
        this.initTimeout = b.initTimeout;
        this.operationTimeout = b.operationTimeout;
        this.maxFrameBytes = b.maxFrameBytes;
        this.socketIfname = b.socketIfname;
        this.socketFamily = b.socketFamily;
        this.secret = b.secret;
        this.insecure = b.insecure;
        this.eventLoopGroup = b.eventLoopGroup;
        this.scheduler = b.scheduler;
    }

    /** Options from the process environment. */
    public static BootstrapOptions fromEnvironment() {
        return builder().build();
    }

    /** A builder preset from the process environment. */
    public static Builder builder() {
        return builderFrom(System.getenv());
    }

    /** A builder preset from the given variables (tests use this instead of the real environment). */
    public static Builder builderFrom(Map<String, String> env) {
        Builder b = new Builder();
        String t = env.get("MSCCLPP_BOOTSTRAP_TIMEOUT");
        if (t != null && !t.isBlank()) {
            b.initTimeout(parseSeconds("MSCCLPP_BOOTSTRAP_TIMEOUT", t));
        }
        String f = env.get("MSCCLPP_BOOTSTRAP_MAX_FRAME");
        if (f != null && !f.isBlank()) {
            int bytes;
            try {
                bytes = Integer.parseInt(f.strip());
            } catch (NumberFormatException e) {
                throw invalid("MSCCLPP_BOOTSTRAP_MAX_FRAME is not an integer: '" + f + "'");
            }
            if (bytes < MIN_FRAME_BYTES) {
                throw invalid("MSCCLPP_BOOTSTRAP_MAX_FRAME must be at least " + MIN_FRAME_BYTES + ", got " + bytes);
            }
            b.maxFrameBytes(bytes);
        }
        b.socketIfname = blankToNull(env.get("MSCCLPP_SOCKET_IFNAME"));
        String fam = blankToNull(env.get("MSCCLPP_SOCKET_FAMILY"));
        if (fam != null) {
            b.socketFamily(fam);
        }
        String secret = blankToNull(env.get(SECRET_ENV));
        if (secret != null) {
            b.secret(secret);
        }
        String insecure = blankToNull(env.get(INSECURE_ENV));
        if (insecure != null) {
            b.insecure = switch (insecure) {
                case "1", "true" -> true;
                case "0", "false" -> false;
                default -> throw invalid(INSECURE_ENV + " must be 1 or 0, got '" + insecure + "'");
            };
        }
        return b;
    }

    static Duration parseSeconds(String what, String value) {
        try {
            double s = Double.parseDouble(value.strip());
            if (!(s > 0) || Double.isInfinite(s)) {
                throw invalid(what + " must be a positive number of seconds, got '" + value + "'");
            }
            if (s > MAX_TIMEOUT.toSeconds()) {
                throw invalid(what + " must be at most " + MAX_TIMEOUT.toSeconds() + " seconds ("
                        + MAX_TIMEOUT.toDays() + " days), got '" + value + "'");
            }
            long nanos = (long) (s * 1e9);
            if (nanos < 1) {
                throw invalid(what + " must be a positive number of seconds, got '" + value
                        + "', less than a nanosecond");
            }
            return Duration.ofNanos(nanos);
        } catch (NumberFormatException e) {
            throw invalid(what + " is not a number of seconds: '" + value + "'");
        }
    }

    private static @Nullable String blankToNull(@Nullable String s) {
        return s == null || s.isBlank() ? null : s.strip();
    }

    private static JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("options").build();
    }

    /** Deadline of {@code initialize}. */
    public Duration initTimeout() {
        return initTimeout;
    }

    /** Deadline of the operations called without a timeout. */
    public Duration operationTimeout() {
        return operationTimeout;
    }

    /** Largest frame accepted or sent; larger messages travel as several frames. */
    public int maxFrameBytes() {
        return maxFrameBytes;
    }

    /** The {@code MSCCLPP_SOCKET_IFNAME} value, or null for automatic selection. */
    public @Nullable String socketIfname() {
        return socketIfname;
    }

    /** {@code AF_INET}, {@code AF_INET6}, or null for either. */
    public @Nullable String socketFamily() {
        return socketFamily;
    }

    /** The job secret of explicit-address jobs ({@value #SECRET_ENV}), or null. */
    public @Nullable String secret() {
        return secret;
    }

    /** A builder that starts from these options. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.initTimeout = initTimeout;
        b.operationTimeout = operationTimeout;
        b.maxFrameBytes = maxFrameBytes;
        b.socketIfname = socketIfname;
        b.socketFamily = socketFamily;
        b.secret = secret;
        b.insecure = insecure;
        b.eventLoopGroup = eventLoopGroup;
        b.scheduler = scheduler;
        return b;
    }

    /**
     * The event-loop group the service supplied, or null for this JVM's shared one ({@link EventLoops}).
     */
    public @Nullable EventLoopGroup eventLoopGroup() {
        return eventLoopGroup;
    }

    /**
     * The scheduler the service supplied, or null: then timers run on the event loops and blocking
     * rendezvous work on virtual threads.
     */
    public @Nullable Scheduler scheduler() {
        return scheduler;
    }

    /**
     * Whether an explicit-address job without {@link #secret()} may derive its secret from the
     * address alone ({@value #INSECURE_ENV}); otherwise it fails with INVALID_USAGE.
     */
    public boolean insecure() {
        return insecure;
    }

    /** Builder of {@link BootstrapOptions}. */
    public static final class Builder {
        private Duration initTimeout = Bootstrap.DEFAULT_TIMEOUT;
        private Duration operationTimeout = Bootstrap.DEFAULT_TIMEOUT;
        private int maxFrameBytes = 4 << 20;
        private @Nullable String socketIfname;
        private @Nullable String socketFamily;
        private @Nullable String secret;
        private boolean insecure;
        private @Nullable EventLoopGroup eventLoopGroup;
        private @Nullable Scheduler scheduler;

        private Builder() {
        }

        /**
         * The Netty group the bootstrap's channels (root, listener, connections) run on, and the
         * {@code ETHERNET} listener of a communicator created on this bootstrap; null for this JVM's
         * shared group. The service owns it: closing the bootstrap does not shut it down, and it must
         * outlive the bootstrap. Its threads run Netty handlers: never block on them.
         */
        public Builder eventLoopGroup(@Nullable EventLoopGroup group) {
            this.eventLoopGroup = group;
            return this;
        }

        /**
         * The Reactor scheduler the bootstrap's timers (deadlines, retries, drain windows) and the
         * launcher rendezvous ({@link RankEnvironment}) run on; null for the default (timers on the
         * event loops, rendezvous on a thread of its own). The service owns it: it is never disposed
         * here. It must accept delayed tasks (any of {@code Schedulers}' does), and where a launcher's
         * store rendezvous runs on it, which blocks on sockets, its threads must be allowed to block
         * ({@code boundedElastic}, not {@code parallel}).
         */
        public Builder scheduler(@Nullable Scheduler scheduler) {
            this.scheduler = scheduler;
            return this;
        }

        public Builder initTimeout(Duration timeout) {
            this.initTimeout = positive(timeout, "initTimeout");
            return this;
        }

        public Builder operationTimeout(Duration timeout) {
            this.operationTimeout = positive(timeout, "operationTimeout");
            return this;
        }

        public Builder maxFrameBytes(int bytes) {
            if (bytes < MIN_FRAME_BYTES) {
                throw invalid("maxFrameBytes must be at least " + MIN_FRAME_BYTES + ", got " + bytes);
            }
            this.maxFrameBytes = bytes;
            return this;
        }

        public Builder socketIfname(@Nullable String ifname) {
            this.socketIfname = blankToNull(ifname);
            return this;
        }

        public Builder socketFamily(@Nullable String family) {
            String f = blankToNull(family);
            if (f != null && !f.equals("AF_INET") && !f.equals("AF_INET6")) {
                throw invalid("MSCCLPP_SOCKET_FAMILY must be AF_INET or AF_INET6, got '" + f + "'");
            }
            this.socketFamily = f;
            return this;
        }

        /**
         * The job secret of explicit-address jobs: the same on every rank, at least
         * {@value #MIN_SECRET_CHARS} characters; null for none.
         */
        public Builder secret(@Nullable String secret) {
            String s = blankToNull(secret);
            if (s != null && s.length() < MIN_SECRET_CHARS) {
                throw invalid(SECRET_ENV + " must be at least " + MIN_SECRET_CHARS + " characters, got "
                        + s.length());
            }
            this.secret = s;
            return this;
        }

        /**
         * Lets an explicit-address job without a secret derive it from the address alone, with a
         * warning: anyone who knows the address can then join or disrupt the job.
         */
        public Builder insecure(boolean insecure) {
            this.insecure = insecure;
            return this;
        }

        public BootstrapOptions build() {
            return new BootstrapOptions(this);
        }

        private static Duration positive(Duration d, String what) {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || d.isZero()) {
                throw invalid(what + " must be positive, got " + d);
            }
            // a caller's "forever" (ChronoUnit.FOREVER, Long.MAX_VALUE ms) must not overflow the deadlines made of it:
            // cut to MAX_TIMEOUT (the environment variable's parser refuses more, naming the variable)
            return Waiting.bounded(d);
        }
    }
}
