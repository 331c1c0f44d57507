package org.jmscclpp.cuda.collective;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/** The CUDA sources of this package, class-path resources read once. */
final class CudaKernelSource {

    private static final Map<String, String> SOURCES = new ConcurrentHashMap<>();

    private CudaKernelSource() {
    }

    /** The text of the resource {@code path}; SYSTEM_ERROR when it is missing. */
    static String get(String path) {
        return SOURCES.computeIfAbsent(path, CudaKernelSource::read);
    }

    private static String read(String path) {
        try (InputStream in = CudaKernelSource.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the kernel source " + path
                        + " is not on the class path").phase("collective kernels").build();
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot read the kernel source " + path)
                    .phase("collective kernels").cause(e).build();
        }
    }
}
