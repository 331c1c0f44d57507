package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.jmscclpp.nativebridge.Nvrtc;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The samples' kernel files ({@code org/jmscclpp/samples/kernels/*.cu}) compile for the GPUs the
 * project runs on, with both compilers and no GPU: nvcc ({@code -arch=sm_90}, headers copied to
 * disk; skipped where nvcc is not installed) and NVRTC with the in-memory device headers, as
 * {@code SampleKernels.load} compiles them on the GPU host (skipped where libnvrtc cannot load;
 * locally {@code JMSCCLPP_NVRTC_LIBRARY=/opt/nvrtc/nvidia/cu13/lib/libnvrtc.so.13}). Each file's
 * PTX must define every kernel the Java side launches, under its unmangled name.
 *
 * <p>In this package for the native bridge's test helpers ({@link Nvcc}, {@link DeviceHeaders});
 * it reads the kernel files as class-path resources.
 */
class SampleKernelsCompileTest {

    static final String ROOT = "org/jmscclpp/samples/kernels/";

    static Stream<Arguments> files() {
        // coll_data.cu needs its type and reduction defined first: CollectiveKernelsCompileTest compiles it
        return Stream.of(Arguments.of("overlap", List.of("overlapTiles")));
    }

    private static String source(String file) throws IOException {
        try (InputStream in = SampleKernelsCompileTest.class.getClassLoader().getResourceAsStream(ROOT + file + ".cu")) {
            assertNotNull(in, ROOT + file + ".cu is on the class path");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @ParameterizedTest(name = "nvcc {0}")
    @MethodSource("files")
    void compilesWithNvcc(String file, List<String> kernels, @TempDir Path dir) throws Exception {
        Path nvcc = Nvcc.require();
        Path include = DeviceHeaders.copyTo(dir.resolve("include"));
        Path cu = dir.resolve(file + ".cu");
        Files.writeString(cu, source(file));
        Path object = dir.resolve(file + ".o");
        Nvcc.Result result = Nvcc.run(List.of(nvcc.toString(), "-arch=sm_90", "-std=c++17", "-Werror=all-warnings",
                "-I" + include, "-c", cu.toString(), "-o", object.toString()), dir);
        assertTrue(result.ok(), () -> "nvcc failed on " + file + " (exit " + result.exitCode() + "):\n"
                + result.output());
        assertTrue(Files.size(object) > 0, "nvcc wrote " + object);
    }

    @ParameterizedTest(name = "NVRTC {0}")
    @MethodSource("files")
    void compilesWithNvrtcAndDefinesEveryKernel(String file, List<String> kernels, @TempDir Path cache)
            throws IOException {
        Nvrtc.unavailableReason().ifPresent(reason -> Assumptions.abort("NVRTC is not available: " + reason));
        KernelCompiler compiler = KernelCompiler.create(cache);
        Map<String, String> headers = KernelCompiler.deviceHeaders();
        byte[] cubin = compiler.compile(file + ".cu", source(file), "sm_90", headers).cubin();
        assertArrayEquals(new byte[] {0x7F, 'E', 'L', 'F'}, Arrays.copyOf(cubin, 4), "a CUDA ELF");
        String ptx = compiler.ptx(file + ".cu", source(file), "sm_90", headers, List.of());
        for (String kernel : kernels) {
            assertTrue(ptx.contains(".entry " + kernel + "("), () -> file + ".cu defines " + kernel);
        }
    }
}
