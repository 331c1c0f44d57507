package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every test kernel, and the file that instantiates every function of the device API, compiles
 * for the GPUs the project runs on ({@code nvcc -arch=sm_90 -std=c++17}) against the headers
 * copied from the class path by {@link DeviceHeaders#copyTo}. Skipped, with the reason, where
 * nvcc is not installed; needs no GPU.
 */
class DeviceHeadersCompileTest {

    static List<String> sources() {
        List<String> sources = new ArrayList<>(TestKernels.FILES);
        sources.add(TestKernels.API);
        return sources;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("sources")
    void compiles(String resource, @TempDir Path dir) throws IOException, InterruptedException {
        Path nvcc = Nvcc.require();
        Path include = DeviceHeaders.copyTo(dir.resolve("include"));
        Path source = TestKernels.copy(resource, dir);
        Path object = dir.resolve(source.getFileName() + ".o");
        Nvcc.Result result = Nvcc.run(List.of(nvcc.toString(), "-arch=sm_90", "-std=c++17", "-I" + include, "-c",
                source.toString(), "-o", object.toString()), dir);
        assertTrue(result.ok(), () -> "nvcc failed on " + resource + " (exit " + result.exitCode() + "):\n"
                + result.output());
        assertTrue(Files.size(object) > 0, "nvcc wrote " + object);
    }
}
