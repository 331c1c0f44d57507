package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.Nvrtc;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The parts of {@link KernelCompiler} that need no NVRTC: cache directory, key, file format, argument checks. */
class KernelCompilerCacheTest {

    private static final byte[] ELF = {0x7F, 'E', 'L', 'F', 2, 1, 1, 0x33, 0, 0, 0, 0};

    @Test
    void cacheDirectoryFollowsTheEnvironment() {
        Map<String, String> env = new HashMap<>();
        assertEquals(Path.of("/home/u/.cache/jmscclpp/kernels"), KernelCompiler.defaultCacheDirectory(env::get, "/home/u"));
        env.put("XDG_CACHE_HOME", " ");
        assertEquals(Path.of("/home/u/.cache/jmscclpp/kernels"), KernelCompiler.defaultCacheDirectory(env::get, "/home/u"),
                "a blank variable counts as unset");
        env.put("XDG_CACHE_HOME", "/var/cache/u");
        assertEquals(Path.of("/var/cache/u/jmscclpp/kernels"), KernelCompiler.defaultCacheDirectory(env::get, "/home/u"));
        env.put("JMSCCLPP_CACHE_DIR", "/scratch/kernels");
        assertEquals(Path.of("/scratch/kernels"), KernelCompiler.defaultCacheDirectory(env::get, "/home/u"));
    }

    @Test
    void theKeyCoversEveryInputAndNotHeaderOrder() {
        Map<String, String> headers = new TreeMap<>(Map.of("a.cuh", "A", "b.cuh", "B"));
        String key = KernelCompiler.key("13.0", "sm_90", "k.cu", List.of("-lineinfo"), "src", headers);
        assertTrue(key.matches("[0-9a-f]{64}"), key);
        assertEquals(key, KernelCompiler.key("13.0", "sm_90", "k.cu", List.of("-lineinfo"), "src",
                new TreeMap<>(new LinkedHashMap<>(Map.of("b.cuh", "B", "a.cuh", "A")))));
        List<String> variants = List.of(
                KernelCompiler.key("13.1", "sm_90", "k.cu", List.of("-lineinfo"), "src", headers),
                KernelCompiler.key("13.0", "sm_80", "k.cu", List.of("-lineinfo"), "src", headers),
                KernelCompiler.key("13.0", "sm_90", "j.cu", List.of("-lineinfo"), "src", headers),
                KernelCompiler.key("13.0", "sm_90", "k.cu", List.of(), "src", headers),
                KernelCompiler.key("13.0", "sm_90", "k.cu", List.of("-lineinfo"), "src2", headers),
                KernelCompiler.key("13.0", "sm_90", "k.cu", List.of("-lineinfo"), "src",
                        new TreeMap<>(Map.of("a.cuh", "A", "b.cuh", "B2"))),
                KernelCompiler.key("13.0", "sm_90", "k.cu", List.of("-lineinfo"), "src",
                        new TreeMap<>(Map.of("a.cuh", "A"))),
                // moving text between fields must not collide: lengths are part of the hash
                KernelCompiler.key("13.0", "sm_90", "k.cu", List.of("-lineinfo"), "src",
                        new TreeMap<>(Map.of("a.cuhA", "", "b.cuh", "B"))));
        for (String variant : variants) {
            assertNotEquals(key, variant);
        }
        assertEquals(variants.size(), variants.stream().distinct().count());
    }

    @Test
    void entriesRoundTripAndEveryDamageIsNoticed() {
        String key = KernelCompiler.key("13.0", "sm_90", "k.cu", List.of(), "src", new TreeMap<>());
        CompiledKernel kernel = new CompiledKernel("k.cu", "sm_90", ELF, "warning: ünused");
        byte[] entry = KernelCompiler.encodeEntry(key, kernel);
        assertNull(KernelCompiler.checkEntry(entry, key));
        assertEquals(4 + 4 + 32 + 4 + "warning: ünused".getBytes(StandardCharsets.UTF_8).length
                + 4 + ELF.length + 32, entry.length);

        String otherKey = KernelCompiler.key("13.0", "sm_90", "k.cu", List.of(), "src2", new TreeMap<>());
        assertEquals("it holds another key", KernelCompiler.checkEntry(entry, otherKey));
        for (int i = 0; i < entry.length; i++) {
            byte[] damaged = entry.clone();
            damaged[i] ^= 0x01;
            assertTrue(KernelCompiler.checkEntry(damaged, key) != null, "a flipped bit at " + i + " is noticed");
        }
        for (int length = 0; length < entry.length; length++) {
            assertTrue(KernelCompiler.checkEntry(Arrays.copyOf(entry, length), key) != null,
                    "a file cut to " + length + " bytes is noticed");
        }
        byte[] notElf = KernelCompiler.encodeEntry(key, new CompiledKernel("k.cu", "sm_90", new byte[12], ""));
        assertEquals("the cubin is not an ELF image", KernelCompiler.checkEntry(notElf, key));
    }

    @Test
    void compiledKernelsCopyTheirCubin() {
        byte[] cubin = ELF.clone();
        CompiledKernel kernel = new CompiledKernel("k.cu", "sm_90", cubin, "");
        cubin[0] = 0;
        assertEquals(0x7F, kernel.cubin()[0]);
        kernel.cubin()[0] = 0;
        assertEquals(0x7F, kernel.cubin()[0]);
        assertEquals(new CompiledKernel("k.cu", "sm_90", ELF, ""), kernel);
        assertEquals("CompiledKernel[k.cu, sm_90, 12 bytes]", kernel.toString());
    }

    @Test
    void anArchitectureThatIsNotSmIsInvalidUsage() {
        KernelCompiler compiler = KernelCompiler.create(Path.of("/nonexistent/cache"));
        for (String architecture : List.of("compute_90", "90", "sm90", "sm_9", "")) {
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> compiler.compile("k.cu", "", architecture, Map.of()));
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), architecture);
            assertTrue(e.getMessage().contains("must look like sm_90"), e.getMessage());
        }
    }

    @Test
    void withoutNvrtcCompilingIsASystemErrorWithTheReason() {
        String reason = Nvrtc.unavailableReason().orElse(null);
        Assumptions.assumeTrue(reason != null, "NVRTC is available here: the unavailable path cannot be seen");
        JmscclppException e = assertThrows(JmscclppException.class, () -> KernelCompiler.create(Path.of("/nonexistent"))
                .compile("k.cu", "", "sm_90", Map.of()));
        assertEquals(ErrorCode.SYSTEM_ERROR, e.code());
        assertTrue(e.getMessage().contains(reason), e.getMessage());
    }
}
