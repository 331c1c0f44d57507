package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.jmscclpp.nativebridge.Nvrtc;
import org.junit.jupiter.api.Assumptions;

/**
 * For the tests of other modules that ship kernel files of their own (the samples'): compile a
 * source against the device headers with nvcc, as {@link DeviceHeadersCompileTest} compiles this
 * module's, and tell whether NVRTC can run here. Both abort the calling test (skipped, with the
 * reason) where the tool is missing; no GPU is needed.
 */
public final class DeviceCodeChecks {

    private DeviceCodeChecks() {
    }

    /**
     * Compiles {@code source} (named {@code fileName}, e.g. {@code allreduce.cu}) with
     * {@code nvcc -arch=sm_90 -std=c++17 -I<the device headers> -c} in {@code dir}, and fails the
     * test with nvcc's output when it does not compile. Returns nvcc's output (its warnings).
     */
    public static String assertNvccCompiles(String fileName, String source, Path dir)
            throws IOException, InterruptedException {
        Path nvcc = Nvcc.require();
        Path include = DeviceHeaders.copyTo(dir.resolve("include"));
        Path file = dir.resolve(fileName);
        Files.writeString(file, source, StandardCharsets.UTF_8);
        Path object = dir.resolve(fileName + ".o");
        Nvcc.Result result = Nvcc.run(List.of(nvcc.toString(), "-arch=sm_90", "-std=c++17", "-I" + include, "-c",
                file.toString(), "-o", object.toString()), dir);
        assertTrue(result.ok(), () -> "nvcc failed on " + fileName + " (exit " + result.exitCode() + "):\n"
                + result.output());
        assertTrue(Files.size(object) > 0, "nvcc wrote " + object);
        return result.output();
    }

    /**
     * Writes the device headers ({@code jmscclpp/*.cuh}) under {@code includeRoot} for an
     * {@code -I} of nvcc, as {@link #assertNvccCompiles} does; returns {@code includeRoot}.
     */
    public static Path copyDeviceHeaders(Path includeRoot) {
        return DeviceHeaders.copyTo(includeRoot);
    }

    /** Aborts the calling test, with the reason, where NVRTC cannot be loaded. */
    public static void requireNvrtc() {
        Nvrtc.unavailableReason().ifPresent(reason -> Assumptions.abort("NVRTC is not available: " + reason));
    }
}
