package org.jmscclpp.nativebridge;

import com.sun.jna.Pointer;
import java.util.Locale;
import java.util.Optional;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * The CUDA driver calls made per kernel wait, per signal, per copy and per launch, through one binding or the
 * other: {@link Binding#JNA JNA}'s direct mapping, or {@link Binding#FFM the JDK's foreign-function API}
 * ({@code java.lang.foreign} downcalls into the same {@code libcuda} file). {@link CudaDriver}'s static methods of
 * the same names go through the binding {@link CudaDriver#hotCalls()} chose; the benchmark and the tests take
 * either binding here to compare them in one JVM. Arguments and results are those of {@link CudaDriver}.
 */
public sealed interface CudaHotCalls permits JnaHotCalls, FfmHotCalls {

    /**
     * The system property choosing the binding of the hot calls: {@code true} (the default) for FFM,
     * {@code false} for JNA. Where it is not set, the environment variable {@value #ENV} decides the same way.
     */
    String PROPERTY = "jmscclpp.cuda.ffm";
    /** The environment variable read when {@value #PROPERTY} is not set. */
    String ENV = "JMSCCLPP_CUDA_FFM";

    /** How the calls reach the driver. */
    enum Binding {
        /** JNA direct mapping ({@code Native.register}): a JNI call and JNA's argument conversion. */
        JNA,
        /** {@code java.lang.foreign} downcall handles, the cheapest calls critical. */
        FFM
    }

    /** The binding these calls go through. */
    Binding binding();

    /** {@code cuEventQuery}. */
    int cuEventQuery(long event);

    /** {@code cuCtxSetCurrent}. */
    int cuCtxSetCurrent(long context);

    /** {@code cuStreamWriteValue64_v2}. */
    int cuStreamWriteValue64_v2(long stream, long address, long value, int flags);

    /** {@code cuMemcpyDtoDAsync_v2}. */
    int cuMemcpyDtoDAsync_v2(long dst, long src, long bytes, long stream);

    /** {@code cuLaunchKernel}; {@code kernelParams} is the {@code void**} of the arguments. */
    int cuLaunchKernel(long function, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
                       int sharedMemBytes, long stream, Pointer kernelParams, @Nullable Pointer extra);

    /** The JNA binding (its calls fail with {@link UnsatisfiedLinkError} where the driver did not load). */
    static CudaHotCalls jna() {
        return JnaHotCalls.INSTANCE;
    }

    /**
     * The FFM binding.
     *
     * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} saying why it could not be linked (no driver,
     *                           a symbol missing, native access denied)
     */
    static CudaHotCalls ffm() {
        // the driver first: its initialisation links FfmHotCalls, which must never start inside its own
        Optional<String> reason = CudaDriver.unavailableReason().or(FfmHotCalls::unavailableReason);
        if (reason.isPresent()) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the FFM binding of the CUDA driver is "
                    + "unavailable: " + reason.get()).phase("cuda").build();
        }
        return FfmHotCalls.INSTANCE;
    }

    /** {@code binding}'s calls; see {@link #jna()} and {@link #ffm()}. */
    static CudaHotCalls of(Binding binding) {
        return binding == Binding.FFM ? ffm() : jna();
    }

    /**
     * The binding asked for: {@code property} (the value of {@value #PROPERTY}) when set, else {@code env} (the
     * value of {@value #ENV}), else FFM. {@code true}/{@code ffm} and {@code false}/{@code jna} in any case.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for any other value
     */
    static Binding requested(@Nullable String property, @Nullable String env) {
        String source = property != null && !property.isBlank() ? "-D" + PROPERTY
                : env != null && !env.isBlank() ? ENV : null;
        if (source == null) {
            return Binding.FFM;
        }
        String value = (property != null && !property.isBlank() ? property : env).strip();
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "true", "ffm" -> Binding.FFM;
            case "false", "jna" -> Binding.JNA;
            default -> throw JmscclppException.builder(ErrorCode.INVALID_USAGE, source + "=" + value
                    + " is not a binding of the CUDA hot calls: true (FFM) or false (JNA)").phase("cuda").build();
        };
    }
}
