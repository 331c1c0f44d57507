package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.CompiledKernel;
import org.jmscclpp.nativebridge.KernelCompiler;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kernels/coll_data.cu} compiles with nvcc and with NVRTC for sm_90; each part skipped, with the reason, where its compiler is absent. */
class CollectiveKernelsCompileTest {

    @Test
    void nvccCompilesCollData(@TempDir Path dir) throws IOException, InterruptedException {
        Path nvcc = CudaTools.nvcc();
        Path source = CudaTools.copyResource(SampleKernels.RESOURCE_ROOT + "coll_data.cu", dir, "coll_data.cu");
        Path object = dir.resolve("coll_data.o");
        CudaTools.Result r = CudaTools.run(List.of(nvcc.toString(), "-arch=sm_90", "-std=c++17", "-c",
                source.toString(), "-o", object.toString()), dir, null);
        assertTrue(r.ok(), () -> "nvcc failed (exit " + r.exitCode() + "):\n" + r.output());
        assertTrue(Files.size(object) > 0);
    }

    @Test
    void nvrtcCompilesCollData(@TempDir Path cache) {
        CompiledKernel kernel;
        try {
            kernel = KernelCompiler.create(cache).compile("coll_data.cu", SampleKernels.source("coll_data"), "sm_90",
                    KernelCompiler.deviceHeaders());
        } catch (JmscclppException e) {
            Assumptions.assumeFalse(e.code() == ErrorCode.SYSTEM_ERROR, () -> "NVRTC is not available ("
                    + e.getMessage() + "); set JMSCCLPP_NVRTC_LIBRARY to libnvrtc.so.13");
            throw e;
        }
        assertTrue(kernel.cubin().length > 64, "a cubin of " + kernel.cubin().length + " bytes");
    }
}
