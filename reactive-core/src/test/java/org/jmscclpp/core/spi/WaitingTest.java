package org.jmscclpp.core.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

class WaitingTest {

    @Test
    void untilCompletesWhenTheConditionHoldsOnTheWaitingThread() {
        AtomicInteger polls = new AtomicInteger();
        StepVerifier.create(Waiting.until(() -> polls.incrementAndGet() > 100, Duration.ofSeconds(10),
                () -> JmscclppException.builder(ErrorCode.TIMEOUT, "late").build()))
                .expectComplete().verify(Duration.ofSeconds(10));
    }

    @Test
    void untilErrorsWithWhatTheConditionThrowsInsteadOfHanging() {
        AtomicInteger polls = new AtomicInteger();
        JmscclppException failure = JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the device failed").build();
        StepVerifier.create(Waiting.until(() -> {
                    if (polls.incrementAndGet() > 3) {
                        throw failure;
                    }
                    return false;
                }, Duration.ofSeconds(30), () -> JmscclppException.builder(ErrorCode.TIMEOUT, "late").build()))
                .expectErrorMatches(e -> e == failure)
                .verify(Duration.ofSeconds(5));
    }

    @Test
    void untilTimesOutWithTheGivenError() {
        StepVerifier.create(Waiting.until(() -> false, Duration.ofMillis(50),
                        () -> JmscclppException.builder(ErrorCode.TIMEOUT, "late").build()))
                .expectErrorMatches(e -> e instanceof JmscclppException j && j.code() == ErrorCode.TIMEOUT)
                .verify(Duration.ofSeconds(5));
    }

    @Test
    void aBackoffCountsItsIdleTimeFromItsFirstSpinAndForgetsItOnWork() {
        Waiting.Backoff b = new Waiting.Backoff(50_000, 0);
        assertEquals(0, b.idleNanos(), "busy: not idle");
        long t0 = System.nanoTime();
        while (b.spinning()) {
            Thread.onSpinWait();   // a spin budget of 0 ends at its first clock check
        }
        for (int i = 0; i < 20; i++) {
            b.parkUpTo(200_000);    // steps 1, 2, 4, ... µs, then 200 µs each
        }
        long idle = b.idleNanos();
        assertTrue(idle > 0 && idle <= System.nanoTime() - t0, "idle " + idle);
        b.reset();
        assertEquals(0, b.idleNanos(), "work arrived");
    }
}
