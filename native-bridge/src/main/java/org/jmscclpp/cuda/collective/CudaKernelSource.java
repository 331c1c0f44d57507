package org.jmscclpp.cuda.collective;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jmscclpp.core.spi.ClassPathResources;

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
        return ClassPathResources.text(CudaKernelSource.class.getResourceAsStream("/" + path), path, "kernel source",
                "collective kernels");
    }
}
