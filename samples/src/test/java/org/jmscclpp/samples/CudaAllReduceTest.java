package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.InMemoryBootstrap;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.nativebridge.CompiledKernel;
import org.jmscclpp.nativebridge.DeviceCodeChecks;
import org.jmscclpp.nativebridge.KernelArgs;
import org.jmscclpp.nativebridge.KernelCompiler;
import org.jmscclpp.samples.CudaAllReduce.Launch;
import org.jmscclpp.samples.CudaAllReduce.Tuning;
import org.jmscclpp.samples.CudaAllReduce.Variant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What of {@link CudaAllReduce} runs without a GPU: the kernel file compiles with nvcc and with
 * NVRTC (each skipped where missing), the kernels' parameters in the PTX have the widths of the
 * arguments Java passes, and the sizes, grids and argument checks.
 */
class CudaAllReduceTest {

    private static final Tuning DEFAULTS = new Tuning(CudaAllReduce.DEFAULT_LL_MAX_BYTES,
            CudaAllReduce.DEFAULT_RSAG_BLOCKS);
    private static final long GIB = 1L << 30;

    @Test
    void theKernelFileCompilesWithNvcc(@TempDir Path dir) throws Exception {
        DeviceCodeChecks.assertNvccCompiles("allreduce.cu", SampleKernels.source("allreduce"), dir);
    }

    @Test
    void theKernelFileCompilesWithNvrtcAndItsParametersAreThoseJavaPasses(@TempDir Path dir) {
        DeviceCodeChecks.requireNvrtc();
        String source = SampleKernels.source("allreduce");
        KernelCompiler compiler = KernelCompiler.create(dir);
        CompiledKernel cubin = compiler.compile("samples/allreduce", source, "sm_90", KernelCompiler.deviceHeaders());
        assertTrue(cubin.size() > 0);
        String ptx = compiler.ptx("samples/allreduce", source, "sm_90", KernelCompiler.deviceHeaders(), List.of());

        KernelArgs ll = CudaAllReduce.llArgs(1, 2, 3, 4, DataType.BFLOAT16, 5, 6, 7, 1, 2);
        KernelArgs rsag = CudaAllReduce.rsagArgs(1, 2, 3, 4, 5, DataType.FLOAT16, true, 1, 2);
        assertEquals(List.of(8, 8, 8, 8, 4, 8, 8, 8, 4, 4), widths(ll), ll.toString());
        assertEquals(List.of(8, 8, 8, 8, 8, 4, 4, 4, 4), widths(rsag), rsag.toString());
        assertEquals(widths(ll), ptxParameterWidths(ptx, CudaAllReduce.LL16_KERNEL));
        assertEquals(widths(rsag), ptxParameterWidths(ptx, CudaAllReduce.RSAG_KERNEL));
    }

    /** Bytes of each argument, from the descriptions KernelArgs gives: {@code (ptr 0x1, i64 4, i32 9, ...)}. */
    private static List<Integer> widths(KernelArgs args) {
        String text = args.toString();
        List<Integer> widths = new ArrayList<>();
        for (String part : text.substring(1, text.length() - 1).split(", ")) {
            widths.add(part.startsWith("i32") ? 4 : part.startsWith("ptr") || part.startsWith("i64") ? 8 : -1);
        }
        return widths;
    }

    /** Bytes of each {@code .param} of the entry {@code name} in the PTX. */
    private static List<Integer> ptxParameterWidths(String ptx, String name) {
        Matcher entry = Pattern.compile("\\.entry\\s+" + name + "\\s*\\(([^)]*)\\)").matcher(ptx);
        assertTrue(entry.find(), () -> "no entry " + name + " in the PTX");
        Matcher param = Pattern.compile("\\.param\\s+\\.([bsu])(\\d+)").matcher(entry.group(1));
        List<Integer> widths = new ArrayList<>();
        while (param.find()) {
            widths.add(Integer.parseInt(param.group(2)) / 8);
        }
        return widths;
    }

    @Test
    void autoSendsPacketsUpToTheThresholdAndUsesRsagAbove() {
        long threshold = CudaAllReduce.DEFAULT_LL_MAX_BYTES;
        assertTrue(plan(Variant.AUTO, threshold / 4, DataType.FLOAT32, 2).packets());
        assertFalse(plan(Variant.AUTO, threshold / 4 + 1, DataType.FLOAT32, 2).packets());
        assertTrue(plan(Variant.AUTO, 1, DataType.FLOAT16, 8).packets());
        Tuning noPackets = new Tuning(0, 16);
        assertFalse(CudaAllReduce.plan(Variant.AUTO, 1, DataType.FLOAT16, 2, GIB, noPackets).packets());
        assertTrue(plan(Variant.LL16, 4 << 20, DataType.FLOAT32, 2).packets());
        assertFalse(plan(Variant.RSAG, 1, DataType.INT32, 2).packets());
    }

    @Test
    void packetGridsGiveEachThreadAPacketUpTo128BlocksOf512() {
        // 1 KiB: 128 packets of 8 bytes
        assertEquals(new Launch(true, 1, 128), plan(Variant.LL16, 256, DataType.FLOAT32, 2));
        // 14 bytes (7 halves): two packets, the second half full; a whole warp
        assertEquals(new Launch(true, 1, 32), plan(Variant.LL16, 7, DataType.FLOAT16, 2));
        // 256 KiB: 32768 packets
        assertEquals(new Launch(true, 64, 512), plan(Variant.LL16, 64 << 10, DataType.FLOAT32, 4));
        assertEquals(new Launch(true, CudaAllReduce.LL_MAX_BLOCKS, 512),
                plan(Variant.LL16, 4 << 20, DataType.FLOAT32, 2));
    }

    @Test
    void rsagGridsCoverEachSliceUpToTheTunedBlocks() {
        // 16 MiB over 2 ranks: slices of 512 Ki vectors, 512 threads x 4 vectors a block-iteration
        assertEquals(new Launch(false, 64, 512), plan(Variant.RSAG, 4 << 20, DataType.FLOAT32, 2));
        assertEquals(new Launch(false, 32, 512), CudaAllReduce.plan(Variant.RSAG, 4 << 20, DataType.FLOAT32, 2,
                GIB, new Tuning(0, 32)));
        // 1 MiB over 8 ranks: 8192 vectors a slice, 512 threads x 1 vector
        assertEquals(new Launch(false, 16, 512), plan(Variant.RSAG, 1 << 18, DataType.FLOAT32, 8));
        // fewer than 16 bytes: no vector at all, the tail alone (block 0 of the last rank)
        assertEquals(new Launch(false, 1, 512), plan(Variant.RSAG, 3, DataType.BFLOAT16, 2));
        assertEquals(4, CudaAllReduce.rsagUnroll(2));
        assertEquals(2, CudaAllReduce.rsagUnroll(4));
        assertEquals(1, CudaAllReduce.rsagUnroll(5));
    }

    @ParameterizedTest
    @EnumSource(Variant.class)
    void countsOutsideTheSetupAreInvalidUsageAndZeroLaunchesNothing(Variant variant) {
        assertEquals(0, plan(variant, 0, DataType.FLOAT32, 2).blocks());
        long maxSize = 1 << 20;
        assertTrue(CudaAllReduce.plan(variant, maxSize / 2, DataType.BFLOAT16, 2, maxSize, DEFAULTS).blocks() > 0);
        assertInvalid(() -> CudaAllReduce.plan(variant, maxSize / 2 + 1, DataType.BFLOAT16, 2, maxSize, DEFAULTS));
        assertInvalid(() -> CudaAllReduce.plan(variant, -1, DataType.FLOAT32, 2, maxSize, DEFAULTS));
        // count * 4 overflows a long: still refused, not wrapped around
        assertInvalid(() -> CudaAllReduce.plan(variant, Long.MAX_VALUE / 2, DataType.INT32, 2, maxSize, DEFAULTS));
    }

    @Test
    void scratchSizes() {
        assertEquals(CudaAllReduce.LL16_MAX_SIZE, CudaAllReduce.llCapacity(Variant.LL16, GIB, DEFAULTS));
        assertEquals(1000, CudaAllReduce.llCapacity(Variant.LL16, 1000, DEFAULTS));
        assertEquals(CudaAllReduce.DEFAULT_LL_MAX_BYTES, CudaAllReduce.llCapacity(Variant.AUTO, GIB, DEFAULTS));
        assertEquals(4096, CudaAllReduce.llCapacity(Variant.AUTO, 4096, DEFAULTS));
        assertEquals(0, CudaAllReduce.llCapacity(Variant.RSAG, GIB, DEFAULTS));
        assertEquals(16, CudaAllReduce.slotBytes(2));
        assertEquals(16, CudaAllReduce.slotBytes(8));
        assertEquals(32, CudaAllReduce.slotBytes(14));
        assertEquals(2 * 1024, CudaAllReduce.slotBytes(1024));
    }

    @Test
    void tuningOutsideWhatTheKernelsTakeIsInvalidUsage() {
        assertInvalid(() -> new Tuning(-1, 64));
        assertInvalid(() -> new Tuning(CudaAllReduce.LL16_MAX_SIZE + 1, 64));
        assertInvalid(() -> new Tuning(1024, 0));
        assertInvalid(() -> new Tuning(1024, CudaAllReduce.RSAG_MAX_BLOCKS + 1));
        assertEquals(DEFAULTS, withProperty(null, null));
        assertEquals(new Tuning(1 << 20, 96), withProperty("1M", "96"));
        assertInvalid(() -> withProperty("lots", null));
        assertInvalid(() -> withProperty(null, "many"));
        assertInvalid(() -> withProperty(null, "1000"));
    }

    private static Tuning withProperty(String threshold, String blocks) {
        try {
            set(CudaAllReduce.THRESHOLD_PROPERTY, threshold);
            set(CudaAllReduce.BLOCKS_PROPERTY, blocks);
            return Tuning.fromProperties();
        } finally {
            System.clearProperty(CudaAllReduce.THRESHOLD_PROPERTY);
            System.clearProperty(CudaAllReduce.BLOCKS_PROPERTY);
        }
    }

    private static void set(String property, String value) {
        if (value == null) {
            System.clearProperty(property);
        } else {
            System.setProperty(property, value);
        }
    }

    @Test
    void anotherBackendIsInvalidUsage(@TempDir Path shm) {
        InMemoryBootstrap bootstrap = InMemoryBootstrap.group(1).get(0);
        try (HostBackend backend = HostBackend.open(shm); Communicator comm = Communicator.create(bootstrap, backend)) {
            CollectiveSetup setup = new CollectiveSetup(comm, 1 << 20, Duration.ofSeconds(5));
            for (Variant variant : Variant.values()) {
                JmscclppException e = assertInvalid(() -> CudaAllReduce.create(setup, variant, DEFAULTS));
                assertTrue(e.getMessage().contains("cuda backend"), e.getMessage());
            }
        } finally {
            bootstrap.close();
        }
    }

    @Test
    void theRegistryOffersAutoFirstThenLl16AndRsagOnCuda() {
        assertEquals(List.of("auto", "ll16", "rsag"), CollectiveAlgorithms.of(CollectiveKind.ALLREDUCE, "cuda").stream()
                .map(CollectiveAlgorithms.Entry::algorithm).toList());
    }

    private static Launch plan(Variant variant, long count, DataType type, int ranks) {
        return CudaAllReduce.plan(variant, count, type, ranks, GIB, DEFAULTS);
    }

    private static JmscclppException assertInvalid(Executable call) {
        JmscclppException e = assertThrows(JmscclppException.class, call);
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        return e;
    }
}
