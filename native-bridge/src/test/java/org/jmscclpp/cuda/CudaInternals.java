package org.jmscclpp.cuda;

/**
 * What the tests of other packages ({@code org.jmscclpp.cuda.kernel}, {@code org.jmscclpp.cuda.collective})
 * reach of the CUDA backend's package-private members, so that the library does not make them public for
 * tests: a bare GPU context without a backend, the device count, a context's architecture, a stream pool's
 * idle streams.
 */
public final class CudaInternals {

    private CudaInternals() {
    }

    /** GPUs the driver sees ({@code cuDeviceGetCount}); throws where the driver does not load. */
    public static int deviceCount() {
        return CudaContext.deviceCount();
    }

    /** The primary context of GPU {@code ordinal}, retained until closed. */
    public static CudaContext openContext(int ordinal) {
        return CudaContext.open(ordinal);
    }

    /** The context's GPU architecture, such as {@code sm_90}. */
    public static String architecture(CudaContext context) {
        return context.architecture();
    }

    /** Finished streams {@code pool} keeps for reuse. */
    public static int idleStreams(StreamPool pool) {
        return pool.idleCount();
    }
}
