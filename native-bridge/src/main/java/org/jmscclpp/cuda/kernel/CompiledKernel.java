package org.jmscclpp.cuda.kernel;

import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What {@link KernelCompiler} made of one CUDA C++ program: the program's name, the architecture
 * it was compiled for ({@code sm_90}), the cubin (an ELF image the driver loads as a module) and
 * NVRTC's log (warnings; empty when there were none).
 *
 * <p>Immutable: the cubin is copied in and out.
 *
 * @param name         the program name given to the compiler (what NVRTC's messages call the source)
 * @param architecture the {@code sm_XY} architecture of the machine code
 * @param cubin        the ELF image
 * @param log          NVRTC's log of the compilation, possibly empty
 */
public record CompiledKernel(String name, String architecture, byte[] cubin, String log) {

    public CompiledKernel {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(architecture, "architecture");
        Objects.requireNonNull(log, "log");
        cubin = cubin.clone();
    }

    /** A copy of the ELF image. */
    @Override
    public byte[] cubin() {
        return cubin.clone();
    }

    /** The ELF image without a copy, for loading it. */
    byte[] cubinView() {
        return cubin;
    }

    /** Bytes of the cubin. */
    public int size() {
        return cubin.length;
    }

    @Override
    public boolean equals(@Nullable Object other) {
        return other instanceof CompiledKernel k && name.equals(k.name) && architecture.equals(k.architecture)
                && Arrays.equals(cubin, k.cubin) && log.equals(k.log);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, architecture, Arrays.hashCode(cubin), log);
    }

    @Override
    public String toString() {
        return "CompiledKernel[" + name + ", " + architecture + ", " + cubin.length + " bytes"
                + (log.isEmpty() ? "" : ", with log") + "]";
    }
}
