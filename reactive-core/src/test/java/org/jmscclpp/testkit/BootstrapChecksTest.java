package org.jmscclpp.testkit;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jmscclpp.core.Bootstrap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Exceptions;
import reactor.core.publisher.Mono;

/** The checks must catch broken bootstraps, not only pass on good ones. */
class BootstrapChecksTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    private final List<InMemoryBootstrap> opened = new ArrayList<>();

    @AfterEach
    void closeEverything() {
        opened.forEach(InMemoryBootstrap::close);
    }

    private List<Bootstrap> wrapped(int n, Function<InMemoryBootstrap, Bootstrap> wrap) {
        List<InMemoryBootstrap> ranks = InMemoryBootstrap.group(n);
        opened.addAll(ranks);
        return ranks.stream().map(wrap).toList();
    }

    private static AssertionError runAllFails(List<Bootstrap> ranks) {
        return assertThrows(AssertionError.class, () -> BootstrapChecks.runAll(ranks, WAIT));
    }

    private static void assertMentions(Throwable t, String... parts) {
        for (String part : parts) {
            assertTrue(t.getMessage().contains(part), () -> "'" + part + "' not in: " + t.getMessage());
        }
    }

    @Test
    void passesThroughAnUnbrokenWrapper() {
        BootstrapChecks.runAll(wrapped(3, ForwardingBootstrap::new), WAIT);
    }

    @Test
    void catchesTagsThatAreNotIndependentStreams() {
        // a bootstrap that ignores tags: the receive of tag 1 gets the message sent on tag 0
        List<Bootstrap> ranks = wrapped(2, b -> new ForwardingBootstrap(b) {
            @Override
            public Mono<Void> send(int peer, int tag, byte[] data, Duration timeout) {
                return delegate.send(peer, 0, data, timeout);
            }

            @Override
            public Mono<byte[]> recv(int peer, int tag, Duration timeout) {
                return delegate.recv(peer, 0, timeout);
            }
        });
        AssertionError e = runAllFails(ranks);
        assertMentions(e, "of 2 failed: sendRecv on rank", "on tag 1, expected");
    }

    @Test
    void catchesAllGatherSlotsInTheWrongOrder() {
        List<Bootstrap> ranks = wrapped(3, b -> new ForwardingBootstrap(b) {
            @Override
            public Mono<byte[]> allGather(byte[] local, Duration timeout) {
                return delegate.allGather(local, timeout).map(all -> {
                    byte[] reversed = new byte[all.length];
                    int len = all.length / size();
                    for (int r = 0; r < size(); r++) {
                        System.arraycopy(all, r * len, reversed, (size() - 1 - r) * len, len);
                    }
                    return reversed;
                });
            }
        });
        AssertionError e = runAllFails(ranks);
        assertMentions(e, "allGather on rank", "slot 0 holds 3, expected 1");
    }

    @Test
    void catchesAnImpossibleRanksPerNode() {
        List<Bootstrap> ranks = wrapped(2, b -> new ForwardingBootstrap(b) {
            @Override
            public int nRanksPerNode() {
                return rank() == 1 ? 0 : delegate.nRanksPerNode();
            }
        });
        AssertionError e = runAllFails(ranks);
        assertMentions(e, "rank 1 of 2 failed: nRanksPerNode on rank 1 of 2: 0 is outside [1, 2]");
    }

    @Test
    void catchesOneCorruptedByteOfALargeAllGather() {
        int bytesPerRank = 100_000;
        List<Bootstrap> ranks = wrapped(4, b -> new ForwardingBootstrap(b) {
            @Override
            public Mono<byte[]> allGather(byte[] local, Duration timeout) {
                return delegate.allGather(local, timeout).doOnNext(all -> all[2 * bytesPerRank + 77] ^= 1);
            }
        });
        Throwable e = assertThrows(Throwable.class, () -> Mono.when(ranks.stream()
                .map(b -> BootstrapChecks.allGatherOfSize(b, bytesPerRank)).toList()).block(WAIT));
        AssertionError failure = assertInstanceOf(AssertionError.class, Exceptions.unwrap(e));
        assertMentions(failure, "slot 2 offset 77", "(1 bytes differ)");
    }

    @Test
    void reportsTheRanksThatDidNotFinishByTheDeadline() {
        // rank 3 of the job never runs the checks, so the others wait in the first allGather
        List<Bootstrap> threeOfFour = wrapped(4, ForwardingBootstrap::new).subList(0, 3);
        AssertionError e = assertThrows(AssertionError.class,
                () -> BootstrapChecks.runAll(threeOfFour, Duration.ofMillis(300)));
        assertMentions(e, "did not finish within 300 ms", "still running: ranks [0, 1, 2]");
    }

    @Test
    void rejectsRanksThatAreNotDistinctRanksOfOneJob() {
        List<Bootstrap> ranks = wrapped(2, ForwardingBootstrap::new);
        assertThrows(IllegalArgumentException.class,
                () -> BootstrapChecks.runAll(List.of(ranks.get(0), ranks.get(0)), WAIT));
        assertThrows(IllegalArgumentException.class, () -> BootstrapChecks.runAll(List.of(), WAIT));
        assertThrows(IllegalArgumentException.class, () -> BootstrapChecks.allGatherOfSize(ranks.get(0), -1));
    }
}
