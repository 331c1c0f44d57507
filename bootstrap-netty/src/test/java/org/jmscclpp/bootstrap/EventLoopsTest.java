package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class EventLoopsTest {

    /**
     * {@code -Djmscclpp.bootstrap.ioThreads=-1} made every rank of {@code jmscclpp run} print Netty's stack trace
     * ({@code IllegalArgumentException: nThreads : -1 (expected: > 0)}), and {@code =abc} was dropped without a word.
     */
    @Test
    void aBadIoThreadsPropertyIsInvalidUsageNamingIt() {
        Assumptions.assumeTrue(EventLoops.users() == 0, "the shared group is up: the property is read when it starts");
        String before = System.getProperty(EventLoops.IO_THREADS_PROPERTY);
        try {
            for (String bad : new String[] {"-1", "0", "abc", "1.5"}) {
                System.setProperty(EventLoops.IO_THREADS_PROPERTY, bad);
                JmscclppException e = assertThrows(JmscclppException.class, EventLoops::acquire, bad);
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
                assertTrue(e.detail().equals("jmscclpp.bootstrap.ioThreads must be an integer of at least 1, got '"
                        + bad + "'"), e.detail());
                assertEquals(0, EventLoops.users());
            }
            System.setProperty(EventLoops.IO_THREADS_PROPERTY, "2");
            EventLoops.acquire();
            EventLoops.release();
        } finally {
            if (before == null) {
                System.clearProperty(EventLoops.IO_THREADS_PROPERTY);
            } else {
                System.setProperty(EventLoops.IO_THREADS_PROPERTY, before);
            }
        }
    }
}
