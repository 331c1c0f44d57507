package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.Nvrtc;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Compiles with the real NVRTC; skipped (with the reason) where it cannot load. Locally:
 * {@code JMSCCLPP_NVRTC_LIBRARY=/opt/nvrtc/nvidia/cu13/lib/libnvrtc.so.13}.
 */
class KernelCompilerTest {

    static final String HEADER_NAME = "my/header.cuh";
    static final String HEADER = """
            #pragma once
            __device__ inline float twice(float v) { return 2.0f * v; }
            """;
    static final String SOURCE = """
            #include "my/header.cuh"
            extern "C" __global__ void scale(float* x, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] = twice(x[i]);
            }
            """;
    private static final Duration DEADLINE = Duration.ofMinutes(2);

    @TempDir
    Path cache;

    @BeforeEach
    void needsNvrtc() {
        Nvrtc.unavailableReason().ifPresent(reason -> Assumptions.abort("NVRTC is not available: " + reason));
    }

    private CompiledKernel compileScale(KernelCompiler compiler) {
        return compiler.compile("scale.cu", SOURCE, "sm_90", Map.of(HEADER_NAME, HEADER));
    }

    private List<Path> cacheFiles() throws IOException {
        try (Stream<Path> files = Files.list(cache)) {
            return files.filter(f -> f.getFileName().toString().endsWith(KernelCompiler.SUFFIX)).sorted().toList();
        }
    }

    @Test
    void compilesWithAnInMemoryHeaderToACudaElf() {
        KernelCompiler compiler = KernelCompiler.create(cache);
        CompiledKernel kernel = compileScale(compiler);
        assertEquals("scale.cu", kernel.name());
        assertEquals("sm_90", kernel.architecture());
        byte[] cubin = kernel.cubin();
        assertTrue(cubin.length > 64, "a cubin of " + cubin.length + " bytes");
        assertArrayEquals(new byte[] {0x7F, 'E', 'L', 'F'}, Arrays.copyOf(cubin, 4));
        // e_machine (offset 18, little-endian) is EM_CUDA
        assertEquals(190, (cubin[18] & 0xFF) | (cubin[19] & 0xFF) << 8);
        assertEquals(1, compiler.nvrtcCompilations());
    }

    @Test
    void aSyntaxErrorIsInvalidUsageWithTheLog() throws IOException {
        KernelCompiler compiler = KernelCompiler.create(cache);
        String broken = """
                extern "C" __global__ void broken(int* x) {
                    x[0] = 1
                    x[1] = ;
                }
                """;
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> compiler.compile("broken.cu", broken, "sm_90", Map.of()));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertEquals("compile", e.phase());
        String message = e.getMessage();
        assertTrue(message.contains("NVRTC could not compile broken.cu for sm_90: NVRTC_ERROR_COMPILATION (6)"),
                message);
        assertTrue(message.contains("broken.cu(3): error"), "the log names the line: " + message);
        assertEquals(List.of(), cacheFiles(), "failures are not cached");
    }

    @Test
    void aMissingHeaderIsInvalidUsage() {
        KernelCompiler compiler = KernelCompiler.create(cache);
        JmscclppException e = assertThrows(JmscclppException.class,
                () -> compiler.compile("scale.cu", SOURCE, "sm_90", Map.of()));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains("my/header.cuh"), e.getMessage());
    }

    @Test
    void anUnknownOptionIsInvalidUsage() {
        KernelCompiler compiler = KernelCompiler.create(cache);
        JmscclppException e = assertThrows(JmscclppException.class, () -> compiler.compile("scale.cu", SOURCE,
                "sm_90", Map.of(HEADER_NAME, HEADER), List.of("--no-such-option")));
        assertEquals(ErrorCode.INVALID_USAGE, e.code());
        assertTrue(e.getMessage().contains("NVRTC_ERROR_INVALID_OPTION"), e.getMessage());
    }

    @Test
    void aSecondCompileComesFromMemory() {
        KernelCompiler compiler = KernelCompiler.create(cache);
        CompiledKernel first = compileScale(compiler);
        CompiledKernel second = compileScale(compiler);
        assertSame(first, second);
        assertEquals(1, compiler.nvrtcCompilations());
    }

    @Test
    void aFreshCompilerFindsTheDiskCache() throws IOException {
        CompiledKernel first = compileScale(KernelCompiler.create(cache));
        assertEquals(1, cacheFiles().size());
        assertTrue(cacheFiles().getFirst().getFileName().toString().matches("[0-9a-f]{64}\\.kernel"));
        try (Stream<Path> all = Files.list(cache)) {
            assertEquals(1, all.count(), "no temporary file is left behind");
        }

        KernelCompiler fresh = KernelCompiler.create(cache);
        CompiledKernel again = compileScale(fresh);
        assertEquals(0, fresh.nvrtcCompilations(), "a disk hit runs no NVRTC");
        assertEquals(first, again);
    }

    @Test
    void changedInputsMiss() throws IOException {
        KernelCompiler compiler = KernelCompiler.create(cache);
        compileScale(compiler);
        compiler.compile("scale.cu", SOURCE, "sm_90", Map.of(HEADER_NAME, HEADER.replace("2.0f", "3.0f")));
        assertEquals(2, compiler.nvrtcCompilations(), "a changed header compiles again");
        compiler.compile("scale.cu", SOURCE, "sm_90", Map.of(HEADER_NAME, HEADER, "unused.cuh", "#pragma once\n"));
        assertEquals(3, compiler.nvrtcCompilations(), "an added header compiles again");
        compiler.compile("scale.cu", SOURCE, "sm_90", Map.of(HEADER_NAME, HEADER), List.of("-lineinfo"));
        assertEquals(4, compiler.nvrtcCompilations(), "changed options compile again");
        compiler.compile("scale.cu", SOURCE, "sm_80", Map.of(HEADER_NAME, HEADER));
        assertEquals(5, compiler.nvrtcCompilations(), "another architecture compiles again");
        assertEquals(5, cacheFiles().size());

        KernelCompiler fresh = KernelCompiler.create(cache);
        CompiledKernel changed = fresh.compile("scale.cu", SOURCE, "sm_90",
                Map.of(HEADER_NAME, HEADER.replace("2.0f", "3.0f")));
        assertEquals(0, fresh.nvrtcCompilations(), "every variant is on disk");
        assertNotEquals(compileScale(fresh), changed, "the variants differ");
    }

    @Test
    void corruptCacheFilesAreCompiledAgainAndRepaired() throws IOException {
        compileScale(KernelCompiler.create(cache));
        Path file = cacheFiles().getFirst();
        byte[] intact = Files.readAllBytes(file);
        String key = file.getFileName().toString().replace(KernelCompiler.SUFFIX, "");

        byte[] flipped = intact.clone();
        flipped[flipped.length / 2] ^= 0x40;
        byte[] truncated = Arrays.copyOf(intact, intact.length - 10);
        byte[] garbage = "this is not a kernel".getBytes(StandardCharsets.UTF_8);
        for (byte[] corrupt : List.of(flipped, truncated, garbage, new byte[0])) {
            Files.write(file, corrupt);
            KernelCompiler fresh = KernelCompiler.create(cache);
            compileScale(fresh);
            assertEquals(1, fresh.nvrtcCompilations(), "a corrupt file of " + corrupt.length + " bytes is recompiled");
            assertNull(KernelCompiler.checkEntry(Files.readAllBytes(file), key), "the file is whole again");
            KernelCompiler after = KernelCompiler.create(cache);
            compileScale(after);
            assertEquals(0, after.nvrtcCompilations(), "the recompile repaired the file");
        }
    }

    @Test
    void anUnwritableCacheOnlyCostsTheCache() throws IOException {
        Path notADirectory = Files.writeString(cache.resolve("file"), "in the way");
        KernelCompiler compiler = KernelCompiler.create(notADirectory);
        CompiledKernel kernel = compileScale(compiler);
        assertTrue(kernel.size() > 0);
        assertSame(kernel, compileScale(compiler), "the memory cache still works");
        assertEquals("in the way", Files.readString(notADirectory));
    }

    @Test
    void concurrentCompilesAgree() throws Exception {
        KernelCompiler compiler = KernelCompiler.create(cache);
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<CompiledKernel>> results = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                results.add(pool.submit(() -> compileScale(compiler)));
            }
            CompiledKernel first = results.getFirst().get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            for (Future<CompiledKernel> result : results) {
                assertEquals(first, result.get(DEADLINE.toSeconds(), TimeUnit.SECONDS));
            }
            long runs = compiler.nvrtcCompilations();
            assertTrue(runs >= 1 && runs <= 3, runs + " NVRTC runs");
            assertSame(compileScale(compiler), compileScale(compiler));
            assertEquals(runs, compiler.nvrtcCompilations());
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(DEADLINE.toSeconds(), TimeUnit.SECONDS));
        }
    }

    @Test
    void ptxIsForTheVirtualArchitecture() {
        String ptx = KernelCompiler.create(cache).ptx("scale.cu", SOURCE, "sm_90", Map.of(HEADER_NAME, HEADER),
                List.of());
        assertTrue(ptx.contains(".target sm_90"), ptx);
        assertTrue(ptx.contains(".entry scale("), ptx);
    }

    @Test
    void theGpuTestKernelsCompile() {
        // KernelGpuTest runs only on GPU hosts: its kernels are at least checked here
        CompiledKernel kernels = KernelCompiler.create(cache).compile("kernels.cu", GpuKernels.SOURCE, "sm_90",
                Map.of(GpuKernels.UTIL_NAME, GpuKernels.UTIL), List.of("-lineinfo"));
        assertTrue(kernels.size() > 0);
        assertEquals("", kernels.log(), "no warnings");
    }
}
