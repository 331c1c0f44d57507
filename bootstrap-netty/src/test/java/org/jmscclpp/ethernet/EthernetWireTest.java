package org.jmscclpp.ethernet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.bootstrap.EventLoops;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.spi.TransportProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The frames of {@link EthernetWire} through the listener's decoder ({@link EthernetReceiver}) in
 * an {@link EmbeddedChannel}: good frames land and are acknowledged, split at any byte; bad ones
 * (garbage, a wrong or replayed proof of the secret, oversized, out of region, unknown region, out of sequence) get an ERROR
 * frame and a closed channel, and leave the buffer exactly as it was.
 */
class EthernetWireTest {

    private static final ByteBufAllocator ALLOC = ByteBufAllocator.DEFAULT;

    @TempDir
    Path dir;
    private HostBackend backend;
    private EthernetSession session;
    private DeviceBuffer buffer;
    private TransportProvider.Registration registration;
    private long region;

    @BeforeEach
    void open() {
        backend = HostBackend.open(dir);
        session = new EthernetSession(backend, InetAddress.getLoopbackAddress());
        buffer = backend.allocate(4096);
        registration = session.registerMemory(buffer, Transport.ETHERNET);
        region = EthernetWire.region(registration.handle());
        MemorySegment s = buffer.hostSegment();
        for (int i = 0; i < 4096; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) 0x5A);
        }
    }

    @AfterEach
    void close() {
        registration.close();
        buffer.close();
        session.close();
        backend.close();
        assertEquals(0, EventLoops.users());
    }

    private EmbeddedChannel channel() {
        return new EmbeddedChannel(new EthernetReceiver(session, EthernetSession.HANDSHAKE_TIMEOUT_NANOS));
    }

    /**
     * The socket's read loop goes on while each read fills its buffer, up to
     * {@link EthernetReceiveBuffers#READS_PER_WAKE} reads, and stops at a short read: a frame's
     * header and its lent body come in one wake-up of the event loop.
     */
    @Test
    void theReadLoopContinuesWhileReadsFillTheirBuffers() {
        EmbeddedChannel ch = channel();
        try {
            RecvByteBufAllocator.Handle handle = new EthernetReceiveBuffers(
                    new EthernetReceiver(session, EthernetSession.HANDSHAKE_TIMEOUT_NANOS)).newHandle();
            handle.reset(ch.config());
            for (int read = 1; read <= EthernetReceiveBuffers.READS_PER_WAKE; read++) {
                ByteBuf b = handle.allocate(ALLOC);
                try {
                    handle.attemptedBytesRead(b.writableBytes());
                    handle.lastBytesRead(b.writableBytes());
                    handle.incMessagesRead(1);
                } finally {
                    b.release();
                }
                boolean more = read < EthernetReceiveBuffers.READS_PER_WAKE;
                assertEquals(more, handle.continueReading(), "after read " + read);
            }
            handle.reset(ch.config());
            ByteBuf b = handle.allocate(ALLOC);
            handle.attemptedBytesRead(b.writableBytes());
            handle.lastBytesRead(b.writableBytes() - 1);
            handle.incMessagesRead(1);
            b.release();
            assertFalse(handle.continueReading(), "a short read ends the loop");
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    /**
     * A read that completes a lent body ends the read loop although it filled its buffer (Netty's
     * own rule reads again after a full read): another read would nearly always find the socket
     * empty, the writer waiting for this frame's ack, and the ack goes out only when the loop
     * ends. Netty's epoll loop is level-triggered, so bytes that did follow wake it again.
     */
    @Test
    void aReadThatCompletesALentBodyEndsTheReadLoop() {
        EthernetReceiver receiver = new EthernetReceiver(session, EthernetSession.HANDSHAKE_TIMEOUT_NANOS);
        EmbeddedChannel ch = new EmbeddedChannel(receiver);
        try {
            handshake(ch);
            ch.writeInbound(EthernetWire.writeHeader(ALLOC, 4096, 1, region, 0));
            RecvByteBufAllocator.Handle handle = new EthernetReceiveBuffers(receiver).newHandle();
            handle.reset(ch.config());
            ByteBuf lent = handle.allocate(ALLOC);
            assertEquals(4096, lent.writableBytes(), "the body's destination, lent");
            byte[] body = pattern(4096, 7);
            lent.writeBytes(body);
            handle.attemptedBytesRead(4096);
            handle.lastBytesRead(4096);
            handle.incMessagesRead(1);
            ch.writeInbound(lent);
            assertTrue(receiver.betweenFrames(), "the body is complete");
            assertFalse(handle.continueReading(), "the read that completed the body did not end the loop");
            for (int i = 0; i < body.length; i++) {
                assertEquals(body[i], buffer.hostSegment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            // the next read is between frames again: a full one goes on, as Netty's rule says
            ByteBuf next = handle.allocate(ALLOC);
            handle.attemptedBytesRead(next.writableBytes());
            handle.lastBytesRead(next.writableBytes());
            handle.incMessagesRead(1);
            next.release();
            assertTrue(handle.continueReading(), "a full read between frames");
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    /**
     * While no body is being read, a read takes at most {@link EthernetReceiveBuffers#HEADER_READ}
     * bytes however far the adaptive guess has grown, so a large frame's body goes mostly into its
     * destination (lent) rather than into a pooled buffer and then copied.
     */
    @Test
    void aReadBetweenFramesTakesLittleWhateverTheGuess() {
        EmbeddedChannel ch = channel();
        try {
            RecvByteBufAllocator.Handle handle = new EthernetReceiveBuffers(
                    new EthernetReceiver(session, EthernetSession.HANDSHAKE_TIMEOUT_NANOS)).newHandle();
            for (int wake = 0; wake < 20; wake++) {
                handle.reset(ch.config());
                ByteBuf b = handle.allocate(ALLOC);
                try {
                    assertTrue(b.writableBytes() <= EthernetReceiveBuffers.HEADER_READ,
                            "a read of " + b.writableBytes() + " bytes with a guess of " + handle.guess());
                    // reads that fill big buffers make the guess grow
                    handle.attemptedBytesRead(EthernetReceiveBuffers.MAX_POOLED);
                    handle.lastBytesRead(EthernetReceiveBuffers.MAX_POOLED);
                    handle.incMessagesRead(1);
                } finally {
                    b.release();
                }
                handle.readComplete();
            }
            assertTrue(handle.guess() > EthernetReceiveBuffers.HEADER_READ, "the guess grew to " + handle.guess());
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    /** Runs the dialler's side of the handshake on {@code ch} with this session's secret; drains the CHALLENGE. */
    private void handshake(EmbeddedChannel ch) {
        byte[] hello = EthernetHandshakes.hello();
        ch.writeInbound(Unpooled.wrappedBuffer(hello));
        byte[] challenge = readChallenge(ch);
        assertTrue(EthernetHandshakes.challengeProves(session.secret(), hello, challenge),
                "the listener proves its secret");
        ch.writeInbound(Unpooled.wrappedBuffer(EthernetHandshakes.proof(session.secret(), hello, challenge)));
    }

    private static byte[] readChallenge(EmbeddedChannel ch) {
        ByteBuf b = ch.readOutbound();
        assertNotNull(b, "the listener answers a hello with a CHALLENGE");
        try {
            byte[] out = new byte[b.readableBytes()];
            b.readBytes(out);
            return out;
        } finally {
            b.release();
        }
    }

    private ByteBuf write(long seq, long reg, long offset, byte[] body) {
        ByteBuf b = EthernetWire.writeHeader(ALLOC, body.length, seq, reg, offset);
        b.writeBytes(body);
        return b;
    }

    private static List<EthernetWire.Header> frames(EmbeddedChannel ch, List<String> reasons) {
        List<EthernetWire.Header> out = new ArrayList<>();
        for (ByteBuf b; (b = ch.readOutbound()) != null; ) {
            while (b.isReadable()) {
                EthernetWire.Header h = EthernetWire.readHeader(b);
                if (h.type() == EthernetWire.ERROR) {
                    reasons.add(b.readCharSequence(h.length(), StandardCharsets.UTF_8).toString());
                }
                out.add(h);
            }
            b.release();
        }
        return out;
    }

    private void assertUntouched() {
        MemorySegment s = buffer.hostSegment();
        for (int i = 0; i < 4096; i++) {
            assertEquals((byte) 0x5A, s.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " was changed");
        }
    }

    private static byte[] pattern(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed + i * 7);
        }
        return b;
    }

    @Test
    void endpointInfoAndHandleRoundTrip() {
        byte[] secret = pattern(32, 3);
        InetSocketAddress a = new InetSocketAddress(InetAddress.getLoopbackAddress(), 4242);
        EthernetWire.Listener l = EthernetWire.parseEndpointInfo(EthernetWire.endpointInfo(secret, a));
        assertArrayEquals(secret, l.secret());
        assertEquals(a, l.address());
        assertEquals(123456789L, EthernetWire.region(EthernetWire.handle(123456789L)));
        assertNull(EthernetWire.region(new byte[3]));
    }

    @Test
    void writesAndTokensLandInOrderAndAreAcknowledgedWhenASyncAsks() {
        EmbeddedChannel ch = channel();
        byte[] body = pattern(1000, 1);
        handshake(ch);
        ch.writeInbound(write(1, region, 100, body));
        ch.writeInbound(EthernetWire.token(ALLOC, 2, region, 2048, 0x1122334455667788L));
        List<String> reasons = new ArrayList<>();
        assertEquals(List.of(), frames(ch, reasons), "writes and tokens get no acknowledgement of their own");
        ch.writeInbound(EthernetWire.sync(ALLOC.buffer(), 3));
        List<EthernetWire.Header> out = frames(ch, reasons);
        assertEquals(List.of(), reasons);
        assertEquals(1, out.size(), "one ACK for the SYNC: " + out);
        assertEquals(EthernetWire.ACK, out.getFirst().type());
        assertEquals(3, out.getLast().sequence(), "everything applied is acknowledged");
        MemorySegment s = buffer.hostSegment();
        assertEquals(-1, MemorySegment.mismatch(s, 100, 1100, MemorySegment.ofArray(body), 0, 1000));
        assertEquals(0x1122334455667788L, s.get(ValueLayout.JAVA_LONG_UNALIGNED, 2048));
        assertEquals((byte) 0x5A, s.get(ValueLayout.JAVA_BYTE, 99));
        assertEquals((byte) 0x5A, s.get(ValueLayout.JAVA_BYTE, 1100));
        assertTrue(ch.isActive());
        assertFalse(ch.finish());
    }

    @Test
    void framesSplitAtEveryByteStillLand() {
        EmbeddedChannel ch = channel();
        byte[] body = pattern(300, 9);
        byte[] hello = EthernetHandshakes.hello();
        for (byte b : hello) {
            ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {b}));
        }
        byte[] challenge = readChallenge(ch);
        ByteBuf all = Unpooled.wrappedBuffer(Unpooled.wrappedBuffer(EthernetHandshakes.proof(session.secret(), hello,
                challenge)), write(1, region, 7, body), EthernetWire.token(ALLOC, 2, region, 8, 99),
                EthernetWire.sync(ALLOC.buffer(), 3));
        while (all.isReadable()) {
            ch.writeInbound(all.readRetainedSlice(1));
        }
        all.release();
        List<String> reasons = new ArrayList<>();
        assertEquals(3, frames(ch, reasons).getLast().sequence());
        assertEquals(List.of(), reasons);
        // the token at 8 overwrote bytes 8..15 of the write, after it: order holds
        assertEquals(99L, buffer.hostSegment().get(ValueLayout.JAVA_LONG_UNALIGNED, 8));
        assertEquals(body[0], buffer.hostSegment().get(ValueLayout.JAVA_BYTE, 7));
        assertEquals(body[299], buffer.hostSegment().get(ValueLayout.JAVA_BYTE, 306));
        ch.finishAndReleaseAll();
    }

    private void assertRejected(EmbeddedChannel ch, String expected) {
        List<String> reasons = new ArrayList<>();
        frames(ch, reasons);
        assertEquals(1, reasons.size(), "one ERROR frame: " + reasons);
        assertTrue(reasons.getFirst().contains(expected), reasons.getFirst());
        assertFalse(ch.isActive(), "the connection is closed");
        ch.finishAndReleaseAll();
        assertUntouched();
    }

    @Test
    void garbageIsRejected() {
        EmbeddedChannel ch = channel();
        ch.writeInbound(Unpooled.wrappedBuffer(pattern(200, 77)));
        assertRejected(ch, "not a jmscclpp ETHERNET connection");
    }

    @Test
    void aWrongSecretIsRejectedBeforeAnyWrite() {
        EmbeddedChannel ch = channel();
        byte[] wrong = session.secret().clone();
        wrong[31] ^= 1;
        byte[] hello = EthernetHandshakes.hello();
        ch.writeInbound(Unpooled.wrappedBuffer(hello));
        byte[] challenge = readChallenge(ch);
        ch.writeInbound(Unpooled.wrappedBuffer(Unpooled.wrappedBuffer(EthernetHandshakes.proof(wrong, hello, challenge)),
                write(1, region, 0, pattern(64, 1))));
        assertRejected(ch, "wrong proof of the endpoint secret");
    }

    @Test
    void aReplayedHandshakeIsRejectedBeforeAnyWrite() {
        EmbeddedChannel honest = channel();
        byte[] hello = EthernetHandshakes.hello();
        honest.writeInbound(Unpooled.wrappedBuffer(hello));
        byte[] proof = EthernetHandshakes.proof(session.secret(), hello, readChallenge(honest));
        honest.writeInbound(Unpooled.wrappedBuffer(proof));
        honest.writeInbound(write(1, region, 0, pattern(8, 1)));
        assertTrue(honest.isActive(), "the honest connection is accepted");
        honest.finishAndReleaseAll();
        buffer.hostSegment().fill((byte) 0x5A);

        // the recorded bytes from another connection: the listener's new nonce makes the proof wrong
        EmbeddedChannel replay = channel();
        replay.writeInbound(Unpooled.wrappedBuffer(Unpooled.wrappedBuffer(hello), Unpooled.wrappedBuffer(proof),
                write(1, region, 0, pattern(64, 1))));
        readChallenge(replay);
        assertRejected(replay, "wrong proof of the endpoint secret");
    }

    @Test
    void aHelloWithoutAProofIsClosedAtTheHandshakeDeadline() {
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.freezeTime();
        ch.pipeline().addLast(new EthernetReceiver(session, TimeUnit.MILLISECONDS.toNanos(500)));
        ch.writeInbound(Unpooled.wrappedBuffer(EthernetHandshakes.hello()));
        readChallenge(ch);
        ch.advanceTimeBy(500, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        assertRejected(ch, "no complete handshake within 500 ms");
    }

    @Test
    void anOversizedWriteIsRejected() {
        EmbeddedChannel ch = channel();
        ByteBuf h = EthernetWire.writeHeader(ALLOC, EthernetWire.MAX_CHUNK + 1, 1, region, 0);
        handshake(ch);
        ch.writeInbound(Unpooled.wrappedBuffer(h, Unpooled.wrappedBuffer(pattern(4096, 2))));
        assertRejected(ch, "a WRITE body is 1 to");
    }

    @Test
    void anOutOfRegionWriteIsRejected() {
        EmbeddedChannel ch = channel();
        handshake(ch);
        ch.writeInbound(Unpooled.wrappedBuffer(write(1, region, 4000, pattern(200, 3))));
        assertRejected(ch, "outside the region of 4096 bytes");
    }

    @Test
    void aNegativeOffsetIsRejected() {
        EmbeddedChannel ch = channel();
        handshake(ch);
        ch.writeInbound(Unpooled.wrappedBuffer(write(1, region, -8, pattern(8, 3))));
        assertRejected(ch, "outside the region");
    }

    @Test
    void anUnknownRegionIsRejected() {
        EmbeddedChannel ch = channel();
        handshake(ch);
        ch.writeInbound(Unpooled.wrappedBuffer(write(1, region + 1000, 0, pattern(8, 3))));
        assertRejected(ch, "no buffer of this process is registered");
    }

    @Test
    void aClosedRegistrationIsNoLongerWritable() {
        registration.close();
        EmbeddedChannel ch = channel();
        handshake(ch);
        ch.writeInbound(Unpooled.wrappedBuffer(write(1, region, 0, pattern(8, 3))));
        assertRejected(ch, "no buffer of this process is registered");
    }

    @Test
    void aSkippedSequenceNumberIsRejected() {
        EmbeddedChannel ch = channel();
        handshake(ch);
        ch.writeInbound(Unpooled.wrappedBuffer(write(2, region, 0, pattern(8, 3))));
        assertRejected(ch, "sequence number 2, expected 1");
    }

    @Test
    void aMisalignedTokenIsRejected() {
        EmbeddedChannel ch = channel();
        handshake(ch);
        ch.writeInbound(Unpooled.wrappedBuffer(EthernetWire.token(ALLOC, 1, region, 4, 1)));
        assertRejected(ch, "8-byte aligned");
    }

    @Test
    void anAckFromTheDiallerIsRejected() {
        EmbeddedChannel ch = channel();
        handshake(ch);
        ch.writeInbound(Unpooled.wrappedBuffer(EthernetWire.ack(ALLOC, 1)));
        assertRejected(ch, "WRITE, TOKEN and SYNC frames only");
    }

    @Test
    void aFrameThatAsksIsAcknowledgedAtTheEndOfItsReadWithoutASync() {
        EmbeddedChannel ch = channel();
        handshake(ch);
        ByteBuf w = ALLOC.buffer();
        EthernetWire.header(w, EthernetWire.WRITE, EthernetWire.ACK_WANTED, 16, 1, region, 0);
        w.writeBytes(pattern(16, 5));
        ch.writeInbound(w);
        List<String> reasons = new ArrayList<>();
        List<EthernetWire.Header> out = frames(ch, reasons);
        assertEquals(List.of(), reasons);
        assertEquals(1, out.size(), "one ACK: " + out);
        assertEquals(1, out.getFirst().sequence());
        // a TOKEN that asks after one that did not: one ACK covering both
        ch.writeInbound(EthernetWire.token(ALLOC.buffer(), 0, 2, region, 64, 7));
        assertEquals(List.of(), frames(ch, reasons));
        ch.writeInbound(EthernetWire.token(ALLOC.buffer(), EthernetWire.ACK_WANTED, 3, region, 72, 8));
        out = frames(ch, reasons);
        assertEquals(List.of(), reasons);
        assertEquals(3, out.getFirst().sequence());
        ch.finishAndReleaseAll();
    }

    @Test
    void aFlagOtherThanAckWantedIsRejected() {
        EmbeddedChannel ch = channel();
        handshake(ch);
        ByteBuf w = ALLOC.buffer();
        EthernetWire.header(w, EthernetWire.WRITE, 2, 16, 1, region, 0);
        w.writeBytes(pattern(16, 5));
        ch.writeInbound(w);
        assertRejected(ch, "non-zero reserved bytes");
    }

    @Test
    void aSyncWithABodyIsRejected() {
        EmbeddedChannel ch = channel();
        handshake(ch);
        ByteBuf bad = ALLOC.buffer();
        EthernetWire.header(bad, EthernetWire.SYNC, 0, 1, region, 0);
        ch.writeInbound(bad);
        assertRejected(ch, "a SYNC has no body, region or offset");
    }

    @Test
    void aSyncAfterAnOffloadedWriteIsAcknowledgedOnlyOnceTheWriteIsApplied() {
        session.forceDevicePaths(true);
        EmbeddedChannel ch = channel();
        byte[] body = pattern(3000, 3);
        handshake(ch);
        ch.writeInbound(write(1, region, 0, body));
        ch.writeInbound(EthernetWire.sync(ALLOC.buffer(), 2));
        List<String> reasons = new ArrayList<>();
        List<EthernetWire.Header> out = new ArrayList<>();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (out.isEmpty() && System.nanoTime() < until) {
            ch.runPendingTasks();   // the apply thread's completion runs on the channel's loop
            out.addAll(frames(ch, reasons));
            Thread.onSpinWait();
        }
        assertEquals(List.of(), reasons);
        assertEquals(2, out.getFirst().sequence(), "the SYNC is acknowledged with the write before it");
        assertEquals(-1, MemorySegment.mismatch(buffer.hostSegment(), 0, 3000, MemorySegment.ofArray(body), 0, 3000));
        ch.finishAndReleaseAll();
    }
}
