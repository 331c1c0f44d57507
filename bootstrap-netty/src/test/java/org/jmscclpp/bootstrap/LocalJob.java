package org.jmscclpp.bootstrap;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import org.jmscclpp.core.UniqueId;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The ranks of one {@link TcpBootstrap} job, all in this JVM: created, initialized together, and
 * closed together by {@link #close()}. Every wait is bounded by the deadline it is given.
 */
public final class LocalJob implements AutoCloseable {

    private final List<TcpBootstrap> ranks;

    private LocalJob(List<TcpBootstrap> ranks) {
        this.ranks = Collections.unmodifiableList(ranks);
    }

    /** N ranks; rank 0 creates the unique id, every rank initializes with it. */
    static LocalJob withId(int n, BootstrapOptions options, Duration deadline) {
        List<TcpBootstrap> ranks = create(n, options);
        try {
            UniqueId id = ranks.getFirst().createUniqueId();
            initializeAll(ranks, b -> b.initialize(id), deadline);
            return new LocalJob(ranks);
        } catch (RuntimeException | Error e) {
            ranks.forEach(TcpBootstrap::close);
            throw e;
        }
    }

    /** A fresh job secret for explicit-address jobs ({@link BootstrapOptions.Builder#secret}): 32 hex digits. */
    public static String newSecret() {
        byte[] b = new byte[16];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    /** N ranks initialized with {@code "ip:port"}; rank 0 hosts the root there. */
    static LocalJob withAddress(int n, String address, BootstrapOptions options, Duration deadline) {
        List<TcpBootstrap> ranks = create(n, options);
        try {
            initializeAll(ranks, b -> b.initialize(address), deadline);
            return new LocalJob(ranks);
        } catch (RuntimeException | Error e) {
            ranks.forEach(TcpBootstrap::close);
            throw e;
        }
    }

    private static List<TcpBootstrap> create(int n, BootstrapOptions options) {
        List<TcpBootstrap> ranks = new ArrayList<>(n);
        for (int r = 0; r < n; r++) {
            ranks.add(TcpBootstrap.create(r, n, options));
        }
        return ranks;
    }

    private static void initializeAll(List<TcpBootstrap> ranks, Function<TcpBootstrap, Mono<TcpBootstrap>> init,
                                      Duration deadline) {
        // every rank must be subscribed at once: they wait for each other
        List<Mono<TcpBootstrap>> all = new ArrayList<>(ranks.size());
        for (TcpBootstrap b : ranks) {
            all.add(init.apply(b));
        }
        Mono.when(all).block(deadline);
    }

    List<TcpBootstrap> ranks() {
        return ranks;
    }

    TcpBootstrap rank(int r) {
        return ranks.get(r);
    }

    int size() {
        return ranks.size();
    }

    /**
     * Runs {@code op} on every rank at the same time and returns what each emitted, in rank order.
     * A failure is rethrown as an {@link AssertionError} naming the rank.
     */
    <T> List<T> onAll(Function<TcpBootstrap, Mono<T>> op, Duration deadline) {
        List<Mono<T>> perRank = new ArrayList<>(ranks.size());
        for (TcpBootstrap b : ranks) {
            perRank.add(Mono.defer(() -> op.apply(b))
                    .switchIfEmpty(Mono.error(() -> new AssertionError("completed without a value")))
                    .onErrorMap(e -> new AssertionError("rank " + b.rank() + " of " + b.size() + " failed: " + e, e)));
        }
        List<T> out = Flux.mergeSequential(perRank, ranks.size(), 1).collectList().block(deadline);
        if (out == null || out.size() != ranks.size()) {
            throw new AssertionError("expected one result per rank, got " + out);
        }
        return out;
    }

    /** {@link #onAll} for operations that only complete. */
    void runOnAll(Function<TcpBootstrap, Mono<?>> op, Duration deadline) {
        onAll(b -> op.apply(b).then(Mono.just(Boolean.TRUE)), deadline);
    }

    /**
     * Runs {@code op} on every rank at the same time and returns each rank's error, or null where
     * it succeeded, in rank order.
     */
    List<@Nullable Throwable> outcomes(Function<TcpBootstrap, Mono<?>> op, Duration deadline) {
        List<Mono<Outcome>> perRank = new ArrayList<>(ranks.size());
        for (TcpBootstrap b : ranks) {
            perRank.add(Mono.defer(() -> op.apply(b))
                    .then(Mono.fromSupplier(() -> new Outcome(null)))
                    .onErrorResume(e -> Mono.just(new Outcome(e))));
        }
        List<Outcome> out = Flux.mergeSequential(perRank, ranks.size(), 1).collectList().block(deadline);
        List<@Nullable Throwable> errors = new ArrayList<>(ranks.size());
        for (Outcome o : out) {
            errors.add(o.error());
        }
        return errors;
    }

    private record Outcome(@Nullable Throwable error) {
    }

    @Override
    public void close() {
        for (TcpBootstrap b : ranks.reversed()) {
            b.close();
        }
    }

    /**
     * A port on 127.0.0.1 that is free now and lies below the kernel's ephemeral range, so that
     * the job's own outgoing connections and listeners (which take ephemeral ports) cannot take
     * it between cycles of a test that reuses it.
     */
    public static int freeFixedPort() {
        int low = 32768;
        try {
            String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).strip();
            low = Integer.parseInt(range.split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            // not Linux, or unreadable: 32768 is the usual start of the range
        }
        InetAddress loopback = InetAddress.getLoopbackAddress();
        if (low > 11000) {
            for (int attempt = 0; attempt < 50; attempt++) {
                int port = ThreadLocalRandom.current().nextInt(10000, low);
                try (ServerSocket s = new ServerSocket()) {
                    s.bind(new InetSocketAddress(loopback, port));
                    return port;
                } catch (IOException busy) {
                    // taken: try another
                }
            }
        }
        try (ServerSocket s = new ServerSocket(0, 1, loopback)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("no free port on " + loopback, e);
        }
    }
}
