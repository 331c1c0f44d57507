package org.jmscclpp.core.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

/** A call made without its element type or kind is INVALID_USAGE naming what is missing, as other bad arguments are. */
class CollectiveCallTest {

    @Test
    void aCallWithoutATypeOrKindIsInvalidUsage() {
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> CollectiveCall.allReduce(null, null, 0, null, ReduceOp.SUM));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains("all_reduce with a null type"), e.getMessage());
        assertEquals("all_reduce", e.phase());
        JmscclppException k = assertThrows(JmscclppException.class,
                () -> new CollectiveCall(null, null, null, 0, DataType.FLOAT32, null, -1, -1));
        assertEquals(ErrorCode.INVALID_USAGE, k.code());
        assertTrue(k.getMessage().contains("needs a kind"), k.getMessage());
    }
}
