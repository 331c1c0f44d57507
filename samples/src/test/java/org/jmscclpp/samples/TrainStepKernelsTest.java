package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.cuda.kernel.CompiledKernel;
import org.jmscclpp.cuda.kernel.KernelCompiler;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kernels/train_step.cu} without a GPU: it compiles with nvcc for sm_90 with every warning
 * an error, its PTX defines both kernels the sample launches and keeps the FMA passes; NVRTC
 * compiles it as {@code SampleKernels.load} will (skipped where libnvrtc does not load); and its
 * value functions, compiled for the CPU, give {@link TrainStepValues}' bits. nvcc's parts are
 * skipped, with the reason, where nvcc is absent.
 */
class TrainStepKernelsTest {

    private static final String FILE = "train_step";

    @Test
    void nvccCompilesItAndThePtxHasBothKernelsAndThePasses(@TempDir Path dir) throws IOException,
            InterruptedException {
        Path nvcc = CudaTools.nvcc();
        Path source = CudaTools.copyResource(SampleKernels.RESOURCE_ROOT + FILE + ".cu", dir, FILE + ".cu");
        Path object = dir.resolve(FILE + ".o");
        CudaTools.Result built = CudaTools.run(List.of(nvcc.toString(), "-arch=sm_90", "-std=c++17",
                "-Werror=all-warnings", "-c", source.toString(), "-o", object.toString()), dir, null);
        assertTrue(built.ok(), () -> "nvcc failed (exit " + built.exitCode() + "):\n" + built.output());
        assertTrue(Files.size(object) > 0);

        Path ptx = dir.resolve(FILE + ".ptx");
        CudaTools.Result lowered = CudaTools.run(List.of(nvcc.toString(), "-arch=sm_90", "-std=c++17", "-ptx",
                source.toString(), "-o", ptx.toString()), dir, null);
        assertTrue(lowered.ok(), () -> "nvcc -ptx failed (exit " + lowered.exitCode() + "):\n" + lowered.output());
        String text = Files.readString(ptx, StandardCharsets.UTF_8);
        assertTrue(text.contains(".entry bucketGradients("), "bucketGradients, unmangled");
        assertTrue(text.contains(".entry sgdUpdate("), "sgdUpdate, unmangled");
        // the passes are real work: the compiler kept the fused multiply-adds of the loop
        String gradients = text.substring(text.indexOf(".entry bucketGradients("), text.indexOf(".entry sgdUpdate("));
        assertTrue(gradients.contains("fma.rn.f32"), "the passes' fma survive in bucketGradients");
        assertTrue(text.substring(text.indexOf(".entry sgdUpdate(")).contains("fma.rn.f32"), "sgdUpdate is one fma");
    }

    @Test
    void nvrtcCompilesItAsTheSampleLoadsIt(@TempDir Path cache) {
        CompiledKernel kernel;
        try {
            kernel = KernelCompiler.create(cache).compile(FILE + ".cu", SampleKernels.source(FILE), "sm_90",
                    KernelCompiler.deviceHeaders());
        } catch (JmscclppException e) {
            Assumptions.assumeFalse(e.code() == ErrorCode.SYSTEM_ERROR, () -> "NVRTC is not available ("
                    + e.getMessage() + "); set JMSCCLPP_NVRTC_LIBRARY to libnvrtc.so.13");
            throw e;
        }
        assertArrayEquals(new byte[] {0x7F, 'E', 'L', 'F'}, Arrays.copyOf(kernel.cubin(), 4), "a CUDA ELF");
    }

    /** nvcc compiles train_step.cu's value functions for the CPU; they give Java's bits for every case. */
    @Test
    void theKernelsValuesAreJavasBitForBit(@TempDir Path dir) throws IOException, InterruptedException {
        Path nvcc = CudaTools.nvcc();
        CudaTools.copyResource(SampleKernels.RESOURCE_ROOT + FILE + ".cu", dir, FILE + ".cu");
        Path program = CudaTools.copyResource("org/jmscclpp/samples/train_step_values.cu", dir, "values.cu");
        CudaTools.Result built = CudaTools.run(List.of(nvcc.toString(), "-std=c++17", "-arch=sm_90", "-o",
                dir.resolve("values").toString(), program.toString()), dir, null);
        assertTrue(built.ok(), () -> "nvcc failed (exit " + built.exitCode() + "):\n" + built.output());

        SplittableRandom random = new SplittableRandom(20250601);
        List<String> cases = new ArrayList<>();
        List<String> expected = new ArrayList<>();
        for (int k = 0; k < 20_000; k++) {
            int rank = random.nextInt(8);
            int step = k == 0 ? -1 : random.nextInt(10_000);
            int bucket = random.nextInt(1024);
            long index = k % 3 == 0 ? random.nextLong(1L << 20) : random.nextLong(1L << 40);
            int passes = random.nextInt(k % 10 == 0 ? 300 : 4);
            // weights anywhere in fp32's normal range; gradients as the sample's reductions give them
            float weight = switch (k % 4) {
                case 0 -> TrainStepValues.initialWeight(bucket, index);
                case 1 -> (float) random.nextDouble(-1e6, 1e6);
                case 2 -> Float.intBitsToFloat(random.nextInt(0x00800000, 0x7F000000) | (random.nextBoolean()
                        ? 0x80000000 : 0));
                default -> (float) random.nextDouble(-1, 1);
            };
            int n = 1 + random.nextInt(8);
            float gradient = k % 2 == 0 ? TrainStepValues.reducedGradient(n, org.jmscclpp.core.collective.ReduceOp.AVG,
                    step, bucket, index) : (float) random.nextDouble(-300, 300);
            cases.add(String.format(Locale.ROOT, "%d %d %d %d %d %08x %08x", rank, step, bucket, index, passes,
                    Float.floatToRawIntBits(weight), Float.floatToRawIntBits(gradient)));
            expected.add(String.format(Locale.ROOT, "%08x %08x %08x", TrainStepValues.mixIndex(index, bucket, step),
                    Float.floatToRawIntBits(TrainStepValues.gradient(rank, step, bucket, index, passes)),
                    Float.floatToRawIntBits(TrainStepValues.sgd(weight, gradient))));
        }
        Path input = dir.resolve("cases.txt");
        Files.write(input, cases, StandardCharsets.UTF_8);
        CudaTools.Result ran = CudaTools.run(List.of(dir.resolve("values").toString()), dir, input);
        assertEquals(0, ran.exitCode(), ran.output());
        List<String> lines = ran.output().lines().toList();
        assertEquals(expected.size(), lines.size(), "one line per case");
        for (int k = 0; k < expected.size(); k++) {
            int c = k;
            assertEquals(expected.get(k), lines.get(k), () -> "case " + cases.get(c));
        }
    }
}
