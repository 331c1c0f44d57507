package org.jmscclpp.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.BackendProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class CudaBackendSelectionTest {

    @Test
    void theGpuFollowsTheVariableThenTheLocalRankThenTheRank() {
        assertEquals(1, CudaBackend.chooseDevice(Map.of("JMSCCLPP_CUDA_DEVICE", "1", "JMSCCLPP_RANK", "0"), 2));
        assertEquals(1, CudaBackend.chooseDevice(Map.of("JMSCCLPP_LOCAL_RANK", "3", "JMSCCLPP_RANK", "0"), 2));
        assertEquals(0, CudaBackend.chooseDevice(Map.of("JMSCCLPP_RANK", "4"), 2));
        assertEquals(0, CudaBackend.chooseDevice(Map.of(), 8));
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> CudaBackend.chooseDevice(Map.of("JMSCCLPP_CUDA_DEVICE", "x"), 2));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
    }

    @Test
    void underMpirunTorchrunAndSrunTheGpuIsTheLaunchersLocalRank() {
        // rank 5 of a job, the second rank of its host: each launcher's own names
        assertEquals(1, CudaBackend.chooseDevice(Map.of("OMPI_COMM_WORLD_RANK", "5",
                "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_SIZE", "8"), 4));
        assertEquals(1, CudaBackend.chooseDevice(Map.of("RANK", "5", "LOCAL_RANK", "1", "WORLD_SIZE", "8"), 4));
        assertEquals(1, CudaBackend.chooseDevice(Map.of("SLURM_PROCID", "5", "SLURM_LOCALID", "1",
                "SLURM_NTASKS", "8"), 4));
        // no local rank: the rank, as RankEnvironment takes it
        assertEquals(2, CudaBackend.chooseDevice(Map.of("RANK", "6", "WORLD_SIZE", "8"), 4));
        // torchrun under srun: torchrun started the process, srun's task id is the agent's
        assertEquals(3, CudaBackend.chooseDevice(Map.of("RANK", "3", "LOCAL_RANK", "3", "WORLD_SIZE", "4",
                "SLURM_PROCID", "0", "SLURM_LOCALID", "0", "SLURM_NTASKS", "1"), 4));
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> CudaBackend.chooseDevice(Map.of("RANK", "1", "LOCAL_RANK", "one"), 2));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains("LOCAL_RANK"), e.getMessage());
    }

    @Test
    void theAllocationVariableIsMallocOrVmm() {
        assertEquals(CudaBackend.Allocation.MEM_ALLOC, CudaBackend.allocationFrom(null));
        assertEquals(CudaBackend.Allocation.MEM_ALLOC, CudaBackend.allocationFrom("malloc"));
        assertEquals(CudaBackend.Allocation.VMM, CudaBackend.allocationFrom("VMM"));
        JmscclppException e = assertThrows(JmscclppException.class, () -> CudaBackend.allocationFrom("managed"));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains("JMSCCLPP_CUDA_ALLOC"), e.getMessage());
    }

    @Test
    void theCudaProviderIsFoundAndSaysWhyItCannotRunWithoutADriver() {
        BackendProvider cuda = Backends.providers().stream().filter(p -> p.name().equals("cuda")).findFirst()
                .orElseThrow(() -> new AssertionError("no cuda provider among " + Backends.providers()));
        assertTrue(cuda.priority() > 0);
        Optional<String> reason = cuda.unavailableReason();
        Assumptions.assumeTrue(reason.isPresent(), "a GPU is present here: the gpu-tagged tests cover it");
        System.out.println("cuda backend unavailable here (expected on CPU machines): " + reason.get());
        assertFalse(reason.get().isBlank());
        assertTrue(reason.get().contains("CUDA driver"), reason.get());
        assertEquals("host", Backends.best().name(), "without a GPU the best backend is the host's");
    }
}
