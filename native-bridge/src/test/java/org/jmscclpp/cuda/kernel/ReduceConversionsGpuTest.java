package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.cuda.CudaInternals;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.test.StepVerifier;

/**
 * {@code jmscclpp/reduce.cuh}'s conversions between fp32 and the narrow floating types as the GPU
 * runs them (PTX {@code cvt} for fp16, and for fp8 on sm_89 and up), compiled with NVRTC for the
 * first GPU's architecture: every code of each type decoded, and the fp32 values of
 * {@link ReduceHeaderCrossCheckTest#encodeVectors} (every code's value, every rounding midpoint
 * and its neighbours, specials, random patterns) encoded, each compared bit for bit with
 * {@link org.jmscclpp.core.collective.Reductions}. Skipped (with the reason) without a GPU.
 */
@Tag("gpu")
class ReduceConversionsGpuTest {

    private static final Duration DEADLINE = Duration.ofSeconds(60);
    private static final String SOURCE = """
            #include "jmscclpp/reduce.cuh"

            // encode (fp32 bits to the type's code) or decode (a code to fp32 bits), one value per element
            extern "C" __global__ void convert(const unsigned* in, unsigned* out, int n, int type, int encode) {
              using namespace jmscclpp;
              using namespace jmscclpp::detail;
              for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
                unsigned v = in[i];
                unsigned r = 0;
                switch (type) {
                  case DataTypeFloat16: r = encode ? f32ToFp16(v) : fp16ToF32(v); break;
                  case DataTypeBfloat16: r = encode ? f32ToBf16(v) : bf16ToF32(v); break;
                  case DataTypeFp8E4M3: r = encode ? f32ToE4m3(v) : e4m3ToF32(v); break;
                  case DataTypeFp8E5M2: r = encode ? f32ToE5m2(v) : e5m2ToF32(v); break;
                  default: r = 0xDEADBEEFu;
                }
                out[i] = r;
              }
            }
            """;

    private static GpuKernels gpu;
    private static CudaModule module;
    private static String architecture;

    @BeforeAll
    static void compile(@TempDir Path cache) {
        gpu = GpuKernels.open(cache);
        architecture = CudaInternals.architecture(gpu.context);
        CompiledKernel compiled = KernelCompiler.create(cache).compile("reduce_conversions.cu", SOURCE, architecture,
                KernelCompiler.deviceHeaders(), List.of());
        module = CudaModule.load(gpu.context, compiled);
    }

    @AfterAll
    static void close() {
        if (module != null) {
            module.close();
        }
        if (gpu != null) {
            gpu.close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = DataType.class, names = {"FLOAT16", "BFLOAT16", "FP8_E4M3", "FP8_E5M2"})
    void everyCodeDecodesAndEveryMidpointEncodesAsOnTheHost(DataType type) {
        int[] codes = new int[1 << type.bytes() * 8];
        for (int c = 0; c < codes.length; c++) {
            codes[c] = c;
        }
        int[] decoded = run(type, codes, false);
        for (int c = 0; c < codes.length; c++) {
            int code = c;
            int want = Float.floatToRawIntBits(ReduceHeaderCrossCheckTest.decode(type, c));
            assertEquals(want, decoded[c], () -> type + " code 0x" + Integer.toHexString(code) + " on " + architecture);
        }
        int[] values = ReduceHeaderCrossCheckTest.encodeVectors(type);
        int[] encoded = run(type, values, true);
        for (int i = 0; i < values.length; i++) {
            int v = values[i];
            int got = encoded[i];
            int want = ReduceHeaderCrossCheckTest.encode(type, v);
            assertEquals(want, got, () -> type + " of fp32 0x" + Integer.toHexString(v) + " (" + Float.intBitsToFloat(v)
                    + ") on " + architecture + ": GPU 0x" + Integer.toHexString(got) + ", Reductions 0x"
                    + Integer.toHexString(want));
        }
        System.out.println(type + " on " + architecture + ": " + codes.length + " codes decoded, " + values.length
                + " fp32 values encoded, as Reductions does");
    }

    private static int[] run(DataType type, int[] in, boolean encode) {
        long bytes = in.length * 4L;
        try (GpuKernels.Mapped input = gpu.mapped(bytes); GpuKernels.Mapped output = gpu.mapped(bytes)) {
            input.host().write(0, in, 0, in.length);
            KernelArgs args = KernelArgs.builder().pointer(input.device()).pointer(output.device()).i32(in.length)
                    .i32(type.code()).i32(encode ? 1 : 0).build();
            StepVerifier.create(module.function("convert").run(LaunchConfig.of(256, 256), args, DEADLINE))
                    .verifyComplete();
            int[] out = new int[in.length];
            output.host().read(0, out, 0, out.length);
            return out;
        }
    }
}
