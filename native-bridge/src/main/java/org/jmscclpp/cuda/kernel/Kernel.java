package org.jmscclpp.cuda.kernel;

import java.lang.ref.Reference;
import java.time.Duration;
import java.util.Objects;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.cuda.StreamPool;
import org.jmscclpp.nativebridge.CudaDriver;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;

/**
 * One {@code __global__} function of a loaded {@link CudaModule} ({@code CUfunction}), launched
 * with {@code cuLaunchKernel}.
 *
 * <p>A block may use up to 48 KiB of dynamic shared memory without asking; a launch that wants
 * more raises the function's limit first ({@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}),
 * up to what the device allows. Thread-safe: any number of launches and runs may be in flight.
 */
public final class Kernel {

    /** Dynamic shared memory a launch may use without raising the function's limit. */
    static final int DEFAULT_DYNAMIC_SHARED_BYTES = 48 * 1024;
    static final int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

    private final CudaModule module;
    private final String name;
    private final long handle;
    /** The dynamic shared memory limit set on the function so far; raised under this object's lock. */
    private volatile int sharedMemoryLimit = DEFAULT_DYNAMIC_SHARED_BYTES;

    Kernel(CudaModule module, String name, long handle) {
        this.module = module;
        this.name = name;
        this.handle = handle;
    }

    /** The kernel's name as the module exports it. */
    public String name() {
        return name;
    }

    /** The module the kernel belongs to. */
    public CudaModule module() {
        return module;
    }

    /**
     * Enqueues one launch on {@code stream} and returns once the driver took it (not when the
     * kernel finished: wait on the stream for that). The driver copies {@code args}' values
     * during the call. The same as {@link CudaStream#launch(Kernel, LaunchConfig, KernelArgs)}.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the module is closed or the
     *                           stream belongs to another context; {@link ErrorCode#SYSTEM_ERROR}
     *                           naming the kernel, the config and the driver's error when the
     *                           launch is refused (too much shared memory, too many registers for
     *                           the block, a context lost to an earlier fault)
     */
    public void launch(LaunchConfig config, KernelArgs args, CudaStream stream) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(args, "args");
        if (stream.context() != module.context()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "kernel " + name + " belongs to "
                    + module.context() + ", the stream to " + stream.context()).phase("launch").build();
        }
        // the phase's text is built only when it is needed (the module is closed): a launch is a hot call
        module.whileOpen(() -> "launch kernel " + name + config, () -> {
            allowSharedMemory(config);
            module.context().makeCurrent();
            int result = CudaDriver.cuLaunchKernel(handle, config.gridX(), config.gridY(), config.gridZ(),
                    config.blockX(), config.blockY(), config.blockZ(), config.sharedMemoryBytes(), stream.handle(),
                    args.params(), null);
            // the parameter block must stay allocated until the driver copied it, which the call does
            Reference.reachabilityFence(args);
            if (result != CudaDriver.CUDA_SUCCESS) {
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cuLaunchKernel(" + name + config + args
                        + ", on " + module.context() + ") failed: " + CudaDriver.describe(result)).phase("launch")
                        .build();
            }
            return null;
        });
    }

    /**
     * A lazy Mono that, on each subscription, launches the kernel on a stream of its own (taken
     * from the module's small pool of finished streams, or created) and completes once the kernel
     * finished; the wait polls an event from a virtual thread, never blocking in the driver.
     * Concurrent runs of one kernel each get their own stream, so they may overlap on the GPU.
     *
     * <p>Errors: {@link ErrorCode#INVALID_USAGE} when the module is closed;
     * {@link ErrorCode#SYSTEM_ERROR} when the launch is refused or the kernel failed (it trapped,
     * touched a bad address: the message names the kernel, the config and the driver's error name,
     * such as {@code CUDA_ERROR_ILLEGAL_ADDRESS}; such a fault loses the whole context);
     * {@link ErrorCode#TIMEOUT} when the kernel has not finished after {@code timeout}. After a
     * timeout, and after cancellation, <b>the kernel may still be running</b>: nothing can stop a
     * kernel from the host; its stream is then discarded rather than reused, and the memory the
     * kernel uses must stay allocated until it ends.
     */
    public Mono<Void> run(LaunchConfig config, KernelArgs args, Duration timeout) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(args, "args");
        Objects.requireNonNull(timeout, "timeout");
        return Mono.defer(() -> {
            StreamPool streams = module.streams();
            CudaStream stream = module.whileOpen("run kernel " + name + config, streams::take);
            try {
                launch(config, args, stream);
            } catch (RuntimeException e) {
                // the launch was refused, so nothing runs on the stream
                streams.giveBack(stream);
                return Mono.error(e);
            }
            return stream.drained(timeout, "kernel " + name + config)
                    .onErrorMap(e -> e instanceof JmscclppException j && j.code() == ErrorCode.SYSTEM_ERROR,
                            e -> JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "kernel " + name + config
                                    + " failed: " + ((JmscclppException) e).detail()).phase("launch").cause(e)
                                    .build())
                    .doFinally(signal -> {
                        if (signal == SignalType.ON_COMPLETE) {
                            streams.giveBack(stream);
                        } else {
                            streams.discard(stream);
                        }
                    });
        });
    }

    /** Raises the function's dynamic shared memory limit when {@code config} needs more than it allows. */
    private void allowSharedMemory(LaunchConfig config) {
        int wanted = config.sharedMemoryBytes();
        if (wanted <= sharedMemoryLimit) {
            return;
        }
        synchronized (this) {
            if (wanted <= sharedMemoryLimit) {
                return;
            }
            module.context().makeCurrent();
            int result = CudaDriver.cuFuncSetAttribute(handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, wanted);
            if (result != CudaDriver.CUDA_SUCCESS) {
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "kernel " + name + config + ": cannot allow "
                        + wanted + " bytes of dynamic shared memory: " + CudaDriver.describe(result)).phase("launch")
                        .build();
            }
            sharedMemoryLimit = wanted;
        }
    }

    @Override
    public String toString() {
        return "Kernel[" + name + " in " + module.name() + "]";
    }
}
