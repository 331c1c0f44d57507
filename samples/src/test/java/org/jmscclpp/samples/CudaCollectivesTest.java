package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.junit.jupiter.api.Test;

/**
 * What the samples and the bench decide for the CUDA backend without a GPU: the algorithms
 * {@code --algo} takes there come from the CUDA engine on the class path (its tuning table's
 * choices first), and the data kernels' modules are one per type and reduction.
 */
class CudaCollectivesTest {

    @Test
    void everyKindHasTheCudaEnginesAlgorithmsTheDirectOneFirst() {
        // one host's algorithms, the default first, then the hierarchical ones for jobs across hosts (flat: small calls)
        Map<CollectiveKind, List<String>> expected = Map.of(
                CollectiveKind.ALL_REDUCE, List.of("rsag", "ll16", "push", "ce", "hier", "flat"),
                CollectiveKind.ALL_GATHER, List.of("memory", "ll16", "ce", "hier", "flat"),
                CollectiveKind.REDUCE_SCATTER, List.of("rs", "ll16", "hier", "flat"),
                CollectiveKind.BROADCAST, List.of("memory", "ll16", "push", "ce", "hier", "flat"),
                CollectiveKind.REDUCE, List.of("rs", "ll16", "push", "hier", "flat"),
                CollectiveKind.ALL_TO_ALL, List.of("memory", "ll16", "ce", "hier", "flat"),
                CollectiveKind.SEND, List.of("direct", "ce", "hier"));
        for (CollectiveKind kind : CollectiveSample.KINDS) {
            List<String> names = CollectiveJob.algorithms("cuda", kind).stream().filter(a -> !a.startsWith("test-"))
                    .toList();
            assertEquals(expected.get(kind), names, kind.label());
            assertTrue(!names.contains("port"), "the port algorithms were not carried into the library");
        }
        // the host engine: one algorithm over shared memory, and the hierarchical ones for jobs across hosts
        assertEquals(List.of("rsag", "hier", "flat"), CollectiveJob.algorithms("host", CollectiveKind.ALL_REDUCE).stream()
                .filter(a -> !a.startsWith("test-")).toList());
        assertEquals(List.of(), CollectiveJob.algorithms("gpu", CollectiveKind.ALL_REDUCE).stream()
                .filter(a -> !a.startsWith("test-")).toList());
    }

    @Test
    void theDataKernelsAreCompiledPerTypeAndReduction() {
        assertEquals("coll_data-float-sum", CudaCollectiveData.moduleName(DataType.FLOAT32, ReduceOp.SUM));
        assertEquals("coll_data-f8e4m3-move", CudaCollectiveData.moduleName(DataType.FP8_E4M3, null));
        assertTrue(CudaCollectiveData.source(DataType.BFLOAT16, ReduceOp.MAX).startsWith(
                "#define COLLDATA_T 9\n#define COLLDATA_OP 2\n"));
        assertTrue(CudaCollectiveData.source(DataType.INT8, null).startsWith("#define COLLDATA_T 0\n#define COLLDATA_OP -1\n"));
    }
}
