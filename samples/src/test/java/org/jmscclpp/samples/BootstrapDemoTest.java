package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

class BootstrapDemoTest {

    private static byte[] gathered(BootstrapDemo.Card... cards) {
        byte[] all = new byte[cards.length * BootstrapDemo.CARD_BYTES];
        for (int r = 0; r < cards.length; r++) {
            System.arraycopy(BootstrapDemo.encode(cards[r]), 0, all, r * BootstrapDemo.CARD_BYTES,
                    BootstrapDemo.CARD_BYTES);
        }
        return all;
    }

    @Test
    void cardsRoundTripThroughAGatheredBuffer() {
        BootstrapDemo.Card a = new BootstrapDemo.Card(0, 100, 5_000, "node-a");
        BootstrapDemo.Card b = new BootstrapDemo.Card(1, 200, 7_000, "nœud-b");
        assertEquals(List.of(a, b), BootstrapDemo.check(gathered(a, b), 2, 0));
    }

    @Test
    void longHostNamesAreCutOnACharacterBoundary() {
        String host = "é".repeat(40);   // 80 bytes in UTF-8
        BootstrapDemo.Card c = BootstrapDemo.decode(BootstrapDemo.encode(new BootstrapDemo.Card(0, 1, 0, host)), 0);
        assertEquals("é".repeat(32), c.host());
        assertTrue(c.host().getBytes(StandardCharsets.UTF_8).length <= BootstrapDemo.HOST_BYTES);
    }

    @Test
    void aSlotWithTheWrongRankIsReported() {
        BootstrapDemo.Card a = new BootstrapDemo.Card(0, 100, 0, "h");
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> BootstrapDemo.check(gathered(a, a), 2, 1));
        assertEquals(ErrorCode.INTERNAL_ERROR, e.code());
        assertTrue(e.getMessage().contains("slot 1"), e.getMessage());
        assertEquals(1, e.rank());
    }

    @Test
    void aShortResultIsReported() {
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> BootstrapDemo.check(new byte[BootstrapDemo.CARD_BYTES], 2, 0));
        assertTrue(e.getMessage().contains("expected 2 x " + BootstrapDemo.CARD_BYTES), e.getMessage());
    }
}
