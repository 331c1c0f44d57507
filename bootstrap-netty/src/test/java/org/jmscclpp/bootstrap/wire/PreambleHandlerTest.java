package org.jmscclpp.bootstrap.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.Logger;
import org.jmscclpp.testkit.RecordingHandler;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * {@link PreambleHandler} on an {@link EmbeddedChannel}, both sides of the handshake: what passes
 * (a dialler that proves the secret), what is dropped (bad preambles, wrong or replayed proofs,
 * silence), what is forwarded, and that every buffer handed in is released.
 */
class PreambleHandlerTest {

    private static final byte[] SECRET = filled(Preamble.SECRET_BYTES, 0x5A);
    private static final byte[] OTHER_SECRET = filled(Preamble.SECRET_BYTES, 0x5B);
    private static final byte[] SESSION = filled(Preamble.SESSION_BYTES, 0x11);
    private static final byte[] AFTER = "frames follow".getBytes(StandardCharsets.US_ASCII);
    private static final long TIMEOUT_MS = 1_000;

    /** Acceptor that records what it saw and answers with a settable Mono. */
    private static final class RecordingAcceptor implements PreambleHandler.Acceptor {
        final List<Preamble> seen = new ArrayList<>();
        final List<Preamble> proven = new ArrayList<>();
        @Nullable Mono<PreambleHandler.Answer> answer;

        @Override
        public Mono<PreambleHandler.Answer> answer(ChannelHandlerContext ctx, Preamble dialler) {
            seen.add(dialler);
            return answer != null ? answer : Mono.just(accept(dialler));
        }

        PreambleHandler.Answer accept(Preamble dialler) {
            return PreambleHandler.Answer.accept(new Preamble(Preamble.TYPE_PEER, SESSION, dialler.receiverOrSize,
                    dialler.sender), (ctx, p) -> {
                        proven.add(p);
                        return null;
                    });
        }
    }

    private final RecordingAcceptor acceptor = new RecordingAcceptor();
    private final List<ByteBuf> handedIn = new ArrayList<>();
    private final EmbeddedChannel channel = new EmbeddedChannel();
    private @Nullable PreambleHandler handler;

    /**
     * The handshake's outcome as it stands: null when it succeeded, why it failed, or {@code pending}
     * while it runs.
     */
    private static @Nullable String outcomeNow(PreambleHandler h, @Nullable String pending) {
        String[] now = {pending};
        boolean[] emitted = {false};
        Disposable d = h.refusal().subscribe(why -> {
            emitted[0] = true;
            now[0] = why;
        }, error -> { }, () -> {
            if (!emitted[0]) {
                now[0] = null;
            }
        });
        d.dispose();
        return now[0];
    }

    private void start() {
        handler = PreambleHandler.accepting(SECRET, TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS), "test", acceptor);
        channel.pipeline().addLast(handler);
    }

    private PreambleHandler handler() {
        return Objects.requireNonNull(handler, "start() first");
    }

    private void write(byte[] bytes) {
        ByteBuf buf = channel.alloc().buffer(bytes.length).writeBytes(bytes);
        handedIn.add(buf);
        channel.writeInbound(buf);
    }

    /** Everything forwarded to the next handler, concatenated; the forwarded buffers are released. */
    private byte[] drainForwarded() {
        return drain(true);
    }

    /** Everything the handler wrote back, concatenated. */
    private byte[] drainWritten() {
        return drain(false);
    }

    private byte[] drain(boolean inbound) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Object m = inbound ? channel.readInbound() : channel.readOutbound(); m != null;
             m = inbound ? channel.readInbound() : channel.readOutbound()) {
            ByteBuf b = (ByteBuf) m;
            try {
                out.writeBytes(WireBytes.bytes(b));
            } finally {
                b.release();
            }
            assertEquals(0, b.refCnt(), "buffer still referenced");
        }
        return out.toByteArray();
    }

    @AfterEach
    void releasedEverything() {
        channel.finishAndReleaseAll();
        for (ByteBuf b : handedIn) {
            assertEquals(0, b.refCnt(), "a buffer handed to the channel was not released");
        }
    }

    private static byte[] good(int sender, int other) {
        return WireBytes.preamble(Preamble.TYPE_PEER, SESSION, sender, other);
    }

    /** Reads the handler's answer to {@code dialler}, checks its proof of {@link #SECRET}; returns its preamble. */
    private byte[] answerTo(byte[] dialler) {
        byte[] answer = drainWritten();
        assertEquals(WireBytes.ANSWER_BYTES, answer.length, "the answer is a preamble and a proof");
        byte[] theirs = Arrays.copyOf(answer, Preamble.BYTES);
        assertArrayEquals(WireBytes.acceptProof(SECRET, dialler, theirs),
                Arrays.copyOfRange(answer, Preamble.BYTES, answer.length), "the acceptor proves the secret");
        return theirs;
    }

    private void assertDroppedWithNothingForwarded() {
        assertFalse(channel.isOpen(), "the connection should be closed");
        assertNull(channel.readInbound(), "nothing may reach the next handler");
        assertTrue(acceptor.proven.isEmpty(), "nothing may be taken as proven");
    }

    private void assertDroppedUnanswered() {
        assertDroppedWithNothingForwarded();
        assertArrayEquals(new byte[0], drainWritten(), "nothing may be written back");
    }

    @Test
    void provenDiallerPassesAndFollowingBytesReachTheNextHandler() {
        start();
        byte[] mine = good(3, 7);
        write(mine);
        assertTrue(channel.isOpen());
        assertEquals(1, acceptor.seen.size());
        Preamble p = acceptor.seen.getFirst();
        assertEquals(Preamble.TYPE_PEER, p.type);
        assertEquals(3, p.sender);
        assertEquals(7, p.receiverOrSize);
        assertTrue(p.sessionEquals(SESSION));
        byte[] theirs = answerTo(mine);
        assertEquals(7, WireBytes.readPreamble(theirs).sender);
        assertTrue(acceptor.proven.isEmpty(), "nothing is taken before the dialler's proof");

        write(WireBytes.concat(WireBytes.dialProof(SECRET, mine, theirs), AFTER));
        assertTrue(channel.isOpen());
        assertEquals(1, acceptor.proven.size());
        assertNull(channel.pipeline().get(PreambleHandler.class), "the handler removes itself once proven");
        assertArrayEquals(AFTER, drainForwarded());
        assertNull(outcomeNow(handler(), "pending"));

        write(AFTER);
        assertArrayEquals(AFTER, drainForwarded(), "later bytes bypass the removed handler");
    }

    @Test
    void preambleNeverCarriesTheSecret() {
        byte[] pre = good(1, 2);
        for (int i = 0; i + SECRET.length <= pre.length; i++) {
            assertFalse(Arrays.equals(SECRET, Arrays.copyOfRange(pre, i, i + SECRET.length)), "secret at offset " + i);
        }
        assertFalse(Arrays.equals(Arrays.copyOfRange(pre, WireBytes.PREAMBLE_NONCE_OFFSET, 40),
                        Arrays.copyOfRange(good(1, 2), WireBytes.PREAMBLE_NONCE_OFFSET, 40)),
                "every preamble carries a fresh nonce");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 63})
    void handshakeSplitAcrossWrites(int chunk) {
        start();
        byte[] mine = good(1, 2);
        for (int off = 0; off < mine.length; off += chunk) {
            assertTrue(acceptor.seen.isEmpty(), "decided before the whole preamble arrived (offset " + off + ")");
            write(Arrays.copyOfRange(mine, off, Math.min(mine.length, off + chunk)));
        }
        byte[] rest = WireBytes.concat(WireBytes.dialProof(SECRET, mine, answerTo(mine)), AFTER);
        for (int off = 0; off < rest.length; off += chunk) {
            if (off < Preamble.PROOF_BYTES) {
                assertTrue(acceptor.proven.isEmpty(), "proven before the whole proof arrived (offset " + off + ")");
            }
            write(Arrays.copyOfRange(rest, off, Math.min(rest.length, off + chunk)));
        }
        assertTrue(channel.isOpen());
        assertEquals(1, acceptor.proven.size());
        assertArrayEquals(AFTER, drainForwarded());
    }

    @Test
    void proofOfAnotherSecretIsDropped() {
        start();
        byte[] mine = good(1, 2);
        write(mine);
        byte[] theirs = answerTo(mine);
        write(WireBytes.concat(WireBytes.dialProof(OTHER_SECRET, mine, theirs), AFTER));
        assertDroppedWithNothingForwarded();
        assertNotNull(outcomeNow(handler(), null));
    }

    @Test
    void proofInTheAcceptorsDirectionIsDropped() {
        start();
        byte[] mine = good(1, 2);
        write(mine);
        byte[] theirs = answerTo(mine);
        // a reflection: the acceptor's own proof sent back as the dialler's
        write(WireBytes.acceptProof(SECRET, mine, theirs));
        assertDroppedWithNothingForwarded();
    }

    @Test
    void replayedHandshakeIsDropped() {
        // an honest handshake, recorded
        start();
        byte[] mine = good(1, 2);
        write(mine);
        byte[] proof = WireBytes.dialProof(SECRET, mine, answerTo(mine));
        write(WireBytes.concat(proof, AFTER));
        assertEquals(1, acceptor.proven.size());
        drainForwarded();

        // the same bytes on a new connection: the acceptor's nonce differs, so the proof does not fit
        RecordingAcceptor second = new RecordingAcceptor();
        EmbeddedChannel replay = new EmbeddedChannel(
                PreambleHandler.accepting(SECRET, TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS), "replay", second));
        try {
            replay.writeInbound(replay.alloc().buffer().writeBytes(WireBytes.concat(mine, proof, AFTER)));
            assertFalse(replay.isOpen(), "a replayed handshake must be dropped");
            assertNull(replay.readInbound());
            assertTrue(second.proven.isEmpty());
        } finally {
            replay.finishAndReleaseAll();
        }
    }

    private void assertRefused(Consumer<byte[]> corrupt) {
        start();
        byte[] pre = good(1, 2);
        corrupt.accept(pre);
        write(WireBytes.concat(pre, AFTER));
        assertTrue(acceptor.seen.isEmpty(), "a bad preamble must not reach the acceptor");
        assertDroppedUnanswered();
    }

    @Test
    void badMagicIsDropped() {
        assertRefused(p -> p[0] ^= 0x20);
    }

    /**
     * A flood of stray connections (a port scanner, garbage by the thousand) costs the log one
     * WARNING at most, not one line per connection: the refusals after it go to DEBUG.
     */
    @Test
    void aFloodOfBadConnectionsLogsOneWarningNotOneEach() {
        Logger jul = Logger.getLogger(PreambleHandler.class.getName());
        RecordingHandler capture = new RecordingHandler();
        jul.addHandler(capture);
        try {
            for (int i = 0; i < 100; i++) {
                EmbeddedChannel stray = new EmbeddedChannel(PreambleHandler.accepting(SECRET,
                        TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS), "test", acceptor));
                stray.writeInbound(Unpooled.wrappedBuffer(new byte[Preamble.BYTES]));
                assertFalse(stray.isOpen(), "garbage is dropped");
                stray.finishAndReleaseAll();
            }
        } finally {
            jul.removeHandler(capture);
        }
        long warnings = capture.records().stream().filter(r -> r.getLevel() == java.util.logging.Level.WARNING)
                .count();
        assertTrue(warnings <= 1, warnings + " WARNING lines for 100 refused connections");
    }

    @Test
    void httpRequestIsDropped() {
        start();
        write("GET / HTTP/1.1\r\nHost: example\r\nUser-Agent: scanner\r\nAccept: */*\r\n\r\n"
                .getBytes(StandardCharsets.US_ASCII));
        assertTrue(acceptor.seen.isEmpty());
        assertDroppedUnanswered();
    }

    @Test
    void wrongVersionIsDropped() {
        assertRefused(p -> p[WireBytes.PREAMBLE_VERSION_OFFSET] = (byte) (Preamble.VERSION + 1));
    }

    @ParameterizedTest
    @ValueSource(bytes = {0, 3, (byte) 0xFF})
    void unknownTypeIsDropped(byte type) {
        assertRefused(p -> p[WireBytes.PREAMBLE_TYPE_OFFSET] = type);
    }

    @Test
    void acceptorRefusalClosesUnanswered() {
        acceptor.answer = Mono.just(PreambleHandler.Answer.refuse("not for this rank"));
        start();
        write(WireBytes.concat(good(1, 2), AFTER));
        assertEquals(1, acceptor.seen.size());
        assertDroppedUnanswered();
        assertEquals("not for this rank", outcomeNow(handler(), null));
    }

    @Test
    void silentConnectionIsClosedAtTheHandshakeDeadline() {
        channel.freezeTime();
        start();
        channel.advanceTimeBy(TIMEOUT_MS - 1, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertTrue(channel.isOpen(), "closed before the deadline");
        channel.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertDroppedUnanswered();
    }

    @Test
    void partialPreambleIsClosedAtTheDeadlineAndItsBytesReleased() {
        channel.freezeTime();
        start();
        write(Arrays.copyOf(good(1, 2), Preamble.BYTES - 1));
        channel.advanceTimeBy(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertTrue(acceptor.seen.isEmpty());
        assertDroppedUnanswered();
    }

    @Test
    void missingProofIsClosedAtTheDeadline() {
        channel.freezeTime();
        start();
        byte[] mine = good(1, 2);
        write(mine);
        answerTo(mine);
        write(new byte[Preamble.PROOF_BYTES - 1]);
        channel.advanceTimeBy(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertDroppedWithNothingForwarded();
    }

    @Test
    void provenConnectionOutlivesTheDeadline() {
        channel.freezeTime();
        start();
        byte[] mine = good(1, 2);
        write(mine);
        write(WireBytes.dialProof(SECRET, mine, answerTo(mine)));
        channel.advanceTimeBy(10 * TIMEOUT_MS, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertTrue(channel.isOpen(), "the deadline must be cancelled once the dialler has proven the secret");
        write(AFTER);
        assertArrayEquals(AFTER, drainForwarded());
    }

    @Test
    void deferredAnswerKeepsWhatCameMeanwhile() {
        Sinks.One<PreambleHandler.Answer> answer = Sinks.one();
        acceptor.answer = answer.asMono();
        start();
        byte[] mine = good(1, 2);
        write(WireBytes.concat(mine, Arrays.copyOf(AFTER, 4)));
        assertEquals(1, acceptor.seen.size());
        assertFalse(channel.config().isAutoRead(), "reading pauses while the answer is pending");
        assertNotNull(channel.pipeline().get(PreambleHandler.class));
        assertArrayEquals(new byte[0], drainWritten(), "no answer before the acceptor decided");

        answer.tryEmitValue(acceptor.accept(acceptor.seen.getFirst()));
        channel.runPendingTasks();
        assertTrue(channel.config().isAutoRead(), "reading resumes after the answer");
        answerTo(mine);
        assertTrue(channel.isOpen(), "4 bytes are not a proof yet");
        // the bytes that came early are no proof: the dialler could not know the answer yet
        write(new byte[Preamble.PROOF_BYTES]);
        assertDroppedWithNothingForwarded();
    }

    @Test
    void deferredAnswerThenProofPasses() {
        Sinks.One<PreambleHandler.Answer> answer = Sinks.one();
        acceptor.answer = answer.asMono();
        start();
        byte[] mine = good(1, 2);
        write(mine);
        answer.tryEmitValue(acceptor.accept(acceptor.seen.getFirst()));
        channel.runPendingTasks();
        write(WireBytes.concat(WireBytes.dialProof(SECRET, mine, answerTo(mine)), AFTER));
        assertTrue(channel.isOpen());
        assertNull(channel.pipeline().get(PreambleHandler.class));
        assertEquals(1, acceptor.seen.size(), "the acceptor is asked once");
        assertArrayEquals(AFTER, drainForwarded());
    }

    @Test
    void deferredRefusalClosesUnanswered() {
        Sinks.One<PreambleHandler.Answer> answer = Sinks.one();
        acceptor.answer = answer.asMono();
        start();
        write(WireBytes.concat(good(1, 2), AFTER));
        assertTrue(channel.isOpen());

        answer.tryEmitValue(PreambleHandler.Answer.refuse("session of another job"));
        channel.runPendingTasks();

        assertDroppedUnanswered();
    }

    @Test
    void deferredAnswerThatFailsCloses() {
        Sinks.One<PreambleHandler.Answer> answer = Sinks.one();
        acceptor.answer = answer.asMono();
        start();
        write(WireBytes.concat(good(1, 2), AFTER));

        answer.tryEmitError(new IllegalStateException("acceptor broke"));
        channel.runPendingTasks();

        assertDroppedUnanswered();
    }

    @Test
    void pendingAnswerStillHasTheHandshakeDeadline() {
        channel.freezeTime();
        Sinks.One<PreambleHandler.Answer> answer = Sinks.one();
        acceptor.answer = answer.asMono();
        start();
        write(WireBytes.concat(good(1, 2), AFTER));
        channel.advanceTimeBy(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertDroppedUnanswered();

        // An answer arriving after the close must not resurrect, answer or forward anything.
        answer.tryEmitValue(acceptor.accept(acceptor.seen.getFirst()));
        channel.runPendingTasks();
        assertDroppedUnanswered();
    }

    @Test
    void exceptionDuringHandshakeCloses() {
        start();
        write(Arrays.copyOf(good(1, 2), 10));
        channel.pipeline().fireExceptionCaught(new IllegalStateException("boom"));
        assertTrue(acceptor.seen.isEmpty());
        assertDroppedUnanswered();
    }

    // ------------------------------------------------------------------ the dialling side

    /** A dialling handler on {@code ch} (active at once), recording what it took as proven. */
    private static PreambleHandler dialler(EmbeddedChannel ch, Preamble mine, List<Preamble> proven) {
        PreambleHandler h = PreambleHandler.dialling(SECRET, TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS), "dial test",
                mine, (ctx, p) -> {
                    proven.add(p);
                    return null;
                });
        ch.pipeline().addLast(h);
        return h;
    }

    @Test
    void diallerSendsItsPreambleThenProvesTheSecretToAProvenAcceptor() {
        Preamble mine = new Preamble(Preamble.TYPE_PEER, SESSION, 1, 2);
        List<Preamble> proven = new ArrayList<>();
        PreambleHandler h = dialler(channel, mine, proven);
        assertArrayEquals(mine.toBytes(), drainWritten(), "the dialler speaks first");

        byte[] theirs = good(2, 1);
        write(WireBytes.concat(theirs, WireBytes.acceptProof(SECRET, mine.toBytes(), theirs), AFTER));
        assertArrayEquals(WireBytes.dialProof(SECRET, mine.toBytes(), theirs), drainWritten());
        assertEquals(1, proven.size());
        assertEquals(2, proven.getFirst().sender);
        assertNull(outcomeNow(h, "pending"));
        assertNull(channel.pipeline().get(PreambleHandler.class));
        assertArrayEquals(AFTER, drainForwarded());
    }

    @Test
    void diallerDropsAnAcceptorWithoutTheSecret() {
        Preamble mine = new Preamble(Preamble.TYPE_PEER, SESSION, 1, 2);
        List<Preamble> proven = new ArrayList<>();
        PreambleHandler h = dialler(channel, mine, proven);
        drainWritten();

        byte[] theirs = good(2, 1);
        write(WireBytes.concat(theirs, WireBytes.acceptProof(OTHER_SECRET, mine.toBytes(), theirs), AFTER));
        assertFalse(channel.isOpen());
        assertArrayEquals(new byte[0], drainWritten(), "no proof goes to an acceptor that did not prove the secret");
        assertTrue(proven.isEmpty());
        assertNotNull(outcomeNow(h, null));
        assertNull(channel.readInbound());
    }

    @Test
    void diallerDropsAReplayedAnswer() {
        // an acceptor's answer to another preamble (another nonce) does not prove anything here
        byte[] other = good(1, 2);
        byte[] theirs = good(2, 1);
        byte[] recorded = WireBytes.concat(theirs, WireBytes.acceptProof(SECRET, other, theirs));
        List<Preamble> proven = new ArrayList<>();
        PreambleHandler h = dialler(channel, new Preamble(Preamble.TYPE_PEER, SESSION, 1, 2), proven);
        drainWritten();
        write(recorded);
        assertFalse(channel.isOpen());
        assertTrue(proven.isEmpty());
        assertNotNull(outcomeNow(h, null));
    }

    private static byte[] filled(int n, int value) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) value);
        return b;
    }
}
