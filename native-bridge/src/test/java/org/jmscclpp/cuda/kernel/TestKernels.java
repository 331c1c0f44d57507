package org.jmscclpp.cuda.kernel;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The CUDA sources of the tests: the GPU test and benchmark kernels of {@link DeviceKernels}
 * (main resources under {@value #KERNELS}; each file's comment gives the exact parameter lists),
 * and the test resource {@value #API}, which only instantiates every function of the device headers.
 */
final class TestKernels {

    /** Where the kernels lie on the class path. */
    static final String KERNELS = DeviceKernels.RESOURCE_ROOT;

    /** The compile-only coverage of the device API. */
    static final String API = "org/jmscclpp/cuda/kernel/headers/api.cu";

    /** The kernel files, by resource name. */
    static final List<String> FILES = DeviceKernels.FILES.stream().map(f -> KERNELS + f + ".cu").toList();

    private TestKernels() {
    }

    /** The source of the resource {@code name}. */
    static String source(String name) {
        try (InputStream in = TestKernels.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("no test resource " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes the resource {@code name} into {@code dir} under its file name and returns the file. */
    static Path copy(String name, Path dir) throws IOException {
        Path file = dir.resolve(name.substring(name.lastIndexOf('/') + 1));
        Files.writeString(file, source(name), StandardCharsets.UTF_8);
        return file;
    }
}
