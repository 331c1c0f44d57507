package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.cuda.kernel.CompiledKernel;
import org.jmscclpp.cuda.kernel.DeviceCodeChecks;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.KernelCompiler;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code kernels/coll_data.cu} compiles for sm_90 as the CUDA data of the collective checks loads
 * it ({@link CudaCollectiveData#source}: one module per type and reduction, one per type for the
 * kinds that move data), with nvcc and with NVRTC (each skipped, with the reason, where missing),
 * without warnings; and every kernel's parameters in the PTX have the widths of the arguments Java
 * passes. A spread of modules: every type, every reduction, the moving module; every (type,
 * reduction) pair is compiled as host code by {@link CollectiveValuesTest}.
 */
class CollectiveKernelsCompileTest {

    static Stream<Arguments> modules() {
        List<Arguments> modules = new ArrayList<>();
        ReduceOp[] ops = ReduceOp.values();
        for (DataType type : DataType.values()) {
            modules.add(Arguments.of(type, ops[type.code() % ops.length]));
        }
        modules.add(Arguments.of(DataType.FLOAT32, null));
        modules.add(Arguments.of(DataType.FP8_E5M2, null));
        modules.add(Arguments.of(DataType.UINT64, null));
        return modules.stream();
    }

    @ParameterizedTest(name = "nvcc {0} {1}")
    @MethodSource("modules")
    void compilesWithNvccAndTheParametersAreThoseJavaPasses(DataType type, @Nullable ReduceOp op, @TempDir Path dir)
            throws IOException, InterruptedException {
        String source = CudaCollectiveData.source(type, op);
        String name = CudaCollectiveData.moduleName(type, op) + ".cu";
        String warnings = DeviceCodeChecks.assertNvccCompiles(name, source, dir);
        assertTrue(!warnings.contains("warning"), warnings);

        Path include = DeviceCodeChecks.copyDeviceHeaders(dir.resolve("include"));
        Path ptx = dir.resolve("module.ptx");
        Path cu = dir.resolve(name);
        CudaTools.Result r = CudaTools.run(List.of(CudaTools.nvcc().toString(), "-arch=sm_90", "-std=c++17",
                "-I" + include, "--ptx", cu.toString(), "-o", ptx.toString()), dir, null);
        assertTrue(r.ok(), r.output());
        String text = Files.readString(ptx, StandardCharsets.UTF_8);
        CollectiveRun run = new CollectiveRun(op == null ? CollectiveKind.ALL_GATHER : CollectiveKind.REDUCE, type, op,
                op == null ? -1 : 0, 2, 64, false);
        assertEquals(widths(CudaCollectiveData.inputArgs(1, run, 0, 7)), ptxParameterWidths(text, "collDataInput"));
        assertEquals(widths(CudaCollectiveData.poisonArgs(1, 8)), ptxParameterWidths(text, "collDataPoison"));
        assertEquals(widths(CudaCollectiveData.resetArgs(1)), ptxParameterWidths(text, "collDataReset"));
        assertEquals(widths(CudaCollectiveData.checkArgs(1, run, 1, 7, 2)), ptxParameterWidths(text, "collDataCheck"));
    }

    @ParameterizedTest(name = "NVRTC {0} {1}")
    @MethodSource("modules")
    void compilesWithNvrtc(DataType type, @Nullable ReduceOp op, @TempDir Path cache) {
        DeviceCodeChecks.requireNvrtc();
        CompiledKernel kernel = KernelCompiler.create(cache).compile("samples/" + CudaCollectiveData.moduleName(type, op),
                CudaCollectiveData.source(type, op), "sm_90", KernelCompiler.deviceHeaders());
        assertTrue(kernel.cubin().length > 64, "a cubin of " + kernel.cubin().length + " bytes");
    }

    /** Bytes of each argument, from the descriptions KernelArgs gives: {@code (ptr 0x1, i64 4, i32 9, ...)}. */
    static List<Integer> widths(KernelArgs args) {
        String text = args.toString();
        List<Integer> widths = new ArrayList<>();
        for (String part : text.substring(1, text.length() - 1).split(", ")) {
            widths.add(part.startsWith("i32") ? 4 : part.startsWith("ptr") || part.startsWith("i64") ? 8 : -1);
        }
        return widths;
    }

    /** Bytes of each {@code .param} of the entry {@code name} in the PTX. */
    static List<Integer> ptxParameterWidths(String ptx, String name) {
        Matcher entry = Pattern.compile("\\.entry\\s+" + name + "\\s*\\(([^)]*)\\)").matcher(ptx);
        assertTrue(entry.find(), () -> "no entry " + name + " in the PTX");
        Matcher param = Pattern.compile("\\.param\\s+\\.([bsu])(\\d+)").matcher(entry.group(1));
        List<Integer> widths = new ArrayList<>();
        while (param.find()) {
            widths.add(Integer.parseInt(param.group(2)) / 8);
        }
        return widths;
    }
}
