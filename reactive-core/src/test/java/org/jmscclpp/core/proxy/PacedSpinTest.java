package org.jmscclpp.core.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The proxy loop's spin before a park: long while work comes at a pace, the configured one otherwise. */
class PacedSpinTest {

    private static final long US = 1_000;
    private static final long IDLE_SPIN = 20 * US;

    @Test
    void nothingPacedYetSpinsTheConfiguredTime() {
        ProxyLoop.PacedSpin p = new ProxyLoop.PacedSpin(IDLE_SPIN);
        assertEquals(IDLE_SPIN, p.next(5_000 * US), "a pause is no pace");
        assertEquals(IDLE_SPIN, p.next(3 * US), "twice a short spell is below the configured spin");
    }

    @Test
    void spellsAtAPaceSpinTwiceTheLongestOfThem() {
        ProxyLoop.PacedSpin p = new ProxyLoop.PacedSpin(IDLE_SPIN);
        assertEquals(700 * US, p.next(350 * US));
        assertEquals(700 * US, p.next(2 * US), "a short spell between does not shorten it");
        assertEquals(700 * US, p.next(40 * 1_000 * US), "a pause between bursts is not counted");
        assertEquals(800 * US, p.next(400 * US));
    }

    @Test
    void aPaceForgottenAfterEightSpellsWithoutIt() {
        ProxyLoop.PacedSpin p = new ProxyLoop.PacedSpin(IDLE_SPIN);
        p.next(300 * US);
        for (int i = 0; i < ProxyLoop.PacedSpin.GAPS - 1; i++) {
            assertEquals(600 * US, p.next(2_000 * US), "remembered for " + (i + 1) + " more spells");
        }
        assertEquals(IDLE_SPIN, p.next(2_000 * US), "eight pauses in a row: back to the configured spin");
        assertEquals(2 * (ProxyLoop.PacedSpin.PACED_GAP_NANOS - 1), p.next(ProxyLoop.PacedSpin.PACED_GAP_NANOS - 1),
                "at most twice the pace bound");
    }
}
