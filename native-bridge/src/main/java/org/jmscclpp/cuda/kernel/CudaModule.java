package org.jmscclpp.cuda.kernel;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.cuda.CudaContext;
import org.jmscclpp.cuda.StreamPool;
import org.jmscclpp.nativebridge.CudaDriver;

/**
 * A cubin loaded into one GPU's context ({@code CUmodule}), and the kernels it holds. Kernels
 * are looked up by the name the cubin exports: declare them {@code extern "C" __global__} so that
 * the name is the one written in the source rather than a C++-mangled one.
 *
 * <p>{@link #close()} unloads the module; call it once the runs of its kernels have completed
 * (a kernel still running in an unloaded module is undefined behaviour in CUDA). After close,
 * {@link #function} and every launch of its kernels fail with {@link ErrorCode#INVALID_USAGE}.
 * Thread-safe: kernels may be launched from any thread while the module is open; close waits for
 * launch calls in progress (not for the kernels) to return.
 */
public final class CudaModule implements AutoCloseable {

    /** {@code CUDA_ERROR_NOT_FOUND}: what {@code cuModuleGetFunction} says of an unknown name. */
    static final int CUDA_ERROR_NOT_FOUND = 500;
    /** Finished streams each module keeps for the next runs of its kernels. */
    private static final int IDLE_STREAMS = 4;

    private final CudaContext context;
    private final long handle;
    private final String name;
    private final StreamPool streams;
    private final ConcurrentHashMap<String, Kernel> kernels = new ConcurrentHashMap<>();
    /** Readers launch or look up; the writer unloads: nothing uses the module while it goes. */
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    /** Written under the write lock; volatile for the lock-free check of an already known kernel. */
    private volatile boolean closed;

    private CudaModule(CudaContext context, long handle, String name) {
        this.context = context;
        this.handle = handle;
        this.name = name;
        this.streams = new StreamPool(context, "module " + name, IDLE_STREAMS);
    }

    /** Loads a compiled kernel's cubin into {@code context}; the module is named after the program. */
    static CudaModule load(CudaContext context, CompiledKernel kernel) {
        return load(context, kernel.cubinView(), kernel.name());
    }

    /**
     * Loads {@code cubin} (an ELF image) into {@code context}; applications load modules with
     * {@link org.jmscclpp.cuda.CudaBackend#loadModule}.
     */
    public static CudaModule load(CudaContext context, byte[] cubin) {
        return load(context, cubin, "cubin of " + cubin.length + " bytes");
    }

    /**
     * Loads {@code cubin} into {@code context} ({@code cuModuleLoadData}).
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} naming {@code name} when the driver
     *                           refuses the image (for example a cubin for another architecture:
     *                           {@code CUDA_ERROR_NO_BINARY_FOR_GPU})
     */
    static CudaModule load(CudaContext context, byte[] cubin, String name) {
        Objects.requireNonNull(cubin, "cubin");
        long[] module = new long[1];
        context.makeCurrent();
        int result = CudaDriver.cuModuleLoadData(module, cubin);
        if (result != CudaDriver.CUDA_SUCCESS) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cuModuleLoadData(" + name + ", " + context
                    + ") failed: " + CudaDriver.describe(result)).phase("load").build();
        }
        return new CudaModule(context, module[0], name);
    }

    /**
     * The kernel called {@code kernelName} ({@code cuModuleGetFunction}); the same object for the
     * same name.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} naming {@code kernelName} when the
     *                           module has no such kernel or is closed; {@link ErrorCode#SYSTEM_ERROR}
     *                           when the driver fails otherwise
     */
    public Kernel function(String kernelName) {
        Objects.requireNonNull(kernelName, "kernelName");
        Kernel known = kernels.get(kernelName);
        if (known != null) {
            checkOpen("look up kernel " + kernelName);
            return known;
        }
        Kernel kernel = whileOpen("look up kernel " + kernelName, () -> {
            long[] function = new long[1];
            context.makeCurrent();
            int result = CudaDriver.cuModuleGetFunction(function, handle, kernelName);
            if (result == CUDA_ERROR_NOT_FOUND) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "module " + name + " has no kernel named '"
                        + kernelName + "' (a kernel not declared extern \"C\" has a C++-mangled name)")
                        .phase("load").build();
            }
            CudaDriver.check(result, "cuModuleGetFunction(" + name + ", " + kernelName + ")");
            return new Kernel(this, kernelName, function[0]);
        });
        Kernel raced = kernels.putIfAbsent(kernelName, kernel);
        return raced != null ? raced : kernel;
    }

    /** The module's name: the program it was compiled from, or its size. */
    public String name() {
        return name;
    }

    CudaContext context() {
        return context;
    }

    StreamPool streams() {
        return streams;
    }

    /**
     * Runs {@code action} with the module held open (close waits for it); {@code what} names the
     * action in the error when the module is closed. The lock is taken before the action makes
     * the context current, so no wait for it falls inside a sequence of driver calls.
     */
    <T> T whileOpen(String what, Supplier<T> action) {
        return whileOpen(() -> what, action);
    }

    /** {@link #whileOpen(String, Supplier)} with the description made only for the error. */
    <T> T whileOpen(Supplier<String> what, Supplier<T> action) {
        lock.readLock().lock();
        try {
            if (closed) {
                checkOpen(what.get());
            }
            return action.get();
        } finally {
            lock.readLock().unlock();
        }
    }

    private void checkOpen(String what) {
        if (closed) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "cannot " + what + ": module " + name
                    + " is closed").phase("launch").build();
        }
    }

    /** Whether {@link #close()} ran. */
    public boolean isClosed() {
        return closed;
    }

    /** Destroys the module's idle streams and unloads it ({@code cuModuleUnload}). Idempotent. */
    @Override
    public void close() {
        lock.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            streams.close();
            try {
                context.makeCurrent();
            } catch (JmscclppException e) {
                // the context is closed: its modules went with it
                return;
            }
            // a failure here is the context's sticky error from an earlier fault, already reported by that run
            CudaDriver.cuModuleUnload(handle);
        } finally {
            lock.writeLock().unlock();
        }
    }

    @Override
    public String toString() {
        return "CudaModule[" + name + ", " + context + (closed ? ", closed" : "") + "]";
    }
}
