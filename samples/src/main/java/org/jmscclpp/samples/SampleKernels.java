package org.jmscclpp.samples;

import org.jmscclpp.core.spi.ClassPathResources;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.kernel.CudaModule;
import org.jmscclpp.cuda.kernel.DeviceKernels;

/**
 * The samples' own CUDA kernels: class-path resources {@value #RESOURCE_ROOT}{@code NAME.cu},
 * each including the library's device headers ({@code <jmscclpp/...cuh>}), compiled by NVRTC and
 * loaded once per backend by {@link DeviceKernels#load(CudaBackend, String, String)}.
 */
final class SampleKernels {

    static final String RESOURCE_ROOT = "org/jmscclpp/samples/kernels/";

    private SampleKernels() {
    }

    /** The source of {@code NAME.cu}; SYSTEM_ERROR when the resource is missing. */
    static String source(String name) {
        return ClassPathResources.text(SampleKernels.class.getResourceAsStream("/" + RESOURCE_ROOT + name + ".cu"), RESOURCE_ROOT + name + ".cu",
                "kernel source", "sample kernels");
    }

    /** The module of {@code NAME.cu} on {@code backend}'s GPU; it lives as long as the backend. */
    static CudaModule load(CudaBackend backend, String name) {
        return load(backend, name, source(name));
    }

    /** The module of {@code source} (a kernel file with what it needs defined first), named {@code name} in errors and logs. */
    static CudaModule load(CudaBackend backend, String name, String source) {
        return DeviceKernels.load(backend, "samples/" + name, source);
    }
}
