package org.jmscclpp.testkit;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;
import org.jmscclpp.core.Bootstrap;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * MSCCL++'s bootstrap conformance checks ({@code bootstrapTestAll} of {@code test/mp_unit/bootstrap_tests.cc}:
 * AllGather, Barrier, SendRecv and the ranks-per-node check), for any {@link Bootstrap}: in-memory
 * ranks, {@code TcpBootstrap} ranks in one JVM, or the one rank of a separate process.
 *
 * <p>Every check is a lazy {@code Mono<Void>} to run on every rank of the job at the same time (the
 * ranks wait for each other); it uses the bootstrap's {@link Bootstrap#defaultTimeout() default
 * deadline} per operation, and fails with an {@link AssertionError} naming the rank and the values
 * it saw, or with the bootstrap's own error. Integers travel as 4-byte little-endian values, like
 * the C++ test's {@code int}s on x86-64.
 */
public final class BootstrapChecks {

    private BootstrapChecks() {
    }

    /**
     * Each rank contributes {@code rank + 1}; afterwards slot i must hold {@code i + 1} on every rank.
     */
    public static Mono<Void> allGather(Bootstrap b) {
        return Mono.defer(() -> {
            int rank = b.rank();
            int n = b.size();
            return b.allGather(intBytes(rank + 1)).flatMap(all -> {
                if (all.length != 4 * n) {
                    return fail("allGather on " + who(b) + ": expected " + 4 * n + " bytes, got " + all.length);
                }
                for (int i = 0; i < n; i++) {
                    int value = intAt(all, 4 * i);
                    if (value != i + 1) {
                        return fail("allGather on " + who(b) + ": slot " + i + " holds " + value + ", expected " + (i + 1));
                    }
                }
                return Mono.empty();
            });
        });
    }

    /** The barrier completes. */
    public static Mono<Void> barrier(Bootstrap b) {
        return Mono.defer(b::barrier);
    }

    /**
     * Sends three ints to every peer on tags 0, 1, 2 ({@code (rank+1)*3 + tag}), then receives
     * from every peer in the order tag 1, 2, 0 and checks each value is {@code (peer+1)*3 + tag}:
     * tags are independent streams, so reading them in another order than they were sent works.
     */
    public static Mono<Void> sendRecv(Bootstrap b) {
        return Mono.defer(() -> {
            int rank = b.rank();
            Flux<Integer> peers = Flux.range(0, b.size()).filter(p -> p != rank);
            Flux<Void> sends = peers.concatMap(peer -> Flux.just(0, 1, 2)
                    .concatMap(tag -> b.send(peer, tag, intBytes((rank + 1) * 3 + tag))));
            Flux<Void> recvs = peers.concatMap(peer -> Flux.just(1, 2, 0)
                    .concatMap(tag -> b.recv(peer, tag).flatMap(bytes -> {
                        int expected = (peer + 1) * 3 + tag;
                        if (bytes.length != 4) {
                            return fail("sendRecv on " + who(b) + ": message from peer " + peer + " on tag " + tag
                                    + " has " + bytes.length + " bytes, expected 4");
                        }
                        int value = intAt(bytes, 0);
                        if (value != expected) {
                            return fail("sendRecv on " + who(b) + ": peer " + peer + " sent " + value + " on tag "
                                    + tag + ", expected " + expected);
                        }
                        return Mono.<Void>empty();
                    })));
            return sends.thenMany(recvs).then();
        });
    }

    /** {@code 0 < nRanksPerNode() <= size()}. */
    public static Mono<Void> nRanksPerNode(Bootstrap b) {
        return Mono.defer(() -> {
            int perNode = b.nRanksPerNode();
            if (perNode <= 0 || perNode > b.size()) {
                return fail("nRanksPerNode on " + who(b) + ": " + perNode + " is outside [1, " + b.size() + "]");
            }
            return Mono.empty();
        });
    }

    /**
     * The collectives and a send/recv around the ring with the timeout a caller writes for "no
     * deadline" ({@link ChronoUnit#FOREVER}'s duration): they complete as with any other timeout, and
     * never fail with an overflowing deadline (an ArithmeticException, or a deadline already past).
     */
    public static Mono<Void> foreverTimeouts(Bootstrap b) {
        return Mono.defer(() -> {
            Duration forever = ChronoUnit.FOREVER.getDuration();
            int n = b.size();
            int from = (b.rank() + n - 1) % n;
            return b.allGather(intBytes(b.rank()), forever)
                    .then(b.barrier(forever))
                    .then(b.broadcast(0, intBytes(42), forever))
                    .then(b.send((b.rank() + 1) % n, 7, intBytes(b.rank()), forever))
                    .then(b.recv(from, 7, forever))
                    .flatMap(bytes -> bytes.length == 4 && intAt(bytes, 0) == from ? Mono.<Void>empty()
                            : fail("foreverTimeouts on " + who(b) + ": rank " + from + " sent " + bytes.length
                            + " bytes on tag 7, not its rank"));
        });
    }

    /**
     * {@link #allGather}, {@link #barrier}, {@link #sendRecv}, {@link #nRanksPerNode} and
     * {@link #foreverTimeouts}, one after the other.
     */
    public static Mono<Void> all(Bootstrap b) {
        return allGather(b).then(barrier(b)).then(sendRecv(b)).then(nRanksPerNode(b)).then(foreverTimeouts(b));
    }

    /**
     * Gathers {@code bytesPerRank} bytes from every rank, filled with {@link #patternByte(int, int)}
     * of the contributing rank, and checks every byte of the result: for large payloads that an
     * implementation moves in chunks.
     */
    public static Mono<Void> allGatherOfSize(Bootstrap b, int bytesPerRank) {
        if (bytesPerRank < 0) {
            throw new IllegalArgumentException("bytesPerRank must be >= 0, got " + bytesPerRank);
        }
        return Mono.defer(() -> {
            int rank = b.rank();
            int n = b.size();
            byte[] local = new byte[bytesPerRank];
            for (int j = 0; j < bytesPerRank; j++) {
                local[j] = patternByte(rank, j);
            }
            return b.allGather(local).flatMap(all -> {
                long expectedLength = (long) n * bytesPerRank;
                if (all.length != expectedLength) {
                    return fail("allGather of " + bytesPerRank + " bytes on " + who(b) + ": expected "
                            + expectedLength + " bytes, got " + all.length);
                }
                int firstBad = -1;
                long bad = 0;
                for (int i = 0; i < all.length; i++) {
                    if (all[i] != patternByte(i / bytesPerRank, i % bytesPerRank)) {
                        if (firstBad < 0) {
                            firstBad = i;
                        }
                        bad++;
                    }
                }
                if (firstBad >= 0) {
                    int slot = firstBad / bytesPerRank;
                    int offset = firstBad % bytesPerRank;
                    return fail(String.format("allGather of %d bytes on %s: slot %d offset %d holds 0x%02x,"
                                    + " expected 0x%02x (%d bytes differ)", bytesPerRank, who(b), slot, offset,
                            all[firstBad], patternByte(slot, offset), bad));
                }
                return Mono.empty();
            });
        });
    }

    /**
     * The byte {@code rank} puts at {@code offset} in {@link #allGatherOfSize}: a hash of both, so a
     * chunk delivered to the wrong slot or offset shows up.
     */
    public static byte patternByte(int rank, int offset) {
        int h = rank * 0x9E3779B9 + offset * 0x85EBCA6B;
        h ^= h >>> 15;
        h *= 0x2C1B3C6D;
        h ^= h >>> 13;
        return (byte) h;
    }

    /**
     * Runs {@link #all} on every given rank at the same time (each subscribed on its own
     * {@link Schedulers#boundedElastic()} worker, since the ranks wait for each other) and blocks
     * until all have passed, for at most {@code deadline}.
     *
     * <p>{@code ranks} are distinct ranks of one job: all of them, or only those of this process
     * when the other ranks run elsewhere.
     *
     * @throws AssertionError the first failure, as "rank r of n failed: ..." with the original as its
     *                        cause, or a deadline error listing the ranks that had not finished
     */
    public static void runAll(List<? extends Bootstrap> ranks, Duration deadline) {
        if (ranks.isEmpty()) {
            throw new IllegalArgumentException("runAll needs at least one rank");
        }
        Set<Integer> seen = new HashSet<>();
        int size = ranks.getFirst().size();
        for (Bootstrap b : ranks) {
            if (b.size() != size || !seen.add(b.rank())) {
                throw new IllegalArgumentException("runAll needs distinct ranks of one job, got " + ranks);
            }
        }
        Set<Integer> running = new ConcurrentSkipListSet<>(seen);
        List<Mono<Void>> perRank = new ArrayList<>();
        for (Bootstrap b : ranks) {
            perRank.add(all(b)
                    .subscribeOn(Schedulers.boundedElastic())
                    .onErrorMap(e -> new AssertionError(who(b) + " failed: "
                            + (e instanceof AssertionError ? e.getMessage() : e.toString()), e))
                    .doOnSuccess(v -> running.remove(b.rank())));
        }
        Mono<Void> everyRank = Mono.when(perRank).timeout(deadline, Mono.defer(() -> Mono.error(new AssertionError(
                "bootstrap checks did not finish within " + deadline.toMillis() + " ms; still running: ranks "
                        + new TreeSet<>(running)))));
        try {
            // the timeout above ends the wait; the block deadline is only a backstop
            everyRank.block(deadline.plusSeconds(10));
        } catch (RuntimeException e) {
            if (Exceptions.unwrap(e) instanceof AssertionError failure) {
                throw failure;
            }
            throw e;
        }
    }

    private static String who(Bootstrap b) {
        return "rank " + b.rank() + " of " + b.size();
    }

    private static <T> Mono<T> fail(String message) {
        return Mono.error(new AssertionError(message));
    }

    private static byte[] intBytes(int value) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(value).array();
    }

    private static int intAt(byte[] bytes, int offset) {
        return ByteBuffer.wrap(bytes, offset, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
    }
}
