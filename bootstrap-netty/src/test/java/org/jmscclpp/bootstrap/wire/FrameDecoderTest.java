package org.jmscclpp.bootstrap.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link FrameDecoder} on an {@link EmbeddedChannel}, fed the bytes of {@link FrameEncoder} ({@link WireBytes#frame}). */
class FrameDecoderTest {

    private static final int MAX = 4096;

    private final EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(MAX));
    private final List<ByteBuf> handedIn = new ArrayList<>();
    private final List<Frame> decoded = new ArrayList<>();

    @AfterEach
    void releasedEverything() {
        channel.finishAndReleaseAll();
        for (Frame f : decoded) {
            assertEquals(0, f.refCnt(), "a decoded frame was not released");
        }
        for (ByteBuf b : handedIn) {
            assertEquals(0, b.refCnt(), "a buffer handed to the decoder was not released");
        }
    }

    private void write(byte[] bytes) {
        ByteBuf buf = channel.alloc().buffer(bytes.length).writeBytes(bytes);
        handedIn.add(buf);
        channel.writeInbound(buf);
    }

    /** The next decoded frame's fields and payload; the frame is released. */
    private record Seen(byte kind, byte flags, long channel, byte[] payload) {
        boolean last() {
            return (flags & Frame.LAST) != 0;
        }
    }

    private Seen next() {
        Frame f = channel.readInbound();
        if (f == null) {
            return null;
        }
        decoded.add(f);
        try {
            return new Seen(f.kind(), f.flags(), f.channel(), WireBytes.bytes(f.payload()));
        } finally {
            f.release();
        }
    }

    private static byte[] payload(int n, int seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** A frame with a hand-set length field, for lengths {@link FrameEncoder} never produces. */
    private static byte[] rawLength(long lengthField, int bodyBytes) {
        ByteBuf b = Unpooled.buffer(4 + bodyBytes);
        try {
            b.writeIntLE((int) lengthField);
            b.writeZero(bodyBytes);
            return WireBytes.bytes(b);
        } finally {
            b.release();
        }
    }

    @Test
    void oneFrameDecodesWithItsFields() {
        byte[] p = payload(100, 1);
        write(WireBytes.frame(Frame.USER, Frame.LAST, 0x0102030405060708L, p));
        Seen s = next();
        assertEquals(Frame.USER, s.kind());
        assertTrue(s.last());
        assertEquals(0x0102030405060708L, s.channel());
        assertArrayEquals(p, s.payload());
        assertNull(next());
    }

    @Test
    void frameSplitIntoSingleBytes() {
        byte[] p = payload(300, 2);
        byte[] wire = WireBytes.frame(Frame.COLLECTIVE, (byte) 0, 42, p);
        for (int i = 0; i < wire.length; i++) {
            assertNull(next(), "a frame came out after " + i + " of " + wire.length + " bytes");
            write(new byte[] {wire[i]});
        }
        Seen s = next();
        assertEquals(Frame.COLLECTIVE, s.kind());
        assertFalse(s.last());
        assertEquals(42, s.channel());
        assertArrayEquals(p, s.payload());
    }

    @Test
    void coalescedFramesComeOutInOrder() {
        byte[][] payloads = {payload(0, 3), payload(1, 4), payload(MAX, 5), payload(17, 6)};
        byte[][] wires = new byte[payloads.length][];
        for (int i = 0; i < payloads.length; i++) {
            wires[i] = WireBytes.frame(Frame.USER, i == payloads.length - 1 ? Frame.LAST : 0, 9, payloads[i]);
        }
        byte[] all = WireBytes.concat(wires);
        // Cut the stream at arbitrary points so frames are both coalesced and split.
        int[] cuts = {5, 20, all.length / 2, all.length - 3, all.length};
        int from = 0;
        for (int cut : cuts) {
            write(Arrays.copyOfRange(all, from, cut));
            from = cut;
        }
        for (int i = 0; i < payloads.length; i++) {
            Seen s = next();
            assertArrayEquals(payloads[i], s.payload(), "frame " + i);
            assertEquals(i == payloads.length - 1, s.last(), "LAST flag of frame " + i);
            assertEquals(9, s.channel());
        }
        assertNull(next());
    }

    @Test
    void everyKindAndFlagSurvives() {
        byte[] kinds = {Frame.USER, Frame.COLLECTIVE, Frame.CHECK_IN, Frame.WELCOME, Frame.FAILURE, Frame.GOODBYE,
                (byte) 0x7F};
        for (byte kind : kinds) {
            for (byte flags : new byte[] {0, Frame.LAST, (byte) 0xFE}) {
                write(WireBytes.frame(kind, flags, -1L, payload(3, kind)));
                Seen s = next();
                assertEquals(kind, s.kind());
                assertEquals(flags, s.flags());
                assertEquals((flags & 1) != 0, s.last());
                assertEquals(-1L, s.channel());
            }
        }
    }

    @Test
    void payloadOfExactlyTheLimitIsAccepted() {
        byte[] p = payload(MAX, 7);
        write(WireBytes.frame(Frame.USER, Frame.LAST, 0, p));
        assertArrayEquals(p, next().payload());
    }

    @Test
    void payloadOverTheLimitFailsOnTheLengthAloneBeforeBuffering() {
        // Only the length field and a few bytes arrive: the decoder must fail now, not wait for the body.
        byte[] header = rawLength(Frame.HEADER_BYTES + MAX + 1, 8);
        ByteBuf buf = channel.alloc().buffer().writeBytes(header);
        handedIn.add(buf);
        assertThrows(TooLongFrameException.class, () -> channel.writeInbound(buf));
        assertNull(next());
    }

    @ParameterizedTest
    @ValueSource(longs = {0x7FFFFFFFL, 0x80000000L, 0xFFFFFFFFL})
    void hugeOrNegativeLengthsAreTooLong(long length) {
        ByteBuf buf = channel.alloc().buffer().writeBytes(rawLength(length, 0));
        handedIn.add(buf);
        assertThrows(TooLongFrameException.class, () -> channel.writeInbound(buf));
        assertNull(next());
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 5, Frame.HEADER_BYTES - 1})
    void lengthShorterThanTheHeaderIsCorrupt(int length) {
        ByteBuf buf = channel.alloc().buffer().writeBytes(rawLength(length, length));
        handedIn.add(buf);
        CorruptedFrameException e = assertThrows(CorruptedFrameException.class, () -> channel.writeInbound(buf));
        assertTrue(e.getMessage().contains(Frame.HEADER_BYTES + "-byte header"), e.getMessage());
        assertNull(next());
    }

    @Test
    void emptyPayloadRoundTrips() {
        write(WireBytes.frame(Frame.GOODBYE, Frame.LAST, 0, new byte[0]));
        Seen s = next();
        assertEquals(Frame.GOODBYE, s.kind());
        assertEquals(0, s.payload().length);
    }
}
