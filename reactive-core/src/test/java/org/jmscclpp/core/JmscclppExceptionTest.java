package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class JmscclppExceptionTest {

    @Test
    void messageCarriesEveryField() {
        JmscclppException e = JmscclppException.builder(ErrorCode.TIMEOUT, "no message within 1000 ms")
                .rank(2).peer(3).tag(7).phase("recv").build();
        assertEquals("TIMEOUT: rank 2, peer 3, tag 7, phase recv: no message within 1000 ms", e.getMessage());
        assertEquals(ErrorCode.TIMEOUT, e.code());
        assertEquals(2, e.rank());
        assertEquals(3, e.peer());
        assertEquals(7, e.tag());
        assertEquals("recv", e.phase());
        assertEquals("no message within 1000 ms", e.detail());
        assertNull(e.getCause());
        assertInstanceOf(RuntimeException.class, e);
    }

    @Test
    void messageWithoutFieldsIsCodeAndDetail() {
        JmscclppException e = JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "ring broken").build();
        assertEquals("INTERNAL_ERROR: ring broken", e.getMessage());
        assertEquals(JmscclppException.NONE, e.rank());
        assertEquals(JmscclppException.NONE, e.peer());
        assertEquals(JmscclppException.NONE, e.tag());
        assertEquals("", e.phase());
    }

    @Test
    void messageListsOnlyTheFieldsThatApply() {
        assertEquals("INVALID_USAGE: phase unique id: bad",
                JmscclppException.builder(ErrorCode.INVALID_USAGE, "bad").phase("unique id").build().getMessage());
        assertEquals("REMOTE_ERROR: peer 1, tag 0: gone",
                JmscclppException.builder(ErrorCode.REMOTE_ERROR, "gone").peer(1).tag(0).build().getMessage());
        assertEquals("ABORTED: rank 0, phase barrier: stop",
                JmscclppException.builder(ErrorCode.ABORTED, "stop").rank(0).phase("barrier").build().getMessage());
        assertEquals("SYSTEM_ERROR: tag -1: negative tags are still tags",
                JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "negative tags are still tags").tag(-1).build()
                        .getMessage());
    }

    @Test
    void keepsTheCause() {
        IOException io = new IOException("connection refused");
        JmscclppException e = JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "connect").cause(io).build();
        assertSame(io, e.getCause());
    }

    @Test
    void withRankCopiesEverythingButTheRank() {
        IOException io = new IOException("reset");
        JmscclppException original = JmscclppException.builder(ErrorCode.REMOTE_ERROR, "peer reset")
                .rank(0).peer(5).tag(9).phase("allGather").cause(io).build();
        JmscclppException relayed = original.withRank(4);
        assertEquals("REMOTE_ERROR: rank 4, peer 5, tag 9, phase allGather: peer reset", relayed.getMessage());
        assertEquals(ErrorCode.REMOTE_ERROR, relayed.code());
        assertEquals(4, relayed.rank());
        assertEquals(5, relayed.peer());
        assertEquals(9, relayed.tag());
        assertEquals("allGather", relayed.phase());
        assertEquals("peer reset", relayed.detail());
        assertSame(io, relayed.getCause());
        assertEquals(0, original.rank());
        assertEquals("REMOTE_ERROR: rank 0, peer 5, tag 9, phase allGather: peer reset", original.getMessage());
    }

    @Test
    void rejectsMissingCodeDetailOrPhase() {
        assertThrows(NullPointerException.class, () -> JmscclppException.builder(null, "x"));
        assertThrows(NullPointerException.class, () -> JmscclppException.builder(ErrorCode.TIMEOUT, null));
        assertThrows(NullPointerException.class,
                () -> JmscclppException.builder(ErrorCode.TIMEOUT, "x").phase(null));
    }
}
