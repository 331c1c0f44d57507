package org.jmscclpp.core.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class CallDescriptorTest {

    private static String name(int algorithm) {
        return algorithm == 13 ? "direct" : "algorithm " + algorithm;
    }

    @Test
    void flagsSurviveTheFourWordsAndNameTheForm() {
        long location = CallDescriptor.location(7, 4096);
        CallDescriptor send = new CallDescriptor(CollectiveKind.SEND, DataType.FLOAT32, null, 13,
                CallDescriptor.DIRECT | CallDescriptor.INLINE, 3, 100, location, 0);
        long[] words = send.words();
        assertEquals(2L | 1L, (words[0] >>> 32) & 0xFF, "flags in bits 32-39 of word 0");
        CallDescriptor back = CallDescriptor.decode(words, 0);
        assertEquals(send, back);
        assertArrayEquals(words, back.words());
        assertTrue(back.direct());
        assertTrue(back.inline());
        assertEquals("send(count 100, float, peer 3) by direct on registered buffers",
                back.describe(CallDescriptorTest::name));

        CallDescriptor staged = new CallDescriptor(CollectiveKind.RECV, DataType.FLOAT32, null, 13, 0, 0, 101, 0, 0);
        CallDescriptor inline = new CallDescriptor(CollectiveKind.SEND, DataType.FLOAT32, null, 13,
                CallDescriptor.INLINE, 3, 100, 0, 0);
        assertFalse(staged.inline());
        CallDescriptor direct = new CallDescriptor(CollectiveKind.SEND, DataType.FLOAT32, null, 13,
                CallDescriptor.DIRECT, 3, 100, location, 0);
        assertEquals(send, direct.with(CallDescriptor.INLINE));
        assertEquals(direct.word0() | 2L << 32, direct.with(CallDescriptor.INLINE).word0(),
                "INLINE is bit 1 of the flags, bit 33 of word 0 (collectives.cu's kInlineFlag)");
        assertTrue(staged.describe(CallDescriptorTest::name).endsWith(" staged"));
        assertTrue(inline.describe(CallDescriptorTest::name).endsWith(" inline"));
    }

    @Test
    void aSendAndAReceiveThatDisagreeOnTheCountAreNamedWithBoth() {
        CallDescriptor send = new CallDescriptor(CollectiveKind.SEND, DataType.FLOAT32, null, 13,
                CallDescriptor.INLINE, 0, 100, 0, 0);
        CallDescriptor recv = new CallDescriptor(CollectiveKind.RECV, DataType.FLOAT32, null, 13, 0, 3, 101, 0, 0);
        String why = CallDescriptor.pointToPointMismatch(3, send, 0, recv, CallDescriptorTest::name).orElseThrow();
        assertTrue(why.contains("rank 3 send(count 100") && why.contains("rank 0 recv(count 101"), why);
        CallDescriptor agreeing = new CallDescriptor(CollectiveKind.RECV, DataType.FLOAT32, null, 13, 0, 3, 100, 0, 0);
        assertTrue(CallDescriptor.pointToPointMismatch(3, send, 0, agreeing, CallDescriptorTest::name).isEmpty(),
                "the INLINE flag is the sender's business: not compared");
    }

    @Test
    void anAllToAllStagedInPlaceBesideOneOutOfPlaceSaysWhyTheRanksDiffer() {
        long location = CallDescriptor.location(1, 0);
        CallDescriptor outOfPlace = new CallDescriptor(CollectiveKind.ALL_TO_ALL, DataType.FLOAT32, null, 12,
                CallDescriptor.DIRECT, -1, 1L << 26, location, location);
        CallDescriptor stagedInPlace = new CallDescriptor(CollectiveKind.ALL_TO_ALL, DataType.FLOAT32, null, 12,
                CallDescriptor.STAGED_IN_PLACE, -1, 1L << 26, 0, 0);
        CallDescriptor back = CallDescriptor.decode(stagedInPlace.words(), 1);
        assertEquals(stagedInPlace, back);
        assertTrue(back.stagedInPlace() && !back.direct());
        assertEquals(4L, (back.word0() >>> 32) & 0xFF, "STAGED_IN_PLACE is bit 2 of the flags");

        String why = CallDescriptor.mismatch(List.of(outOfPlace, stagedInPlace), CallDescriptorTest::name)
                .orElseThrow();
        assertTrue(why.contains("rank 1 has the call in place on registered buffers larger than the staging areas")
                && why.contains("CollectiveOptions.scratchBytes"), why);
        String other = CallDescriptor.mismatch(List.of(stagedInPlace, outOfPlace), CallDescriptorTest::name)
                .orElseThrow();
        assertTrue(other.contains("rank 0 alltoall(count 67108864, float) by algorithm 12 in place, staged (larger than"
                + " the staging areas)") && other.contains("rank 1 has registered buffers"), other);
        assertTrue(CallDescriptor.mismatch(List.of(stagedInPlace, stagedInPlace), CallDescriptorTest::name)
                .isEmpty(), "every rank in place: they agree");
    }
}
