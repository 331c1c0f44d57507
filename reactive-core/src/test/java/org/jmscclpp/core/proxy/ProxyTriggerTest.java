package org.jmscclpp.core.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The 128-bit trigger layout: exact bit positions, range checks, and encode/decode round trips. */
class ProxyTriggerTest {

    @Test
    void fieldsLandOnMscclppBitPositions() {
        ProxyTrigger t = ProxyTrigger.of(ProxyTrigger.DATA | ProxyTrigger.SYNC, 0x1A5, 0x89AB_CDEFL, 0x0F3,
                0x1234_5678L, 0xCAFE_BABEL, 0x2C7);
        assertEquals(0x1234_5678_CAFE_BABEL, t.fst());
        // MSCCL++: snd = ((((sem << 3 | type) << 9 | dstId) << 9 | srcId) << 32) | dstOffset
        long expected = ((((0x2C7L << 3 | 5) << 9 | 0x1A5) << 9 | 0x0F3) << 32) | 0x89AB_CDEFL;
        assertEquals(expected, t.snd());
        assertEquals(0x2C7L << 53 | 5L << 50 | 0x1A5L << 41 | 0x0F3L << 32 | 0x89AB_CDEFL, t.snd());
        assertEquals(0, t.snd() & (1L << 63), "the commit bit belongs to the fifo");
        assertEquals(0xCAFE_BABEL, t.size());
        assertEquals(0x1234_5678L, t.srcOffset());
        assertEquals(0x89AB_CDEFL, t.dstOffset());
        assertEquals(0x0F3, t.srcMemoryId());
        assertEquals(0x1A5, t.dstMemoryId());
        assertEquals(5, t.type());
        assertEquals(0x2C7, t.semaphoreId());
        assertTrue(t.hasData());
        assertFalse(t.hasFlag());
        assertTrue(t.hasSync());
    }

    @Test
    void largestFieldsFillEveryBitButTheCommitBit() {
        ProxyTrigger t = ProxyTrigger.of(7, ProxyTrigger.MAX_MEMORY_ID, ProxyTrigger.MAX_SIZE, ProxyTrigger.MAX_MEMORY_ID,
                ProxyTrigger.MAX_SIZE, ProxyTrigger.MAX_SIZE, ProxyTrigger.MAX_SEMAPHORE_ID);
        assertEquals(-1L, t.fst());
        assertEquals(Long.MAX_VALUE, t.snd());
        ProxyTrigger zero = ProxyTrigger.of(ProxyTrigger.FLAG, 0, 0, 0, 0, 0, 0);
        assertEquals(0, zero.fst());
        assertEquals(2L << 50, zero.snd());
    }

    @Test
    void eachFieldOutOfRangeIsInvalidUsageNamingFieldAndValue() {
        long big = ProxyTrigger.MAX_SIZE + 1;
        rejects("type", "0", () -> ProxyTrigger.of(0, 0, 0, 0, 0, 0, 0));
        rejects("type", "8", () -> ProxyTrigger.of(8, 0, 0, 0, 0, 0, 0));
        rejects("type", "-1", () -> ProxyTrigger.of(-1, 0, 0, 0, 0, 0, 0));
        rejects("dstMemoryId", "512", () -> ProxyTrigger.of(1, 512, 0, 0, 0, 0, 0));
        rejects("dstMemoryId", "-1", () -> ProxyTrigger.of(1, -1, 0, 0, 0, 0, 0));
        rejects("dstOffset", Long.toString(big), () -> ProxyTrigger.of(1, 0, big, 0, 0, 0, 0));
        rejects("dstOffset", "-1", () -> ProxyTrigger.of(1, 0, -1, 0, 0, 0, 0));
        rejects("srcMemoryId", "512", () -> ProxyTrigger.of(1, 0, 0, 512, 0, 0, 0));
        rejects("srcMemoryId", "-7", () -> ProxyTrigger.of(1, 0, 0, -7, 0, 0, 0));
        rejects("srcOffset", Long.toString(big), () -> ProxyTrigger.of(1, 0, 0, 0, big, 0, 0));
        rejects("srcOffset", Long.toString(Long.MIN_VALUE), () -> ProxyTrigger.of(1, 0, 0, 0, Long.MIN_VALUE, 0, 0));
        rejects("size", Long.toString(big), () -> ProxyTrigger.of(1, 0, 0, 0, 0, big, 0));
        rejects("size", "-1", () -> ProxyTrigger.of(1, 0, 0, 0, 0, -1, 0));
        rejects("semaphoreId", "1024", () -> ProxyTrigger.of(1, 0, 0, 0, 0, 0, 1024));
        rejects("semaphoreId", "-1", () -> ProxyTrigger.of(1, 0, 0, 0, 0, 0, -1));
        for (int type = 1; type <= 7; type++) {
            assertEquals(type, ProxyTrigger.of(type, 0, 0, 0, 0, 0, 0).type());
        }
    }

    private static void rejects(String field, String value, Executable call) {
        JmscclppException e = assertThrows(JmscclppException.class, call);
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains("field " + field + " is " + value + ","), e.getMessage());
        assertEquals("proxy trigger", e.phase());
    }

    @Test
    void decodeRefusesTheCommitBitAndTakesAnythingElse() {
        JmscclppException e = assertThrows(JmscclppException.class, () -> ProxyTrigger.decode(0, 1L << 63));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains("commit bit"), e.getMessage());
        assertThrows(JmscclppException.class, () -> ProxyTrigger.decode(5, -1L));
        ProxyTrigger zero = ProxyTrigger.decode(0, 0);
        assertEquals(0, zero.type());
        assertTrue(zero.toString().contains("no type"), zero.toString());
        ProxyTrigger raw = ProxyTrigger.decode(-1L, Long.MAX_VALUE);
        assertEquals(-1L, raw.fst());
        assertEquals(Long.MAX_VALUE, raw.snd());
    }

    @Test
    void seededRandomTriggersRoundTripThroughTheirWords() {
        SplittableRandom random = new SplittableRandom(0x7121_66E5L);
        for (int i = 0; i < 20_000; i++) {
            int type = 1 + random.nextInt(7);
            int dst = random.nextInt(ProxyTrigger.MAX_MEMORY_ID + 1);
            long dstOffset = random.nextLong(ProxyTrigger.MAX_SIZE + 1);
            int src = random.nextInt(ProxyTrigger.MAX_MEMORY_ID + 1);
            long srcOffset = random.nextLong(ProxyTrigger.MAX_SIZE + 1);
            long size = random.nextLong(ProxyTrigger.MAX_SIZE + 1);
            int sem = random.nextInt(ProxyTrigger.MAX_SEMAPHORE_ID + 1);
            ProxyTrigger t = ProxyTrigger.of(type, dst, dstOffset, src, srcOffset, size, sem);
            String where = "trigger " + i + ": " + t;
            assertEquals(type, t.type(), where);
            assertEquals(dst, t.dstMemoryId(), where);
            assertEquals(dstOffset, t.dstOffset(), where);
            assertEquals(src, t.srcMemoryId(), where);
            assertEquals(srcOffset, t.srcOffset(), where);
            assertEquals(size, t.size(), where);
            assertEquals(sem, t.semaphoreId(), where);
            assertEquals((type & 1) != 0, t.hasData(), where);
            assertEquals((type & 2) != 0, t.hasFlag(), where);
            assertEquals((type & 4) != 0, t.hasSync(), where);
            ProxyTrigger decoded = ProxyTrigger.decode(t.fst(), t.snd());
            assertEquals(t, decoded, where);
            assertEquals(t.hashCode(), decoded.hashCode(), where);
            assertEquals(t.toString(), decoded.toString(), where);
            // raw words come back as they went in
            long fst = random.nextLong();
            long snd = random.nextLong() & Long.MAX_VALUE;
            ProxyTrigger r = ProxyTrigger.decode(fst, snd);
            assertEquals(fst, r.fst());
            assertEquals(snd, r.snd());
            if (r.type() != 0) {
                // the fields account for every bit: building from them gives the same words
                assertEquals(r, ProxyTrigger.of(r.type(), r.dstMemoryId(), r.dstOffset(), r.srcMemoryId(), r.srcOffset(),
                        r.size(), r.semaphoreId()), "raw trigger " + i);
            }
        }
    }

    @Test
    void equalityIsBothWords() {
        ProxyTrigger a = ProxyTrigger.decode(1, 2);
        assertEquals(a, ProxyTrigger.decode(1, 2));
        assertNotEquals(a, ProxyTrigger.decode(1, 3));
        assertNotEquals(a, ProxyTrigger.decode(2, 2));
        assertNotEquals(a, (Object) "ProxyTrigger");
        String s = ProxyTrigger.of(ProxyTrigger.DATA | ProxyTrigger.FLAG, 3, 16, 4, 32, 64, 9).toString();
        assertTrue(s.contains("DATA|FLAG") && s.contains("dst 3+16") && s.contains("src 4+32") && s.contains("size 64")
                && s.contains("semaphore 9"), s);
    }
}
