package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.InMemoryBootstrap;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.nativebridge.LaunchConfig;
import org.junit.jupiter.api.Test;

/** What the CUDA collectives decide without a GPU: registration, backend and argument checks, grids. */
class CudaCollectivesTest {

    @Test
    void everyMovingKindHasMemoryAndPortOnCudaWithTheDefaultsTheIssueAsksFor() {
        assertEquals(List.of("memory", "port"), algorithms(CollectiveKind.ALLGATHER));
        assertEquals(List.of("memory", "port"), algorithms(CollectiveKind.ALLTOALL));
        assertEquals(List.of("memory", "port"), algorithms(CollectiveKind.SENDRECV));
        assertTrue(CollectiveAlgorithms.find(CollectiveKind.ALLGATHER, "cuda", "port").isPresent());
    }

    private static List<String> algorithms(CollectiveKind kind) {
        return CollectiveAlgorithms.of(kind, "cuda").stream().map(CollectiveAlgorithms.Entry::algorithm).toList();
    }

    @Test
    void aCudaCollectiveOnAnotherBackendIsInvalidUsageBeforeItMakesAnything() {
        InMemoryBootstrap bootstrap = InMemoryBootstrap.group(1).getFirst();
        try (HostBackend backend = HostBackend.open(); Communicator comm = Communicator.create(bootstrap, backend)) {
            CollectiveSetup setup = new CollectiveSetup(comm, 1 << 20, Duration.ofSeconds(5));
            for (CollectiveKind kind : List.of(CollectiveKind.ALLGATHER, CollectiveKind.ALLTOALL,
                    CollectiveKind.SENDRECV)) {
                for (CollectiveAlgorithms.Entry e : CollectiveAlgorithms.of(kind, "cuda")) {
                    JmscclppException x = assertThrows(JmscclppException.class, () -> e.factory().apply(setup),
                            e::toString);
                    assertEquals(ErrorCode.INVALID_USAGE, x.code(), x.getMessage());
                    assertTrue(x.getMessage().contains("needs the cuda backend, not host"), x.getMessage());
                }
            }
        }
    }

    @Test
    void runArgumentsAreCheckedAgainstSAndTheKind() {
        // allgather: count per rank, S = n x slice; 4 ranks, S = 4096 -> at most 1024 bytes per rank
        assertEquals(1024, CudaCollectiveBase.unitBytes(CollectiveKind.ALLGATHER, "memory", 4, 4096, 256,
                DataType.FLOAT32, true, 0));
        assertEquals(0, CudaCollectiveBase.unitBytes(CollectiveKind.ALLGATHER, "memory", 4, 4096, 0,
                DataType.FLOAT32, false, 0));
        assertEquals(512, CudaCollectiveBase.unitBytes(CollectiveKind.ALLTOALL, "port", 4, 4096, 256,
                DataType.BFLOAT16, false, 0));
        assertEquals(4096, CudaCollectiveBase.unitBytes(CollectiveKind.SENDRECV, "port", 4, 4096, 1024,
                DataType.INT32, false, 0));
        record Bad(CollectiveKind kind, long count, boolean inPlace, String message) {
        }
        for (Bad bad : List.of(new Bad(CollectiveKind.ALLGATHER, 257, false, "bytes > S = 4096"),
                new Bad(CollectiveKind.ALLGATHER, -1, false, "a count of -1"),
                new Bad(CollectiveKind.ALLTOALL, 8, true, "in-place runs (alltoall has none)"),
                new Bad(CollectiveKind.SENDRECV, 8, true, "in-place runs (sendrecv has none)"),
                new Bad(CollectiveKind.SENDRECV, 1025, false, "bytes > S = 4096"),
                new Bad(CollectiveKind.ALLTOALL, Long.MAX_VALUE / 2, false, "> S = 4096"))) {
            JmscclppException x = assertThrows(JmscclppException.class, () -> CudaCollectiveBase.unitBytes(bad.kind(),
                    "port", 4, 4096, bad.count(), DataType.FLOAT32, bad.inPlace(), 2), bad::toString);
            assertEquals(ErrorCode.INVALID_USAGE, x.code());
            assertTrue(x.getMessage().contains(bad.message()), x.getMessage());
            assertEquals(2, x.rank(), x.getMessage());
        }
    }

    @Test
    void theGridGrowsWithTheSizeFromOneBlockToTheCap() {
        assertEquals(LaunchConfig.of(1, CudaCollectiveBase.THREADS), CudaCollectiveBase.grid(0));
        assertEquals(LaunchConfig.of(1, CudaCollectiveBase.THREADS), CudaCollectiveBase.grid(1024));
        long perBlock = (long) CudaCollectiveBase.THREADS * CudaCollectiveBase.UNROLL * 16;
        assertEquals(1, CudaCollectiveBase.grid(perBlock).blocks());
        assertEquals(2, CudaCollectiveBase.grid(perBlock + 1).blocks());
        assertEquals(CudaCollectiveBase.SMALL_GRID_BLOCKS, CudaCollectiveBase.grid(64L << 20).blocks());
        assertEquals(CudaCollectiveBase.MAX_BLOCKS, CudaCollectiveBase.grid(1L << 30).blocks());
        assertTrue(CudaCollectiveBase.THREADS >= CudaCollectiveBase.MAX_RANKS - 1, "a thread per peer in block 0");
    }
}
