package org.jmscclpp.cuda.kernel;

import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.ClassPathResources;
import org.jmscclpp.cuda.CudaBackend;
import org.jspecify.annotations.Nullable;

/**
 * The library's test and benchmark kernels, class-path resources under {@value #RESOURCE_ROOT}:
 * {@code fifo}, {@code semaphores}, {@code port_channel} and {@code memory_channel} ({@code .cu}),
 * each file's header comment giving its kernels' exact parameter lists. {@link #load} compiles a
 * file with NVRTC and the device headers for a backend's GPU and loads it into that GPU's context,
 * once per backend and file. Thread-safe.
 */
public final class DeviceKernels {

    /** Where the kernel sources lie on the class path. */
    public static final String RESOURCE_ROOT = "org/jmscclpp/cuda/kernel/kernels/";

    /** Every kernel file, by the name {@link #source} and {@link #load} take. */
    public static final List<String> FILES = List.of("fifo", "semaphores", "port_channel", "memory_channel");

    private static final Object LOCK = new Object();
    /** Loaded modules by backend (identity: backends do not override equals) and file; guarded by LOCK. */
    private static final Map<Key, CudaModule> MODULES = new HashMap<>();
    private static @Nullable KernelCompiler compiler;

    private record Key(CudaBackend backend, String name, String source) {
    }

    private DeviceKernels() {
    }

    /**
     * The CUDA source of the kernel file {@code file} ({@code "port_channel"}: the resource
     * {@code port_channel.cu}).
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for a name not in {@link #FILES};
     *                           {@link ErrorCode#SYSTEM_ERROR} when the resource is missing or unreadable
     */
    public static String source(String file) {
        if (!FILES.contains(file)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no kernel file '" + file + "'; the files are "
                    + FILES).phase("device kernels").build();
        }
        return ClassPathResources.text(DeviceKernels.class.getResourceAsStream("/" + RESOURCE_ROOT + file + ".cu"), RESOURCE_ROOT + file + ".cu",
                "kernel source", "device kernels");
    }

    /**
     * The module of {@code file} in {@code backend}'s GPU: compiled ({@link KernelCompiler#create()},
     * whose disk cache spares later processes the compile) for {@link CudaBackend#architecture()}
     * with the device headers, and loaded on the first call; the same module afterwards, until it
     * or its backend is closed. Callers do not close it: it lives as long as the backend.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for an unknown file or a closed backend;
     *                           {@link ErrorCode#SYSTEM_ERROR} when NVRTC or the driver fails
     */
    public static CudaModule load(CudaBackend backend, String file) {
        return load(backend, file, source(file));
    }

    /**
     * The module of a kernel file of the caller's own ({@code source}, which may include
     * {@code <jmscclpp/...cuh>}), named {@code name} in errors and logs: compiled and loaded into
     * {@code backend}'s GPU as {@link #load(CudaBackend, String)} does, once per backend and source.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for a closed backend or a source that
     *                           does not compile (with NVRTC's log); {@link ErrorCode#SYSTEM_ERROR}
     *                           when NVRTC or the driver fails
     */
    public static CudaModule load(CudaBackend backend, String name, String source) {
        if (backend.isClosed()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the CUDA backend is closed: " + backend)
                    .phase("device kernels").build();
        }
        synchronized (LOCK) {
            // forget modules of backends closed since, so that closed backends are not kept reachable
            for (Iterator<Map.Entry<Key, CudaModule>> it = MODULES.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<Key, CudaModule> e = it.next();
                if (e.getKey().backend().isClosed() || e.getValue().isClosed()) {
                    it.remove();
                }
            }
            Key key = new Key(backend, name, source);
            CudaModule module = MODULES.get(key);
            if (module == null) {
                if (compiler == null) {
                    compiler = KernelCompiler.create();
                }
                CompiledKernel compiled = compiler.compile(name, source, backend.architecture(),
                        DeviceHeaders.sources());
                module = backend.loadModule(compiled.cubin());
                MODULES.put(key, module);
            }
            return module;
        }
    }
}
