package org.jmscclpp.bootstrap.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link PreambleHandler} on an {@link EmbeddedChannel}: what passes, what is dropped, what is
 * forwarded, and that every buffer handed in is released.
 */
class PreambleHandlerTest {

    private static final byte[] SECRET = filled(Preamble.SECRET_BYTES, 0x5A);
    private static final byte[] SESSION = filled(Preamble.SESSION_BYTES, 0x11);
    private static final byte[] AFTER = "frames follow".getBytes(StandardCharsets.US_ASCII);
    private static final long TIMEOUT_MS = 1_000;

    /** Acceptor that records what it saw and answers with a settable future. */
    private static final class RecordingAcceptor implements PreambleHandler.Acceptor {
        final List<Preamble> seen = new ArrayList<>();
        CompletableFuture<@Nullable String> verdict = CompletableFuture.completedFuture(null);

        @Override
        public CompletableFuture<@Nullable String> accept(ChannelHandlerContext ctx, Preamble preamble) {
            seen.add(preamble);
            return verdict;
        }
    }

    private final RecordingAcceptor acceptor = new RecordingAcceptor();
    private final List<ByteBuf> handedIn = new ArrayList<>();
    private final EmbeddedChannel channel = new EmbeddedChannel();

    private PreambleHandler handler() {
        return new PreambleHandler(SECRET, TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS), "test", acceptor);
    }

    private void start() {
        channel.pipeline().addLast(handler());
    }

    private void write(byte[] bytes) {
        ByteBuf buf = channel.alloc().buffer(bytes.length).writeBytes(bytes);
        handedIn.add(buf);
        channel.writeInbound(buf);
    }

    /** Everything forwarded to the next handler, concatenated; the forwarded buffers are released. */
    private byte[] drainForwarded() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Object m = channel.readInbound(); m != null; m = channel.readInbound()) {
            ByteBuf b = (ByteBuf) m;
            try {
                out.writeBytes(WireBytes.bytes(b));
            } finally {
                b.release();
            }
            assertEquals(0, b.refCnt(), "forwarded buffer still referenced");
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
        return WireBytes.preamble(Preamble.TYPE_PEER, SECRET, SESSION, sender, other);
    }

    private void assertDroppedWithNothingForwarded() {
        assertFalse(channel.isOpen(), "the connection should be closed");
        assertNull(channel.readInbound(), "nothing may reach the next handler");
        assertNull(channel.readOutbound(), "nothing may be written back");
    }

    @Test
    void goodPreamblePassesAndFollowingBytesReachTheNextHandler() {
        start();
        write(WireBytes.concat(good(3, 7), AFTER));

        assertTrue(channel.isOpen());
        assertEquals(1, acceptor.seen.size());
        Preamble p = acceptor.seen.getFirst();
        assertEquals(Preamble.TYPE_PEER, p.type);
        assertEquals(3, p.sender);
        assertEquals(7, p.receiverOrSize);
        assertTrue(p.sessionEquals(SESSION));
        assertArrayEquals(SECRET, p.secret);
        assertNull(channel.pipeline().get(PreambleHandler.class), "the handler removes itself once accepted");
        assertArrayEquals(AFTER, drainForwarded());

        write(AFTER);
        assertArrayEquals(AFTER, drainForwarded(), "later bytes bypass the removed handler");
    }

    @Test
    void goodPreambleAloneForwardsNothing() {
        start();
        write(good(0, 1));
        assertTrue(channel.isOpen());
        assertEquals(1, acceptor.seen.size());
        assertArrayEquals(new byte[0], drainForwarded());
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 63})
    void preambleSplitAcrossWrites(int chunk) {
        start();
        byte[] all = WireBytes.concat(good(1, 2), AFTER);
        for (int off = 0; off < all.length; off += chunk) {
            if (off < Preamble.BYTES) {
                assertTrue(acceptor.seen.isEmpty(), "decided before the whole preamble arrived (offset " + off + ")");
            }
            write(Arrays.copyOfRange(all, off, Math.min(all.length, off + chunk)));
        }
        assertTrue(channel.isOpen());
        assertEquals(1, acceptor.seen.size());
        assertEquals(1, acceptor.seen.getFirst().sender);
        assertArrayEquals(AFTER, drainForwarded());
    }

    private void assertRefused(Consumer<byte[]> corrupt) {
        start();
        byte[] pre = good(1, 2);
        corrupt.accept(pre);
        write(WireBytes.concat(pre, AFTER));
        assertTrue(acceptor.seen.isEmpty(), "a bad preamble must not reach the acceptor");
        assertDroppedWithNothingForwarded();
    }

    @Test
    void badMagicIsDropped() {
        assertRefused(p -> p[0] ^= 0x20);
    }

    @Test
    void httpRequestIsDropped() {
        start();
        write("GET / HTTP/1.1\r\nHost: example\r\nUser-Agent: scanner\r\nAccept: */*\r\n\r\n"
                .getBytes(StandardCharsets.US_ASCII));
        assertTrue(acceptor.seen.isEmpty());
        assertDroppedWithNothingForwarded();
    }

    @Test
    void wrongVersionIsDropped() {
        assertRefused(p -> p[WireBytes.PREAMBLE_VERSION_OFFSET] = (byte) (Preamble.VERSION + 1));
    }

    @Test
    void wrongSecretIsDropped() {
        assertRefused(p -> p[WireBytes.PREAMBLE_SECRET_OFFSET + Preamble.SECRET_BYTES - 1] ^= 1);
    }

    @ParameterizedTest
    @ValueSource(bytes = {0, 3, (byte) 0xFF})
    void unknownTypeIsDropped(byte type) {
        assertRefused(p -> p[WireBytes.PREAMBLE_TYPE_OFFSET] = type);
    }

    @Test
    void acceptorRefusalClosesWithNothingForwarded() {
        acceptor.verdict = CompletableFuture.completedFuture("not for this rank");
        start();
        write(WireBytes.concat(good(1, 2), AFTER));
        assertEquals(1, acceptor.seen.size());
        assertDroppedWithNothingForwarded();
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
        assertDroppedWithNothingForwarded();
    }

    @Test
    void partialPreambleIsClosedAtTheDeadlineAndItsBytesReleased() {
        channel.freezeTime();
        start();
        write(Arrays.copyOf(good(1, 2), Preamble.BYTES - 1));
        channel.advanceTimeBy(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertTrue(acceptor.seen.isEmpty());
        assertDroppedWithNothingForwarded();
    }

    @Test
    void acceptedConnectionOutlivesTheDeadline() {
        channel.freezeTime();
        start();
        write(good(1, 2));
        channel.advanceTimeBy(10 * TIMEOUT_MS, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertTrue(channel.isOpen(), "the deadline must be cancelled once the preamble is accepted");
        write(AFTER);
        assertArrayEquals(AFTER, drainForwarded());
    }

    @Test
    void deferredAcceptanceForwardsEverythingBufferedMeanwhile() {
        CompletableFuture<@Nullable String> verdict = new CompletableFuture<>();
        acceptor.verdict = verdict;
        start();
        write(WireBytes.concat(good(1, 2), Arrays.copyOf(AFTER, 4)));
        assertEquals(1, acceptor.seen.size());
        assertFalse(channel.config().isAutoRead(), "reading pauses while the verdict is pending");
        assertNotNull(channel.pipeline().get(PreambleHandler.class));
        write(Arrays.copyOfRange(AFTER, 4, AFTER.length));
        assertNull(channel.readInbound(), "nothing is forwarded before the verdict");

        verdict.complete(null);
        channel.runPendingTasks();

        assertTrue(channel.isOpen());
        assertTrue(channel.config().isAutoRead(), "reading resumes after the verdict");
        assertNull(channel.pipeline().get(PreambleHandler.class));
        assertEquals(1, acceptor.seen.size(), "the acceptor is asked once");
        assertArrayEquals(AFTER, drainForwarded());
    }

    @Test
    void deferredRefusalClosesWithNothingForwarded() {
        CompletableFuture<@Nullable String> verdict = new CompletableFuture<>();
        acceptor.verdict = verdict;
        start();
        write(WireBytes.concat(good(1, 2), AFTER));
        write(AFTER);
        assertTrue(channel.isOpen());

        verdict.complete("session of another job");
        channel.runPendingTasks();

        assertDroppedWithNothingForwarded();
    }

    @Test
    void deferredVerdictThatFailsCloses() {
        CompletableFuture<@Nullable String> verdict = new CompletableFuture<>();
        acceptor.verdict = verdict;
        start();
        write(WireBytes.concat(good(1, 2), AFTER));

        verdict.completeExceptionally(new IllegalStateException("acceptor broke"));
        channel.runPendingTasks();

        assertDroppedWithNothingForwarded();
    }

    @Test
    void pendingVerdictStillHasTheHandshakeDeadline() {
        channel.freezeTime();
        acceptor.verdict = new CompletableFuture<>();
        start();
        write(WireBytes.concat(good(1, 2), AFTER));
        channel.advanceTimeBy(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertDroppedWithNothingForwarded();

        // A verdict arriving after the close must not resurrect or forward anything.
        acceptor.verdict.complete(null);
        channel.runPendingTasks();
        assertDroppedWithNothingForwarded();
    }

    @Test
    void exceptionDuringHandshakeCloses() {
        start();
        write(Arrays.copyOf(good(1, 2), 10));
        channel.pipeline().fireExceptionCaught(new IllegalStateException("boom"));
        assertTrue(acceptor.seen.isEmpty());
        assertDroppedWithNothingForwarded();
    }

    private static byte[] filled(int n, int value) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) value);
        return b;
    }
}
