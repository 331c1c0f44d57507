package org.jmscclpp.samples;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.CudaBackend;
import org.jmscclpp.nativebridge.CudaModule;
import org.jmscclpp.nativebridge.DeviceKernels;

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
        String resource = RESOURCE_ROOT + name + ".cu";
        try (InputStream in = SampleKernels.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the kernel source " + resource
                        + " is not on the class path").phase("sample kernels").build();
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot read the kernel source " + resource)
                    .phase("sample kernels").cause(e).build();
        }
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
