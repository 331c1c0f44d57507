package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ByteCountTest {

    @Test
    void digitsWithABinaryUnitAndAnOptionalByteSuffix() {
        assertEquals(0, ByteCount.parse("0"));
        assertEquals(4096, ByteCount.parse("4096"));
        assertEquals(4096, ByteCount.parse("4k"));
        assertEquals(4096, ByteCount.parse("4KiB"));
        assertEquals(4096, ByteCount.parse("4kib"));
        assertEquals(64L << 10, ByteCount.parse("64KB"));
        assertEquals(256L << 20, ByteCount.parse("256M"));
        assertEquals(1L << 30, ByteCount.parse(" 1G "));
        assertEquals(2L << 40, ByteCount.parse("2TB"));
        assertEquals(7, ByteCount.parse("7B"));
        assertEquals(Long.MAX_VALUE, ByteCount.parse(Long.toString(Long.MAX_VALUE)));
        assertEquals((Long.MAX_VALUE >> 40) << 40, ByteCount.parse((Long.MAX_VALUE >> 40) + "T"));
    }

    @Test
    void anythingElseIsMinusOne() {
        for (String bad : new String[] {"", " ", "B", "KiB", "M", "-1", "+1", "1.5G", "12X", "1 G", "0x100", "1P",
                "G1", "1GG", "99999999999T", "9223372036854775808", "99999999999999999999999", "١٢"}) {
            assertEquals(-1, ByteCount.parse(bad), bad);
        }
    }
}
