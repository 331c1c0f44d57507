package org.jmscclpp.core.hierarchy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.jmscclpp.core.collective.DataType;
import org.junit.jupiter.api.Test;

/** {@link HierarchicalComm}'s own arithmetic (its calls run in HostCollectivesTest, over pretend hosts). */
class HierarchicalCommTest {

    /**
     * The hierarchical allReduce's AVG divides a sum once: the quotient of every type is the one
     * {@link org.jmscclpp.core.collective.Reductions#reduceBits} gives for an average, a sum of -0
     * included (it stays -0).
     */
    @Test
    void theHierarchicalAverageDividesASumAsReduceBitsAverages() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(8);
            s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, -0.0f);
            HierarchicalComm.divide(DataType.FLOAT32, s, 0, 1, 4);
            assertEquals(Float.floatToRawIntBits(-0.0f),
                    Float.floatToRawIntBits(s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0)));
            s.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0, -0.0);
            HierarchicalComm.divide(DataType.FLOAT64, s, 0, 1, 3);
            assertEquals(Double.doubleToRawLongBits(-0.0),
                    Double.doubleToRawLongBits(s.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0)));
            s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, 7.0f);
            HierarchicalComm.divide(DataType.FLOAT32, s, 0, 1, 2);
            assertEquals(3.5f, s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
            s.set(ValueLayout.JAVA_INT_UNALIGNED, 0, -7);
            HierarchicalComm.divide(DataType.INT32, s, 0, 1, 2);
            assertEquals(-3, s.get(ValueLayout.JAVA_INT_UNALIGNED, 0), "truncates toward zero");
            s.set(ValueLayout.JAVA_INT_UNALIGNED, 0, -2);
            HierarchicalComm.divide(DataType.UINT32, s, 0, 1, 2);
            assertEquals(0x7FFFFFFF, s.get(ValueLayout.JAVA_INT_UNALIGNED, 0), "unsigned division");
        }
    }
}
