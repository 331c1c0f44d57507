package org.jmscclpp.bootstrap.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ResourceLeakDetector;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link FrameEncoder} on {@link EmbeddedChannel}s: the header follows the diagram of {@link Frame},
 * the payload follows without a copy, frames come back whole through {@link FrameDecoder}, and every
 * buffer is released, also when the write fails. Netty's leak detector runs at its strictest.
 */
class FrameEncoderTest {

    private static final int MAX = 4096;
    private static ResourceLeakDetector.Level leakLevel;

    private final EmbeddedChannel encoder = new EmbeddedChannel(new FrameEncoder());
    private final EmbeddedChannel decoder = new EmbeddedChannel(new FrameDecoder(MAX));
    /** Every buffer this test made or saw: each must be released by the end. */
    private final List<ByteBuf> tracked = new ArrayList<>();

    @BeforeAll
    static void paranoidLeakDetection() {
        leakLevel = ResourceLeakDetector.getLevel();
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
    }

    @AfterAll
    static void restoreLeakDetection() {
        ResourceLeakDetector.setLevel(leakLevel);
    }

    @AfterEach
    void releasedEverything() {
        assertFalse(encoder.finishAndReleaseAll(), "the encoder left outbound buffers unread");
        assertFalse(decoder.finishAndReleaseAll(), "the decoder left frames unread");
        for (ByteBuf b : tracked) {
            assertEquals(0, b.refCnt(), "a buffer was not released: " + b);
        }
    }

    /** A pooled payload (the leak detector tracks pooled buffers) with {@code n} random bytes. */
    private ByteBuf payload(int n, int seed) {
        byte[] bytes = new byte[n];
        new Random(seed).nextBytes(bytes);
        ByteBuf b = encoder.alloc().buffer(n).writeBytes(bytes);
        tracked.add(b);
        return b;
    }

    /** Everything the encoder wrote since the last call, in order. */
    private List<ByteBuf> written() {
        List<ByteBuf> out = new ArrayList<>();
        for (ByteBuf b = encoder.readOutbound(); b != null; b = encoder.readOutbound()) {
            tracked.add(b);
            out.add(b);
        }
        return out;
    }

    /** Feeds what the encoder wrote to the decoder; returns the next decoded frame, released, as its fields. */
    private Decoded decodeWritten() {
        for (ByteBuf b : written()) {
            decoder.writeInbound(b);
        }
        Frame f = decoder.readInbound();
        if (f == null) {
            return null;
        }
        tracked.add(f.payload());
        try {
            return new Decoded(f.kind(), f.flags(), f.channel(), WireBytes.bytes(f.payload()));
        } finally {
            f.release();
        }
    }

    private record Decoded(byte kind, byte flags, long channel, byte[] payload) {
    }

    @Test
    void headerFollowsTheDiagramAndALargePayloadFollowsWithoutACopy() {
        int bytes = FrameEncoder.COPY_LIMIT + 1;
        ByteBuf payload = payload(bytes, 1);
        assertTrue(encoder.writeOutbound(new Frame(Frame.USER, Frame.LAST, 0x0102030405060708L, payload)));
        List<ByteBuf> out = written();
        assertEquals(2, out.size(), "the header, then the payload");
        ByteBuf header = out.get(0);
        assertEquals(Frame.LENGTH_BYTES + Frame.HEADER_BYTES, header.readableBytes());
        assertEquals(Frame.HEADER_BYTES + bytes, header.getIntLE(0), "offset 0: length of the rest, little-endian");
        assertEquals(Frame.USER, header.getByte(4), "offset 4: kind");
        assertEquals(Frame.LAST, header.getByte(5), "offset 5: flags");
        assertEquals(0, header.getShortLE(6), "offset 6: reserved");
        assertEquals(0x0102030405060708L, header.getLongLE(8), "offset 8: channel, little-endian");
        assertEquals(0x08, header.getByte(8), "little-endian: the low byte first");
        assertSame(payload, out.get(1), "the payload buffer itself goes out, not a copy");
        assertEquals(1, payload.refCnt(), "the frame's reference passed to the written buffer");
        out.forEach(ByteBuf::release);
    }

    @Test
    void aSmallPayloadTravelsInTheHeadersBuffer() {
        ByteBuf payload = payload(FrameEncoder.COPY_LIMIT, 3);
        byte[] expected = ByteBufUtil.getBytes(payload);
        assertTrue(encoder.writeOutbound(new Frame(Frame.USER, (byte) 0, 9, payload)));
        List<ByteBuf> out = written();
        assertEquals(1, out.size(), "header and payload in one buffer");
        ByteBuf frame = out.getFirst();
        assertEquals(Frame.LENGTH_BYTES + Frame.HEADER_BYTES + FrameEncoder.COPY_LIMIT, frame.readableBytes());
        assertEquals(Frame.HEADER_BYTES + FrameEncoder.COPY_LIMIT, frame.getIntLE(0));
        assertArrayEquals(expected, ByteBufUtil.getBytes(frame, Frame.LENGTH_BYTES + Frame.HEADER_BYTES,
                FrameEncoder.COPY_LIMIT));
        assertEquals(0, payload.refCnt(), "the copied payload was released");
        out.forEach(ByteBuf::release);
    }

    @Test
    void emptyPayloadIsTheHeaderAlone() {
        assertTrue(encoder.writeOutbound(new Frame(Frame.GOODBYE, Frame.LAST, 2, Unpooled.EMPTY_BUFFER)));
        List<ByteBuf> out = written();
        assertEquals(1, out.size());
        assertEquals(Frame.LENGTH_BYTES + Frame.HEADER_BYTES, out.getFirst().readableBytes());
        assertEquals(Frame.HEADER_BYTES, out.getFirst().getIntLE(0));
        out.forEach(ByteBuf::release);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 1000, MAX})
    void roundTripsThroughTheDecoder(int bytes) {
        byte[] kinds = {Frame.USER, Frame.COLLECTIVE, Frame.CHECK_IN, Frame.WELCOME, Frame.FAILURE, Frame.GOODBYE};
        for (byte kind : kinds) {
            for (byte flags : new byte[] {0, Frame.LAST, (byte) 0xFE}) {
                ByteBuf payload = payload(bytes, kind * 31 + flags);
                byte[] expected = WireBytes.bytes(payload);
                encoder.writeOutbound(new Frame(kind, flags, -kind, payload));
                Decoded d = decodeWritten();
                assertEquals(kind, d.kind());
                assertEquals(flags, d.flags());
                assertEquals(-kind, d.channel());
                assertArrayEquals(expected, d.payload());
                assertEquals(0, payload.refCnt(), "the payload is released once written");
            }
        }
        assertNull(decodeWritten());
    }

    @Test
    void framesWrittenBackToBackComeOutInOrder() {
        ByteBuf[] payloads = {payload(10, 2), payload(0, 3), payload(MAX, 4)};
        byte[][] expected = new byte[payloads.length][];
        for (int i = 0; i < payloads.length; i++) {
            expected[i] = WireBytes.bytes(payloads[i]);
            encoder.write(new Frame(Frame.COLLECTIVE, i == payloads.length - 1 ? Frame.LAST : 0, 7, payloads[i]));
        }
        encoder.flush();
        ByteBuf stream = Unpooled.buffer();
        for (ByteBuf b : written()) {
            stream.writeBytes(b);
            b.release();
        }
        tracked.add(stream);
        decoder.writeInbound(stream);
        for (int i = 0; i < payloads.length; i++) {
            Frame f = decoder.readInbound();
            tracked.add(f.payload());
            try {
                assertArrayEquals(expected[i], WireBytes.bytes(f.payload()), "frame " + i);
                assertEquals(i == payloads.length - 1, f.last(), "LAST flag of frame " + i);
            } finally {
                f.release();
            }
        }
        assertNull(decoder.readInbound());
    }

    @Test
    void thePromiseCompletesOnceHeaderAndPayloadAreWritten() {
        ChannelPromise promise = encoder.newPromise();
        encoder.write(new Frame(Frame.FAILURE, Frame.LAST, 3, payload(FrameEncoder.COPY_LIMIT + 100, 5)), promise);
        assertFalse(promise.isDone(), "nothing is written before the flush");
        encoder.flush();
        assertTrue(promise.isSuccess());
        written().forEach(ByteBuf::release);
    }

    @Test
    void aWriteOnAClosedChannelFailsAndReleasesThePayload() {
        encoder.close();
        ByteBuf payload = payload(64, 6);
        ChannelFuture f = encoder.writeAndFlush(new Frame(Frame.USER, Frame.LAST, 1, payload));
        assertFalse(f.isSuccess());
        assertEquals(0, payload.refCnt(), "a frame that was not written still gives its payload back");
    }
}
