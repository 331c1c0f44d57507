package org.jmscclpp.testkit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

class InMemoryBootstrapTest {

    private static final Duration WAIT = Duration.ofSeconds(10);

    private final List<InMemoryBootstrap> opened = new ArrayList<>();

    @AfterEach
    void closeEverything() {
        opened.forEach(InMemoryBootstrap::close);
    }

    private List<InMemoryBootstrap> group(int n) {
        return group(n, n);
    }

    private List<InMemoryBootstrap> group(int n, int perNode) {
        List<InMemoryBootstrap> ranks = InMemoryBootstrap.group(n, perNode);
        opened.addAll(ranks);
        return ranks;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    private static Consumer<Throwable> jmscclppError(ErrorCode code, Consumer<JmscclppException> more) {
        return t -> {
            JmscclppException e = assertInstanceOf(JmscclppException.class, t);
            assertEquals(code, e.code(), e.getMessage());
            more.accept(e);
        };
    }

    /** Runs {@code op} on every rank at once, each on its own worker, and waits for all. */
    private static void onEveryRank(List<InMemoryBootstrap> ranks, Function<InMemoryBootstrap, Mono<?>> op) {
        Mono.when(ranks.stream().map(b -> op.apply(b).subscribeOn(Schedulers.boundedElastic())).toList())
                .block(WAIT);
    }

    // ---- conformance -------------------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 4, 8})
    void passesTheBootstrapChecks(int n) {
        BootstrapChecks.runAll(group(n), WAIT);
    }

    @Test
    void ranksPerNodeGroupsConsecutiveRanksIntoHosts() {
        List<InMemoryBootstrap> ranks = group(8, 3);
        assertEquals(List.of(3, 3, 3, 3, 3, 3, 2, 2), ranks.stream().map(Bootstrap::nRanksPerNode).toList());
        assertEquals(8, group(8).getFirst().nRanksPerNode());
        BootstrapChecks.runAll(ranks, WAIT);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 1000003, 1 << 20})
    void allGathersLargePayloadsIntact(int bytesPerRank) {
        onEveryRank(group(4), b -> BootstrapChecks.allGatherOfSize(b, bytesPerRank));
    }

    @Test
    void rejectsBadGroupShapes() {
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> InMemoryBootstrap.group(0)).code());
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> InMemoryBootstrap.group(4, 0)).code());
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> InMemoryBootstrap.group(4, 5)).code());
    }

    // ---- point to point ---------------------------------------------------------------------

    @Test
    void recvOnAnUnmatchedTagTimesOutNamingPeerAndTag() {
        List<InMemoryBootstrap> ranks = group(2);
        ranks.get(0).send(1, 3, bytes("on tag 3")).block(WAIT);
        StepVerifier.withVirtualTime(() -> ranks.get(1).recv(0, 7, Duration.ofSeconds(2)))
                .expectSubscription()
                .expectNoEvent(Duration.ofMillis(1999))
                .thenAwait(Duration.ofMillis(1))
                .expectErrorSatisfies(jmscclppError(ErrorCode.TIMEOUT, e -> {
                    assertEquals(1, e.rank());
                    assertEquals(0, e.peer());
                    assertEquals(7, e.tag());
                    assertEquals("recv", e.phase());
                    assertEquals("TIMEOUT: rank 1, peer 0, tag 7, phase recv: no message within 2000 ms",
                            e.getMessage());
                }))
                .verify(WAIT);
        // the message on tag 3 was not consumed by the failed receive
        StepVerifier.create(ranks.get(1).recv(0, 3, WAIT).map(InMemoryBootstrapTest::text))
                .expectNext("on tag 3").expectComplete().verify(WAIT);
    }

    @Test
    void nothingIsSentBeforeSubscriptionAndEachSubscriptionSendsAgain() {
        List<InMemoryBootstrap> ranks = group(2);
        Mono<Void> send = ranks.get(0).send(1, 4, bytes("lazy"));
        StepVerifier.withVirtualTime(() -> ranks.get(1).recv(0, 4, Duration.ofSeconds(1)))
                .expectSubscription()
                .thenAwait(Duration.ofSeconds(1))
                .expectErrorSatisfies(jmscclppError(ErrorCode.TIMEOUT, e -> assertEquals(4, e.tag())))
                .verify(WAIT);

        send.block(WAIT);
        send.block(WAIT);
        StepVerifier.create(ranks.get(1).recv(0, 4, WAIT).concatWith(ranks.get(1).recv(0, 4, WAIT))
                        .map(InMemoryBootstrapTest::text))
                .expectNext("lazy", "lazy")
                .expectComplete().verify(WAIT);
        StepVerifier.withVirtualTime(() -> ranks.get(1).recv(0, 4, Duration.ofSeconds(1)))
                .expectSubscription()
                .thenAwait(Duration.ofSeconds(1))
                .expectErrorSatisfies(jmscclppError(ErrorCode.TIMEOUT, e -> { }))
                .verify(WAIT);
    }

    @Test
    void messagesArriveInOrderPerPeerAndTagAndTagsAreIndependent() {
        List<InMemoryBootstrap> ranks = group(3);
        InMemoryBootstrap r0 = ranks.get(0);
        InMemoryBootstrap r2 = ranks.get(2);
        Flux.concat(r0.send(1, 5, bytes("a")), r0.send(1, 5, bytes("b")), r0.send(1, 6, bytes("x")),
                r0.send(1, 5, bytes("c")), r2.send(1, 5, bytes("from 2"))).blockLast(WAIT);

        InMemoryBootstrap r1 = ranks.get(1);
        StepVerifier.create(Flux.concat(r1.recv(2, 5), r1.recv(0, 6), r1.recv(0, 5), r1.recv(0, 5), r1.recv(0, 5))
                        .map(InMemoryBootstrapTest::text))
                .expectNext("from 2", "x", "a", "b", "c")
                .expectComplete().verify(WAIT);
    }

    @Test
    void pendingReceivesAreServedInSubscriptionOrder() {
        List<InMemoryBootstrap> ranks = group(2);
        StepVerifier first = StepVerifier.create(ranks.get(1).recv(0, 0).map(InMemoryBootstrapTest::text))
                .expectNext("one").expectComplete().verifyLater();
        StepVerifier second = StepVerifier.create(ranks.get(1).recv(0, 0).map(InMemoryBootstrapTest::text))
                .expectNext("two").expectComplete().verifyLater();
        ranks.get(0).send(1, 0, bytes("one")).then(ranks.get(0).send(1, 0, bytes("two"))).block(WAIT);
        first.verify(WAIT);
        second.verify(WAIT);
    }

    @Test
    void sendToSelfIsReceivedBySelf() {
        InMemoryBootstrap only = group(1).getFirst();
        StepVerifier.create(only.send(0, 9, bytes("me")).then(only.recv(0, 9)).map(InMemoryBootstrapTest::text))
                .expectNext("me").expectComplete().verify(WAIT);
    }

    @Test
    void sendCopiesTheCallersBytesAndEveryReceiverGetsItsOwn() {
        List<InMemoryBootstrap> ranks = group(2);
        byte[] data = bytes("original");
        ranks.get(0).send(1, 0, data).block(WAIT);
        data[0] = 'X';
        assertEquals("original", text(ranks.get(1).recv(0, 0).block(WAIT)));
    }

    @Test
    void aCancelledReceiveDoesNotConsumeTheNextMessage() {
        List<InMemoryBootstrap> ranks = group(2);
        Disposable abandoned = ranks.get(1).recv(0, 2).subscribe();
        abandoned.dispose();
        ranks.get(0).send(1, 2, bytes("kept")).block(WAIT);
        assertEquals("kept", text(ranks.get(1).recv(0, 2).block(WAIT)));
    }

    @Test
    void aTimedOutReceiveDoesNotConsumeALaterMessage() {
        List<InMemoryBootstrap> ranks = group(2);
        StepVerifier.withVirtualTime(() -> ranks.get(1).recv(0, 2, Duration.ofMillis(10)))
                .expectSubscription()
                .thenAwait(Duration.ofMillis(10))
                .expectErrorSatisfies(jmscclppError(ErrorCode.TIMEOUT, e -> { }))
                .verify(WAIT);
        ranks.get(0).send(1, 2, bytes("kept")).block(WAIT);
        assertEquals("kept", text(ranks.get(1).recv(0, 2).block(WAIT)));
    }

    @Test
    void badPeersRootsAndTimeoutsAreInvalidUsage() {
        List<InMemoryBootstrap> ranks = group(4);
        InMemoryBootstrap r1 = ranks.get(1);
        StepVerifier.create(r1.send(4, 0, bytes("x")))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, e -> {
                    assertEquals(1, e.rank());
                    assertEquals(4, e.peer());
                    assertEquals("send", e.phase());
                    assertTrue(e.getMessage().contains("peer 4 is outside [0, 4)"), e.getMessage());
                }))
                .verify(WAIT);
        StepVerifier.create(r1.recv(-1, 0))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, e -> assertEquals(-1, e.peer())))
                .verify(WAIT);
        StepVerifier.create(r1.recv(JmscclppException.NONE, 0))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, e -> { }))
                .verify(WAIT);
        StepVerifier.create(r1.broadcast(4, bytes("x")))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, e -> {
                    assertEquals("broadcast", e.phase());
                    assertTrue(e.getMessage().contains("root 4"), e.getMessage());
                }))
                .verify(WAIT);
        StepVerifier.create(r1.recv(0, 0, Duration.ofMillis(-1)))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, e -> { }))
                .verify(WAIT);
        // the bad broadcast took no collective slot: the ranks still agree on the next one
        onEveryRank(ranks, BootstrapChecks::allGather);
    }

    // ---- collectives ------------------------------------------------------------------------

    @Test
    void barrierCompletesOnlyOnceEveryRankHasEntered() {
        List<InMemoryBootstrap> ranks = group(3);
        List<StepVerifier> others = new ArrayList<>();
        StepVerifier.withVirtualTime(() -> ranks.get(0).barrier(Duration.ofSeconds(10)))
                .expectSubscription()
                .then(() -> others.add(StepVerifier.create(ranks.get(1).barrier()).expectComplete().verifyLater()))
                .expectNoEvent(Duration.ofSeconds(5))
                .then(() -> others.add(StepVerifier.create(ranks.get(2).barrier()).expectComplete().verifyLater()))
                .expectComplete().verify(WAIT);
        others.forEach(v -> v.verify(WAIT));
    }

    @Test
    void broadcastDeliversTheRootsBytesToEveryRank() {
        List<InMemoryBootstrap> ranks = group(3);
        List<byte[]> got = Flux.merge(
                        ranks.get(0).broadcast(1, bytes("ignored")),
                        ranks.get(1).broadcast(1, bytes("from root")),
                        ranks.get(2).broadcast(1, new byte[0]))
                .collectList().block(WAIT);
        assertEquals(3, got.size());
        got.forEach(b -> assertEquals("from root", text(b)));
        got.getFirst()[0] = 'X';
        assertEquals("from root", text(got.get(1)), "every rank gets its own copy");
    }

    @Test
    void allGatherWithDifferentLengthsIsInvalidUsageNamingBothRanks() {
        List<InMemoryBootstrap> ranks = group(3);
        Consumer<JmscclppException> namesBoth = e -> {
            assertEquals("allGather", e.phase());
            assertTrue(e.detail().contains("rank 0 contributes 4 bytes but rank 2 contributes 8 bytes"), e.detail());
        };
        StepVerifier first = StepVerifier.create(ranks.get(0).allGather(new byte[4]))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, namesBoth.andThen(
                        e -> assertEquals(2, e.peer()))))
                .verifyLater();
        StepVerifier.create(ranks.get(2).allGather(new byte[8]))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, namesBoth.andThen(e -> {
                    assertEquals(2, e.rank());
                    assertEquals(0, e.peer());
                })))
                .verify(WAIT);
        first.verify(WAIT);
        // a rank arriving after the mismatch learns of it too, instead of waiting for its deadline
        StepVerifier.create(ranks.get(1).allGather(new byte[4]))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, namesBoth))
                .verify(WAIT);
    }

    @Test
    void differentCollectivesInTheSameSlotAreInvalidUsage() {
        List<InMemoryBootstrap> ranks = group(2);
        StepVerifier first = StepVerifier.create(ranks.get(0).barrier())
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE,
                        e -> assertTrue(e.detail().contains("barrier on rank 0 but allGather on rank 1"), e.detail())))
                .verifyLater();
        StepVerifier.create(ranks.get(1).allGather(new byte[1]))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, e -> assertEquals(0, e.peer())))
                .verify(WAIT);
        first.verify(WAIT);
    }

    @Test
    void broadcastWithDifferentRootsIsInvalidUsage() {
        List<InMemoryBootstrap> ranks = group(2);
        StepVerifier first = StepVerifier.create(ranks.get(0).broadcast(0, bytes("a")))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE, e -> { }))
                .verifyLater();
        StepVerifier.create(ranks.get(1).broadcast(1, bytes("b")))
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE,
                        e -> assertTrue(e.detail().contains("rank 0 names root 0 but rank 1 names root 1"),
                                e.detail())))
                .verify(WAIT);
        first.verify(WAIT);
    }

    @Test
    void collectiveTimeoutNamesTheRankThatNeverJoined() {
        List<InMemoryBootstrap> ranks = group(4);
        List<StepVerifier> others = new ArrayList<>();
        StepVerifier.withVirtualTime(() -> ranks.get(1).allGather(new byte[2], Duration.ofSeconds(3)))
                .expectSubscription()
                .then(() -> List.of(0, 3).forEach(r -> others.add(
                        StepVerifier.create(ranks.get(r).allGather(new byte[2], Duration.ofSeconds(30)))
                                .expectErrorSatisfies(jmscclppError(ErrorCode.REMOTE_ERROR, e -> {
                                    assertEquals(r, e.rank());
                                    assertEquals(2, e.peer());
                                }))
                                .verifyLater())))
                .thenAwait(Duration.ofSeconds(3))
                .expectErrorSatisfies(jmscclppError(ErrorCode.TIMEOUT, e -> {
                    assertEquals(1, e.rank());
                    assertEquals(2, e.peer());
                    assertEquals("allGather", e.phase());
                    assertTrue(e.detail().contains("ranks [2] did not join within 3000 ms"), e.detail());
                }))
                .verify(WAIT);
        // ranks 0 and 3 are still waiting for rank 2, until it closes without ever joining
        ranks.get(2).close();
        others.forEach(v -> v.verify(WAIT));
    }

    @Test
    void collectivesAreMatchedByCallOrderUnderConcurrency() {
        List<InMemoryBootstrap> ranks = group(8);
        int rounds = 200;
        onEveryRank(ranks, b -> Flux.range(0, rounds).concatMap(k -> {
            byte[] mine = {(byte) b.rank(), k.byteValue()};
            Mono<Void> step = b.allGather(mine).handle((all, sink) -> {
                for (int r = 0; r < b.size(); r++) {
                    if (all[2 * r] != r || all[2 * r + 1] != k.byteValue()) {
                        sink.error(new AssertionError("round " + k + " on rank " + b.rank() + ": slot " + r
                                + " holds (" + all[2 * r] + ", " + all[2 * r + 1] + ")"));
                        return;
                    }
                }
                sink.complete();
            });
            return k % 3 == 0 ? step.then(b.barrier()) : step;
        }).then());
    }

    @Test
    void pointToPointStaysOrderedUnderConcurrency() {
        List<InMemoryBootstrap> ranks = group(4);
        int count = 500;
        onEveryRank(ranks, b -> {
            Flux<Integer> peers = Flux.range(0, b.size()).filter(p -> p != b.rank());
            Mono<Void> sends = peers.flatMap(p -> Flux.range(0, count)
                    .concatMap(i -> b.send(p, i % 2, new byte[] {(byte) (i >> 8), i.byteValue()}))
                    .subscribeOn(Schedulers.parallel())).then();
            Mono<Void> recvs = peers.flatMap(p -> Flux.range(0, count)
                    .concatMap(i -> b.recv(p, i % 2).handle((m, sink) -> {
                        int got = ((m[0] & 0xff) << 8) | (m[1] & 0xff);
                        if (got != i) {
                            sink.error(new AssertionError("rank " + b.rank() + " got " + got + " from " + p
                                    + " where " + i + " was due"));
                        } else {
                            sink.complete();
                        }
                    }))
                    .subscribeOn(Schedulers.parallel())).then();
            return Mono.when(sends, recvs);
        });
    }

    // ---- abort and close -----------------------------------------------------------------------

    @Test
    void abortOnOneRankFailsPendingOperationsOnAnother() {
        List<InMemoryBootstrap> ranks = group(3);
        StepVerifier collective = StepVerifier.create(ranks.get(1).barrier())
                .expectErrorSatisfies(jmscclppError(ErrorCode.ABORTED, e -> assertEquals(1, e.rank())))
                .verifyLater();
        StepVerifier.create(ranks.get(2).recv(1, 0, Duration.ofSeconds(30)))
                .expectSubscription()
                .then(() -> ranks.get(0).abort("lost a GPU"))
                .expectErrorSatisfies(jmscclppError(ErrorCode.ABORTED, e -> {
                    assertEquals(2, e.rank());
                    assertEquals(1, e.peer());
                    assertEquals("recv", e.phase());
                    assertEquals("rank 0 aborted the group: lost a GPU", e.detail());
                }))
                .verify(WAIT);
        collective.verify(WAIT);
    }

    @Test
    void afterAnAbortEveryOperationOfEveryRankFails() {
        List<InMemoryBootstrap> ranks = group(2);
        ranks.get(1).abort("first");
        ranks.get(0).abort("second");
        for (InMemoryBootstrap b : ranks) {
            for (Mono<?> op : List.of(b.send(1 - b.rank(), 0, bytes("x")), b.recv(1 - b.rank(), 0), b.barrier(),
                    b.allGather(new byte[1]), b.broadcast(0, new byte[1]))) {
                StepVerifier.create(op)
                        .expectErrorSatisfies(jmscclppError(ErrorCode.ABORTED,
                                e -> assertEquals("rank 1 aborted the group: first", e.detail())))
                        .verify(WAIT);
            }
        }
    }

    @Test
    void closeFailsPendingOperationsAndLaterOnesAndIsIdempotent() {
        List<InMemoryBootstrap> ranks = group(2);
        InMemoryBootstrap r0 = ranks.get(0);
        StepVerifier.create(r0.recv(1, 0))
                .expectSubscription()
                .then(r0::close)
                .expectErrorSatisfies(jmscclppError(ErrorCode.ABORTED, e -> assertEquals(0, e.rank())))
                .verify(WAIT);
        r0.close();
        StepVerifier.create(r0.barrier())
                .expectErrorSatisfies(jmscclppError(ErrorCode.INVALID_USAGE,
                        e -> assertTrue(e.detail().contains("closed"), e.detail())))
                .verify(WAIT);
    }

    @Test
    void peersOfAClosedRankGetRemoteErrorsButKeepWhatItSent() {
        List<InMemoryBootstrap> ranks = group(3);
        InMemoryBootstrap r0 = ranks.get(0);
        InMemoryBootstrap r1 = ranks.get(1);
        r0.send(1, 0, bytes("last words")).block(WAIT);
        StepVerifier waitingRecv = StepVerifier.create(r1.recv(0, 1))
                .expectErrorSatisfies(jmscclppError(ErrorCode.REMOTE_ERROR, e -> {
                    assertEquals(1, e.rank());
                    assertEquals(0, e.peer());
                }))
                .verifyLater();
        StepVerifier waitingBarrier = StepVerifier.create(r1.barrier())
                .expectErrorSatisfies(jmscclppError(ErrorCode.REMOTE_ERROR, e -> assertEquals(0, e.peer())))
                .verifyLater();
        r0.close();
        waitingRecv.verify(WAIT);
        waitingBarrier.verify(WAIT);
        assertEquals("last words", text(r1.recv(0, 0).block(WAIT)));
        StepVerifier.create(r1.recv(0, 0))
                .expectErrorSatisfies(jmscclppError(ErrorCode.REMOTE_ERROR, e -> { }))
                .verify(WAIT);
        StepVerifier.create(r1.send(0, 0, bytes("too late")))
                .expectErrorSatisfies(jmscclppError(ErrorCode.REMOTE_ERROR, e -> assertEquals(0, e.peer())))
                .verify(WAIT);
        StepVerifier.create(ranks.get(2).barrier())
                .expectErrorSatisfies(jmscclppError(ErrorCode.REMOTE_ERROR, e -> assertEquals(0, e.peer())))
                .verify(WAIT);
    }

    @Test
    void allGatherResultsAreIndependentCopies() {
        List<InMemoryBootstrap> ranks = group(2);
        byte[] local = {1, 2};
        List<byte[]> got = Flux.merge(ranks.get(0).allGather(local), ranks.get(1).allGather(new byte[] {3, 4}))
                .collectList().block(WAIT);
        local[0] = 9;
        got.getFirst()[0] = 7;
        assertArrayEquals(new byte[] {1, 2, 3, 4}, got.get(1));
    }
}
