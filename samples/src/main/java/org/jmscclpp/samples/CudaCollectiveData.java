package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.CudaBackend;
import org.jmscclpp.nativebridge.CudaModule;
import org.jmscclpp.nativebridge.CudaStream;
import org.jmscclpp.nativebridge.Kernel;
import org.jmscclpp.nativebridge.KernelArgs;
import org.jmscclpp.nativebridge.LaunchConfig;

/**
 * {@link CollectiveData} on the GPU: the kernels of {@code kernels/coll_data.cu} enqueued on the
 * collective's stream, so input and poison are in place before the run enqueued after them, and
 * nothing waits until {@link #check}: it enqueues a reset of an 8-byte device counter and the
 * check kernel (which adds its wrong elements to the counter with atomics), waits for the stream
 * and copies the counter back.
 */
final class CudaCollectiveData implements CollectiveData.Engine {

    private static final int THREADS = 256;
    /** Blocks per multiprocessor at most: the kernels stride over the rest. */
    private static final int BLOCKS_PER_SM = 8;

    private final CudaBackend backend;
    private final CudaStream stream;
    private final Duration timeout;
    private final Kernel inputKernel;
    private final Kernel poisonKernel;
    private final Kernel resetKernel;
    private final Kernel checkKernel;
    private final DeviceBuffer counter;
    private final int maxBlocks;

    private CudaCollectiveData(CudaBackend backend, CudaStream stream, Duration timeout, CudaModule module) {
        this.backend = backend;
        this.stream = stream;
        this.timeout = timeout;
        this.inputKernel = module.function("collDataInput");
        this.poisonKernel = module.function("collDataPoison");
        this.resetKernel = module.function("collDataReset");
        this.checkKernel = module.function("collDataCheck");
        this.maxBlocks = Math.max(1, backend.multiprocessors() * BLOCKS_PER_SM);
        this.counter = backend.allocate(Long.BYTES);
    }

    /** Loads the kernels on the collective's GPU; INVALID_USAGE when the backend is not CUDA or the collective has no stream. */
    static CudaCollectiveData create(Collective c, CollectiveSetup setup) {
        if (!(setup.backend() instanceof CudaBackend cuda)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the " + setup.backend().name()
                    + " backend is not the CUDA backend").rank(setup.rank()).phase("collective data").build();
        }
        CudaStream stream = c.stream();
        if (stream == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the " + c.algorithm() + " " + c.kind().label()
                    + " on the CUDA backend has no stream to enqueue the data kernels on").rank(setup.rank())
                    .phase("collective data").build();
        }
        return new CudaCollectiveData(cuda, stream, setup.timeout(), SampleKernels.load(cuda, "coll_data"));
    }

    private LaunchConfig grid(long elements) {
        long blocks = Math.min(maxBlocks, (elements + THREADS - 1) / THREADS);
        return LaunchConfig.of((int) Math.max(1, blocks), THREADS);
    }

    @Override
    public void poison(DeviceBuffer out, DataType type, long elements) {
        stream.launch(poisonKernel, grid(elements), KernelArgs.builder().pointer(out.address()).i32(type.code())
                .i64(elements).build());
    }

    @Override
    public void input(DeviceBuffer dst, long byteOffset, CollectiveKind kind, DataType type, int n, int rank,
                      long count, long seed) {
        stream.launch(inputKernel, grid(CollectiveValues.inputElements(kind, n, count)), KernelArgs.builder()
                .pointer(dst.address() + byteOffset).i32(CollectiveValues.kindCode(kind)).i32(type.code()).i32(n)
                .i32(rank).i64(count).i64(seed).build());
    }

    @Override
    public long check(DeviceBuffer out, CollectiveKind kind, DataType type, int n, int rank, long count, long seed) {
        stream.launch(resetKernel, LaunchConfig.of(1, 1), KernelArgs.builder().pointer(counter.address()).build());
        stream.launch(checkKernel, grid(CollectiveValues.outputElements(kind, n, count)), KernelArgs.builder()
                .pointer(out.address()).i32(CollectiveValues.kindCode(kind)).i32(type.code()).i32(n).i32(rank)
                .i64(count).i64(seed).pointer(counter.address()).build());
        stream.synchronize(timeout, "the check of a " + kind.label() + " run");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wrong = arena.allocate(ValueLayout.JAVA_LONG);
            backend.copyToHost(wrong, counter, 0);
            return wrong.get(ValueLayout.JAVA_LONG, 0);
        }
    }

    @Override
    public void close() {
        counter.close();
    }
}
