package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

class BootstrapOptionsTest {

    @Test
    void theBootstrapTimeoutIsReadInSeconds() {
        assertEquals(Duration.ofMillis(1500), BootstrapOptions.builderFrom(Map.of("MSCCLPP_BOOTSTRAP_TIMEOUT", "1.5"))
                .build().initTimeout());
        assertEquals(Duration.ofDays(365), BootstrapOptions.builderFrom(Map.of("MSCCLPP_BOOTSTRAP_TIMEOUT", "31536000"))
                .build().initTimeout());
    }

    /**
     * A timeout whose deadline overflows nanoTime arithmetic is refused where it is read: it passed, and every rank of
     * {@code MSCCLPP_BOOTSTRAP_TIMEOUT=99999999999 mpirun -np 2 ...} died of an ArithmeticException in its rendezvous.
     */
    @Test
    void aTimeoutBeyondAYearIsInvalidUsageNamingTheVariable() {
        for (String seconds : new String[] {"99999999999", "1e300", Long.toString(Long.MAX_VALUE)}) {
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> BootstrapOptions.builderFrom(Map.of("MSCCLPP_BOOTSTRAP_TIMEOUT", seconds)));
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
            assertTrue(e.detail().contains("MSCCLPP_BOOTSTRAP_TIMEOUT must be at most 31536000 seconds"), e.detail());
        }
    }

    /** A positive value below a nanosecond is refused naming the variable, not the builder's initTimeout of PT0S. */
    @Test
    void aTimeoutBelowANanosecondIsInvalidUsageNamingTheVariable() {
        for (String seconds : new String[] {"1e-12", "0.0000000001"}) {
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> BootstrapOptions.builderFrom(Map.of("MSCCLPP_BOOTSTRAP_TIMEOUT", seconds)));
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
            assertTrue(e.detail().contains("MSCCLPP_BOOTSTRAP_TIMEOUT must be a positive number of seconds, got '"
                    + seconds + "'"), e.detail());
        }
        assertEquals(Duration.ofNanos(1), BootstrapOptions.builderFrom(Map.of("MSCCLPP_BOOTSTRAP_TIMEOUT", "1e-9"))
                .build().initTimeout());
    }

    /** A caller's "forever" given to the builder is cut to a year, which no deadline arithmetic overflows. */
    @Test
    void theBuildersForeverIsAYear() {
        BootstrapOptions o = BootstrapOptions.builderFrom(Map.of()).operationTimeout(Duration.ofSeconds(Long.MAX_VALUE))
                .initTimeout(java.time.temporal.ChronoUnit.FOREVER.getDuration()).build();
        assertEquals(BootstrapOptions.MAX_TIMEOUT, o.operationTimeout());
        assertEquals(BootstrapOptions.MAX_TIMEOUT, o.initTimeout());
    }
}
