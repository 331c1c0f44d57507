package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.util.RaceTestUtils;
import reactor.util.retry.Retry;

/**
 * The communicator's steps are lazy and retryable where the protocol allows: nothing is claimed
 * before subscription, a step that failed before its exchange was spent runs again when
 * resubscribed, and one that consumed the peer's message replays its error. Concurrent and
 * cancelled subscriptions are raced with {@link RaceTestUtils}; Reactor-timer deadlines run on
 * virtual time.
 */
class CommunicatorRetryTest {

    private static final EndpointConfig HOST_IPC = EndpointConfig.of(Transport.HOST_IPC);
    private static final Duration SHORT = Duration.ofMillis(200);

    @TempDir
    Path dir;

    @Test
    void aStepClaimsNothingBeforeSubscription() {
        List<String> log = Collections.synchronizedList(new ArrayList<>());
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir, b -> new RecordingBootstrap(b, log));
             DeviceBuffer buf = g.backend.allocate(32)) {
            RegisteredMemory mine = g.comm(0).registerMemory(buf, TransportFlags.NONE);
            Mono<Void> send = g.comm(0).sendMemory(mine, 1, 3);
            Mono<RegisteredMemory> neverSubscribed = g.comm(1).recvMemory(0, 3);
            Mono<RegisteredMemory> recv = g.comm(1).recvMemory(0, 3);
            assertEquals(List.of(), log, "nothing sent or received before subscription");
            send.block(CommunicatorGroup.WAIT);
            // the receive called second but subscribed first takes the first message
            assertEquals(32, recv.block(CommunicatorGroup.WAIT).size());
            assertEquals(List.of("send 1/3", "recv 0/3"), log);
        }
    }

    @Test
    void aReceiveThatTimedOutBeforeAnyMessageRunsAgainOnRetryAndGetsTheMessage() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir); DeviceBuffer buf = g.backend.allocate(48)) {
            Mono<RegisteredMemory> recv = g.comm(1).recvMemory(0, 6, SHORT);
            JmscclppException first = assertThrows(JmscclppException.class, () -> recv.block(CommunicatorGroup.WAIT));
            assertEquals(ErrorCode.TIMEOUT, first.code(), first.getMessage());
            g.comm(0).sendMemory(g.comm(0).registerMemory(buf, TransportFlags.NONE), 1, 6).block(CommunicatorGroup.WAIT);
            // resubscribing the same Mono runs the step again, with a fresh deadline
            assertEquals(48, recv.block(CommunicatorGroup.WAIT).size());
        }
    }

    @Test
    void retryWhenRetriesAReceiveUntilThePeerSends() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir); DeviceBuffer buf = g.backend.allocate(16)) {
            AtomicReference<Integer> attempts = new AtomicReference<>(0);
            Mono<RegisteredMemory> recv = g.comm(1).recvMemory(0, 8, SHORT)
                    .doOnError(e -> {
                        if (attempts.getAndUpdate(n -> n + 1) == 1) {
                            // the peer shows up after two timeouts
                            g.comm(0).sendMemory(g.comm(0).registerMemory(buf, TransportFlags.NONE), 1, 8).subscribe();
                        }
                    })
                    .retryWhen(Retry.max(5).filter(e -> e instanceof JmscclppException je
                            && je.code() == ErrorCode.TIMEOUT));
            StepVerifier.create(recv).assertNext(m -> assertEquals(16, m.size())).expectComplete()
                    .verify(CommunicatorGroup.WAIT);
            assertEquals(2, attempts.get());
        }
    }

    @Test
    void aConnectWhoseEndpointWentOutRetriesOnlyItsReceive() {
        List<String> log = new CopyOnWriteArrayList<>();
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir, b -> new RecordingBootstrap(b, log))) {
            Mono<Connection> early = g.comm(0).connect(1, 4, HOST_IPC, SHORT);
            assertEquals(ErrorCode.TIMEOUT, assertThrows(JmscclppException.class,
                    () -> early.block(CommunicatorGroup.WAIT)).code());
            Mono<Connection> late = g.comm(1).connect(0, 4, HOST_IPC);
            List<Connection> both = Mono.zip(early, late, List::of).block(CommunicatorGroup.WAIT);
            assertEquals(1, both.get(0).context().remoteRank());
            assertEquals(0, both.get(1).context().remoteRank());
            assertEquals(1, log.stream().filter("send 1/4"::equals).count(),
                    "rank 0 sent its endpoint once; the retry only waited again: " + log);
        }
    }

    @Test
    void aStepThatTookThePeersMessageReplaysItsErrorInsteadOfRunningAgain() {
        List<String> log = new CopyOnWriteArrayList<>();
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir, b -> new RecordingBootstrap(b, log));
             DeviceBuffer buf = g.backend.allocate(8)) {
            g.comm(0).sendMemory(g.comm(0).registerMemory(buf, TransportFlags.NONE), 1, 5).block(CommunicatorGroup.WAIT);
            g.comm(0).sendMemory(g.comm(0).registerMemory(buf, TransportFlags.NONE), 1, 5).block(CommunicatorGroup.WAIT);
            Mono<Connection> wrongKind = g.comm(1).connect(0, 5, HOST_IPC);
            JmscclppException first = assertThrows(JmscclppException.class, () -> wrongKind.block(CommunicatorGroup.WAIT));
            assertEquals(ErrorCode.INVALID_USAGE, first.code());
            JmscclppException again = assertThrows(JmscclppException.class, () -> wrongKind.block(CommunicatorGroup.WAIT));
            assertSame(first, again, "the error is replayed");
            assertEquals(1, log.stream().filter("recv 0/5"::equals).count(), "the retry took no second message: " + log);
            // the second message is still there for the next receive
            assertEquals(8, g.comm(1).recvMemory(0, 5).block(CommunicatorGroup.WAIT).size());
        }
    }

    @Test
    void aFailedSetupRunsItsStepsAgainWhenSubscribedAgain() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            Mono<Connection> conn = g.comm(0).connectOnSetup(1, 9, HOST_IPC);
            Mono<Void> setup = g.comm(0).setup(SHORT);
            assertEquals(ErrorCode.TIMEOUT, assertThrows(JmscclppException.class,
                    () -> setup.block(CommunicatorGroup.WAIT)).code());
            assertEquals(ErrorCode.TIMEOUT, assertThrows(JmscclppException.class,
                    () -> conn.block(CommunicatorGroup.WAIT)).code(), "until setup runs again, the step's error stays");
            Mono<Connection> peer = g.comm(1).connectOnSetup(0, 9, HOST_IPC);
            List<Connection> both = Mono.zip(setup.then(conn), g.comm(1).setup().then(peer), List::of)
                    .block(CommunicatorGroup.WAIT);
            assertEquals(2, both.size());
        }
    }

    @Test
    void aMeshThatFailedBeforeItsPeerCameRetriesTheSameSteps() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir); DeviceBuffer b0 = g.backend.allocate(64);
             DeviceBuffer b1 = g.backend.allocate(64)) {
            Mono<Mesh> mesh0 = g.comm(0).mesh(g.comm(0).registerMemory(b0, TransportFlags.of(Transport.HOST_IPC)),
                    p -> HOST_IPC, 2, Duration.ofSeconds(1));
            assertEquals(ErrorCode.TIMEOUT, assertThrows(JmscclppException.class,
                    () -> mesh0.block(CommunicatorGroup.WAIT)).code());
            Mono<Mesh> mesh1 = g.comm(1).mesh(g.comm(1).registerMemory(b1, TransportFlags.of(Transport.HOST_IPC)),
                    p -> HOST_IPC, 2, CommunicatorGroup.WAIT);
            List<Mesh> both = Mono.zip(mesh0.retry(1), mesh1, List::of).block(CommunicatorGroup.WAIT);
            assertEquals(List.of(1), both.get(0).peers());
            assertEquals(List.of(0), both.get(1).peers());
        }
    }

    /** A step waiting for an earlier step that never runs times out by Reactor's timer: on virtual time, at once. */
    @Test
    void aStepBehindAQueuedStepThatNeverRunsTimesOutAtItsDeadline() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir)) {
            g.comm(1).recvMemoryOnSetup(0, 7);   // queued, and setup() is never called
            StepVerifier.withVirtualTime(() -> g.comm(1).recvMemory(0, 7, Duration.ofMinutes(10)))
                    .expectSubscription()
                    .expectNoEvent(Duration.ofMinutes(9))
                    .thenAwait(Duration.ofMinutes(1))
                    .expectErrorSatisfies(e -> {
                        JmscclppException je = (JmscclppException) e;
                        assertEquals(ErrorCode.TIMEOUT, je.code());
                        assertEquals(0, je.peer());
                        assertEquals(7, je.tag());
                        assertEquals("recvMemory", je.phase());
                        assertTrue(je.getMessage().contains("never set up"), je.getMessage());
                    })
                    .verify(CommunicatorGroup.WAIT);
        }
    }

    /** Two subscribers racing to subscribe one step run it once: one message is taken, both see it. */
    @RepeatedTest(20)
    void racingSubscribersOfOneStepRunItOnce() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir); DeviceBuffer a = g.backend.allocate(8);
             DeviceBuffer b = g.backend.allocate(24)) {
            g.comm(0).sendMemory(g.comm(0).registerMemory(a, TransportFlags.NONE), 1, 1).block(CommunicatorGroup.WAIT);
            g.comm(0).sendMemory(g.comm(0).registerMemory(b, TransportFlags.NONE), 1, 1).block(CommunicatorGroup.WAIT);
            Mono<RegisteredMemory> recv = g.comm(1).recvMemory(0, 1);
            AtomicReference<RegisteredMemory> first = new AtomicReference<>();
            AtomicReference<RegisteredMemory> second = new AtomicReference<>();
            RaceTestUtils.race(() -> first.set(recv.block(CommunicatorGroup.WAIT)),
                    () -> second.set(recv.block(CommunicatorGroup.WAIT)));
            assertSame(first.get(), second.get());
            assertEquals(8, first.get().size());
            assertEquals(24, g.comm(1).recvMemory(0, 1).block(CommunicatorGroup.WAIT).size(),
                    "the second message was left for the next step");
        }
    }

    /** A subscriber that cancels while the peer's message arrives loses nothing: the step runs on and a new subscriber gets it. */
    @RepeatedTest(20)
    void aCancelRacingTheMessageLosesNothing() {
        try (CommunicatorGroup g = new CommunicatorGroup(2, dir); DeviceBuffer a = g.backend.allocate(40)) {
            RegisteredMemory mine = g.comm(0).registerMemory(a, TransportFlags.NONE);
            Mono<RegisteredMemory> recv = g.comm(1).recvMemory(0, 2);
            RaceTestUtils.race(() -> {
                Disposable d = recv.subscribe();
                d.dispose();
            }, () -> g.comm(0).sendMemory(mine, 1, 2).block(CommunicatorGroup.WAIT));
            assertEquals(40, recv.block(CommunicatorGroup.WAIT).size());
        }
    }
}
