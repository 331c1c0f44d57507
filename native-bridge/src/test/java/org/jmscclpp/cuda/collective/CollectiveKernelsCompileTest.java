package org.jmscclpp.cuda.collective;

import java.io.IOException;
import java.nio.file.Path;
import org.jmscclpp.cuda.kernel.DeviceCodeChecks;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The collective kernels ({@code collectives.cu}) compile for the GPUs the project runs on with the
 * defines {@link CudaCollectiveComm} compiles them with: the moving module and reducing modules,
 * at the smallest and largest rank counts ({@code nvcc -arch=sm_90}, no GPU needed; skipped, with the
 * reason, where nvcc is not installed), and agree with the host's sizes of what they share with it
 * (the Comm structure, the copy-engine words and requests).
 */
class CollectiveKernelsCompileTest {

    @ParameterizedTest(name = "{0} ranks, {1}")
    @CsvSource({
            "2, move",
            "8, move",
            "2, 7 0",      // float32 sum
            "8, 9 2",      // bfloat16 max
            "4, 9 4",      // bfloat16 avg (no chain for reduce)
            "3, 6 0"})     // float16 sum (no chain for reduce)
    void compiles(int ranks, String module, @TempDir Path dir) throws IOException, InterruptedException {
        StringBuilder defines = new StringBuilder();
        defines.append("#define JMSCCLPP_NRANKS ").append(ranks).append('\n');
        defines.append("#define JMSCCLPP_DEVICE_TIMEOUT_NS 30000000000ULL\n");
        if (module.equals("move")) {
            defines.append("#define JMSCCLPP_MOVE 1\n");
        } else {
            String[] typeOp = module.split(" ");
            defines.append("#define JMSCCLPP_T ").append(typeOp[0]).append('\n');
            defines.append("#define JMSCCLPP_OP ").append(typeOp[1]).append('\n');
        }
        // the host's constants of the structures and areas the kernels share with it
        StringBuilder checks = new StringBuilder("\nnamespace {\n");
        checks.append("static_assert(sizeof(Comm) == ").append(CudaCollectiveComm.COMM_BYTES).append(", \"COMM_BYTES\");\n");
        if (module.equals("move")) {
            checks.append("static_assert(kCeWords == ").append(CudaCollectiveComm.Layout.CE_WORDS)
                    .append(", \"Layout.CE_WORDS\");\n")
                    .append("static_assert(kCeSendAlgorithm == ").append(CudaCollectiveComm.SEND_CE.id())
                    .append(", \"SEND_CE's id\");\n")
                    .append("static_assert(kCeWords + 8 * kMaxRanks * 8 <= ").append(CudaCollectiveComm.Layout.LL)
                    .append(", \"the copy-engine words end before the LL area\");\n")
                    .append("static_assert(kCeSlots == ").append(CopyProxy.SLOTS).append(", \"CopyProxy.SLOTS\");\n")
                    .append("static_assert(kCeRequestWords * 8 == ").append(CopyProxy.REQUEST_BYTES)
                    .append(", \"CopyProxy.REQUEST_BYTES\");\n");
        }
        checks.append("}\n");
        DeviceCodeChecks.assertNvccCompiles("collectives.cu", defines + CudaKernelSource.get(CudaCollectiveComm.KERNELS)
                + checks, dir);
    }
}
