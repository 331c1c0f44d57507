package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.jmscclpp.bootstrap.wire.WireBytes;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

/** The {@link Failure} payload: round trips, truncation, and a fuzz that decode never throws. */
class FailureTest {

    private static final int MAX_TEXT = 8192;

    private static JmscclppException roundTrip(JmscclppException e) {
        ByteBuf buf = Failure.encode(e);
        try {
            JmscclppException back = Failure.decode(e.code().ordinal(), buf);
            assertEquals(0, buf.readableBytes(), "decode must consume the whole payload");
            return back;
        } finally {
            buf.release();
            assertEquals(0, buf.refCnt());
        }
    }

    private static void assertSame(JmscclppException expected, JmscclppException actual) {
        assertEquals(expected.code(), actual.code());
        assertEquals(expected.rank(), actual.rank());
        assertEquals(expected.peer(), actual.peer());
        assertEquals(expected.tag(), actual.tag());
        assertEquals(expected.phase(), actual.phase());
        assertEquals(expected.detail(), actual.detail());
        assertEquals(expected.getMessage(), actual.getMessage());
    }

    @Test
    void everyCodeRoundTrips() {
        for (ErrorCode code : ErrorCode.values()) {
            JmscclppException e = JmscclppException.builder(code, "rank 3 went away: ünïcödé ✓ 𝄞")
                    .rank(1).peer(3).tag(-7).phase("allGather").build();
            assertSame(e, roundTrip(e));
        }
    }

    @Test
    void absentFieldsAndEmptyTextsRoundTrip() {
        JmscclppException e = JmscclppException.builder(ErrorCode.ABORTED, "").build();
        JmscclppException back = roundTrip(e);
        assertSame(e, back);
        assertEquals(JmscclppException.NONE, back.rank());
        assertEquals("", back.phase());
    }

    @Test
    void extremeIntegersRoundTrip() {
        JmscclppException e = JmscclppException.builder(ErrorCode.TIMEOUT, "x")
                .rank(Integer.MAX_VALUE).peer(-1).tag(Integer.MIN_VALUE + 1).phase("p").build();
        assertSame(e, roundTrip(e));
    }

    @Test
    void overlongTextIsTruncatedNotRefused() {
        String detail = "d".repeat(MAX_TEXT * 3);
        String phase = "p".repeat(MAX_TEXT + 1);
        JmscclppException back = roundTrip(JmscclppException.builder(ErrorCode.REMOTE_ERROR, detail)
                .phase(phase).build());
        assertEquals(ErrorCode.REMOTE_ERROR, back.code());
        assertEquals(detail.substring(0, MAX_TEXT), back.detail());
        assertEquals(phase.substring(0, MAX_TEXT), back.phase());
    }

    @Test
    void codeOutsideTheEnumIsMalformed() {
        JmscclppException e = JmscclppException.builder(ErrorCode.TIMEOUT, "x").build();
        for (long code : new long[] {-1, ErrorCode.values().length, Long.MAX_VALUE, Long.MIN_VALUE}) {
            ByteBuf buf = Failure.encode(e);
            try {
                assertMalformed(Failure.decode(code, buf));
            } finally {
                buf.release();
            }
        }
    }

    @Test
    void truncatedPayloadsAreMalformed() {
        JmscclppException e = JmscclppException.builder(ErrorCode.INVALID_USAGE, "detail text")
                .rank(0).phase("root check-in").build();
        ByteBuf full = Failure.encode(e);
        byte[] bytes = WireBytes.bytes(full);
        full.release();
        for (int n = 0; n < bytes.length; n++) {
            ByteBuf cut = Unpooled.wrappedBuffer(Arrays.copyOf(bytes, n));
            try {
                assertMalformed(Failure.decode(e.code().ordinal(), cut));
            } finally {
                cut.release();
            }
        }
    }

    @Test
    void lengthsBeyondTheTextLimitAreMalformed() {
        ByteBuf buf = Unpooled.buffer();
        buf.writeIntLE(0).writeIntLE(0).writeIntLE(0);
        buf.writeShortLE(0);
        buf.writeIntLE(-1); // detail length 4 GiB
        buf.writeZero(64);
        try {
            assertMalformed(Failure.decode(ErrorCode.TIMEOUT.ordinal(), buf));
        } finally {
            buf.release();
        }
    }

    private static void assertMalformed(JmscclppException e) {
        assertEquals(ErrorCode.REMOTE_ERROR, e.code());
        assertTrue(e.detail().contains("malformed"), e.getMessage());
    }

    /**
     * 100,000 payloads, half of them random bytes and half valid encodings with bytes flipped,
     * inserted, removed or length fields set to extremes: decode must always return an error,
     * never throw.
     */
    @Test
    void fuzzedPayloadsNeverThrow() {
        Random random = new Random(0x5EED_F00DL);
        byte[][] seeds = new byte[8][];
        for (int i = 0; i < seeds.length; i++) {
            String text = new String(Character.toChars(0x41 + i)).repeat(random.nextInt(40))
                    + (i % 2 == 0 ? "é✓𝄞" : "");
            JmscclppException e = JmscclppException.builder(ErrorCode.values()[i % ErrorCode.values().length], text)
                    .rank(random.nextInt()).peer(random.nextInt()).tag(random.nextInt()).phase(text).build();
            ByteBuf b = Failure.encode(e);
            seeds[i] = WireBytes.bytes(b);
            b.release();
        }
        int decodedOk = 0;
        for (int i = 0; i < 100_000; i++) {
            byte[] payload = i % 2 == 0 ? randomBytes(random) : mutate(random, seeds[random.nextInt(seeds.length)]);
            long code = random.nextInt(10) == 0 ? random.nextLong() : random.nextInt(ErrorCode.values().length + 1);
            ByteBuf buf = Unpooled.wrappedBuffer(payload);
            try {
                JmscclppException e = Failure.decode(code, buf);
                assertNotNull(e);
                assertNotNull(e.code());
                if (!e.detail().equals("a peer sent a malformed failure report")) {
                    decodedOk++;
                }
            } catch (RuntimeException t) {
                fail("decode threw on payload #" + i + " " + Arrays.toString(payload) + " code " + code, t);
            } finally {
                buf.release();
            }
        }
        // The mutations must exercise the success path too, or the fuzz only tests the first check.
        assertTrue(decodedOk > 1_000, "only " + decodedOk + " payloads decoded");
    }

    private static byte[] randomBytes(Random random) {
        byte[] b = new byte[random.nextInt(80)];
        random.nextBytes(b);
        return b;
    }

    private static byte[] mutate(Random random, byte[] seed) {
        byte[] b = seed.clone();
        int edits = 1 + random.nextInt(3);
        for (int k = 0; k < edits && b.length > 0; k++) {
            int at = random.nextInt(b.length);
            switch (random.nextInt(6)) {
                case 0 -> b[at] = (byte) random.nextInt(256);
                case 1 -> b = Arrays.copyOf(b, at);
                case 2 -> {
                    byte[] longer = Arrays.copyOf(b, b.length + 1 + random.nextInt(8));
                    random.nextBytes(longer);
                    System.arraycopy(b, 0, longer, 0, b.length);
                    b = longer;
                }
                case 3 -> setPhaseLength(b, random.nextBoolean() ? 0xFFFF : random.nextInt(MAX_TEXT + 2));
                case 4 -> setDetailLength(b, random.nextBoolean() ? -1 : random.nextInt(MAX_TEXT + 2));
                default -> b[at] = (byte) (random.nextBoolean() ? 0xC3 : 0xF0); // start of a multi-byte UTF-8 char
            }
        }
        return b;
    }

    private static void setPhaseLength(byte[] b, int length) {
        if (b.length >= 14) {
            b[12] = (byte) length;
            b[13] = (byte) (length >>> 8);
        }
    }

    private static void setDetailLength(byte[] b, int length) {
        if (b.length >= 14) {
            int phaseLength = (b[12] & 0xFF) | (b[13] & 0xFF) << 8;
            int at = 14 + phaseLength;
            if (at + 4 <= b.length) {
                byte[] le = {(byte) length, (byte) (length >>> 8), (byte) (length >>> 16), (byte) (length >>> 24)};
                System.arraycopy(le, 0, b, at, 4);
            }
        }
    }

    @Test
    void invalidUtf8DecodesToReplacementCharacters() {
        ByteBuf buf = Unpooled.buffer();
        buf.writeIntLE(1).writeIntLE(2).writeIntLE(3);
        buf.writeShortLE(1).writeByte(0xFF);
        byte[] detail = {(byte) 0xC3, 'a'};
        buf.writeIntLE(detail.length).writeBytes(detail);
        try {
            JmscclppException e = Failure.decode(ErrorCode.SYSTEM_ERROR.ordinal(), buf);
            assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
            assertEquals(2, e.peer());
            assertEquals(new String(new byte[] {(byte) 0xFF}, StandardCharsets.UTF_8), e.phase());
        } finally {
            buf.release();
        }
    }
}
