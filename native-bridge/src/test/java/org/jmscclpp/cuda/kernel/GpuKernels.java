package org.jmscclpp.cuda.kernel;

import com.sun.jna.Pointer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.jmscclpp.cuda.CudaContext;
import org.jmscclpp.cuda.CudaInternals;
import org.jmscclpp.nativebridge.CudaDriver;
import org.jmscclpp.nativebridge.Nvrtc;
import org.junit.jupiter.api.Assumptions;

/**
 * The kernels the GPU tests launch, and the fixture they need: the first GPU's context, the
 * kernels compiled and loaded, and pinned host memory the GPU maps. {@link #open} aborts the
 * calling test (with the reason) where there is no driver, no GPU or no NVRTC.
 */
final class GpuKernels implements AutoCloseable {

    static final String UTIL_NAME = "test/util.cuh";
    static final String UTIL = """
            #pragma once
            // nanoseconds of the GPU's global timer: bounds every wait a test kernel makes
            __device__ inline unsigned long long nowNs() {
                unsigned long long t;
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
                return t;
            }
            """;
    static final String SOURCE = """
            #include "test/util.cuh"

            extern "C" __global__ void scale(float* x, int n, float factor) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] *= factor;
            }

            // sums 0..n-1 through n ints of dynamic shared memory
            extern "C" __global__ void sharedSum(long long* out, int n) {
                extern __shared__ int buffer[];
                for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = i;
                __syncthreads();
                if (threadIdx.x == 0) {
                    long long sum = 0;
                    for (int i = 0; i < n; i++) sum += buffer[i];
                    out[0] = sum;
                }
            }

            struct Triple { long long a; int b; int c; };

            extern "C" __global__ void takeStruct(Triple t, double d, long long* out) {
                out[0] = t.a;
                out[1] = t.b;
                out[2] = t.c;
                out[3] = (long long) (d * 4.0);
            }

            // raises flags[me], then waits for flags[other]: result[me] is 1 when it came, 2 when limitNs ran out
            extern "C" __global__ void handshake(volatile int* flags, volatile int* result, int me, int other,
                                                 unsigned long long limitNs) {
                flags[me] = 1;
                __threadfence_system();
                unsigned long long start = nowNs();
                while (flags[other] == 0) {
                    if (nowNs() - start > limitNs) {
                        result[me] = 2;
                        return;
                    }
                }
                result[me] = 1;
            }

            // waits for the host to raise *flag: *done is 1 when it came, 2 when limitNs ran out
            extern "C" __global__ void waitFlag(volatile int* flag, volatile int* done, unsigned long long limitNs) {
                unsigned long long start = nowNs();
                while (*flag == 0) {
                    if (nowNs() - start > limitNs) {
                        *done = 2;
                        return;
                    }
                }
                *done = 1;
            }

            extern "C" __global__ void fault(int* bad) {
                *bad = 1;
            }
            """;

    final CudaContext context;
    final CompiledKernel compiled;
    final CudaModule module;

    private GpuKernels(CudaContext context, CompiledKernel compiled, CudaModule module) {
        this.context = context;
        this.compiled = compiled;
        this.module = module;
    }

    static GpuKernels open(Path cacheDirectory) {
        CudaDriver.unavailableReason().ifPresent(reason -> Assumptions.abort("no CUDA driver: " + reason));
        Nvrtc.unavailableReason().ifPresent(reason -> Assumptions.abort("no NVRTC: " + reason));
        int gpus;
        try {
            gpus = CudaInternals.deviceCount();
        } catch (RuntimeException e) {
            return Assumptions.abort("the CUDA driver sees no GPU: " + e.getMessage());
        }
        Assumptions.assumeTrue(gpus > 0, "the CUDA driver sees no GPU");
        CudaContext context = CudaInternals.openContext(0);
        try {
            CompiledKernel compiled = KernelCompiler.create(cacheDirectory).compile("kernels.cu", SOURCE,
                    CudaInternals.architecture(context), Map.of(UTIL_NAME, UTIL), List.of("-lineinfo"));
            return new GpuKernels(context, compiled, CudaModule.load(context, compiled));
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    /** Zeroed pinned host memory that the GPU maps: {@link #host} for Java, {@link #device} for kernels. */
    Mapped mapped(long bytes) {
        context.makeCurrent();
        long[] host = new long[1];
        CudaDriver.check(CudaDriver.cuMemHostAlloc(host, bytes,
                CudaDriver.CU_MEMHOSTALLOC_PORTABLE | CudaDriver.CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
        long[] device = new long[1];
        CudaDriver.check(CudaDriver.cuMemHostGetDevicePointer_v2(device, host[0], 0), "cuMemHostGetDevicePointer_v2");
        Pointer pointer = new Pointer(host[0]);
        pointer.setMemory(0, bytes, (byte) 0);
        return new Mapped(context, pointer, device[0]);
    }

    record Mapped(CudaContext context, Pointer host, long device) implements AutoCloseable {
        @Override
        public void close() {
            context.makeCurrent();
            CudaDriver.cuMemFreeHost(Pointer.nativeValue(host));
        }
    }

    @Override
    public void close() {
        module.close();
        context.close();
    }
}
