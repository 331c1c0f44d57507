package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class UniqueIdTest {

    private static byte[] sample() {
        byte[] b = new byte[UniqueId.BYTES];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (i * 37 + 11);
        }
        return b;
    }

    private static void assertInvalid(Runnable r, String... parts) {
        JmscclppException e = assertThrows(JmscclppException.class, r::run);
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals("unique id", e.phase());
        for (String part : parts) {
            assertTrue(e.getMessage().contains(part), () -> "'" + part + "' not in: " + e.getMessage());
        }
    }

    @Test
    void isAHundredAndTwentyEightBytes() {
        assertEquals(128, UniqueId.BYTES);
        assertArrayEquals(sample(), UniqueId.fromBytes(sample()).toBytes());
    }

    @Test
    void hexFormRoundTrips() {
        UniqueId id = UniqueId.fromBytes(sample());
        String hex = id.toString();
        assertEquals(256, hex.length());
        assertTrue(hex.matches("[0-9a-f]{256}"), hex);
        assertEquals("0b30", hex.substring(0, 4));
        assertEquals(id, UniqueId.parse(hex));
        assertEquals(id, UniqueId.parse("  " + hex.toUpperCase(Locale.ROOT) + "\n"));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 127, 129, 256})
    void wrongByteCountIsInvalidUsage(int length) {
        assertInvalid(() -> UniqueId.fromBytes(new byte[length]), "128 bytes", "got " + length);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 2, 254, 255, 257, 258})
    void wrongHexLengthIsInvalidUsage(int digits) {
        assertInvalid(() -> UniqueId.parse("a".repeat(digits)), "256 hex digits", "got " + digits);
    }

    @Test
    void junkIsInvalidUsage() {
        String junk = "zz" + "00".repeat(127);
        JmscclppException e = assertThrows(JmscclppException.class, () -> UniqueId.parse(junk));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertInstanceOf(IllegalArgumentException.class, e.getCause());
        assertInvalid(() -> UniqueId.parse("0x" + "00".repeat(127)), "hex digits only");
    }

    @Test
    void equalityFollowsTheBytes() {
        UniqueId a = UniqueId.fromBytes(sample());
        UniqueId b = UniqueId.fromBytes(sample());
        byte[] other = sample();
        other[UniqueId.BYTES - 1] ^= 1;
        UniqueId c = UniqueId.fromBytes(other);
        assertEquals(a, a);
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertNotEquals(a, c);
        assertNotEquals(a.hashCode(), c.hashCode());
        assertNotEquals(a, (Object) a.toString());
        assertNotEquals(null, a);
    }

    @Test
    void neverSharesItsBytes() {
        byte[] source = sample();
        UniqueId id = UniqueId.fromBytes(source);
        source[0] ^= 0x7f;
        assertArrayEquals(sample(), id.toBytes(), "changing the input must not change the id");

        byte[] out = id.toBytes();
        out[1] ^= 0x7f;
        assertArrayEquals(sample(), id.toBytes(), "changing a copy must not change the id");
        assertEquals(UniqueId.fromBytes(sample()), id);
    }
}
