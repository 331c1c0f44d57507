package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.cuda.kernel.CudaModule;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;
import org.jspecify.annotations.Nullable;

/**
 * {@link CollectiveData} on the GPU: the kernels of {@code kernels/coll_data.cu}, compiled per
 * (type, reduction) by NVRTC with {@code COLLDATA_T} and {@code COLLDATA_OP} defined (one module
 * per type for the kinds that move data) and enqueued on a stream, so the input and the poison
 * are in place before work enqueued after them there, and nothing waits until {@link #check}: it
 * enqueues a reset of an 8-byte device counter and the check kernel (which adds its wrong
 * elements to the counter with atomics), waits for the stream and copies the counter back.
 */
final class CudaCollectiveData implements CollectiveData.Engine {

    static final int THREADS = 256;
    /** Blocks per multiprocessor at most: the kernels stride over the rest. */
    private static final int BLOCKS_PER_SM = 8;

    private final CudaBackend backend;
    private final CudaStream stream;
    private final Duration timeout;
    private final DeviceBuffer counter;
    private final int maxBlocks;
    private final Map<String, CudaModule> modules = new HashMap<>();

    CudaCollectiveData(CudaBackend backend, CudaStream stream, Duration timeout) {
        this.backend = backend;
        this.stream = stream;
        this.timeout = timeout;
        this.maxBlocks = Math.max(1, backend.multiprocessors() * BLOCKS_PER_SM);
        this.counter = backend.allocate(Long.BYTES);
    }

    /** The source of the module for {@code type} and {@code op} (null: the module of the moving kinds). */
    static String source(DataType type, @Nullable ReduceOp op) {
        return "#define COLLDATA_T " + type.code() + "\n#define COLLDATA_OP " + (op == null ? -1 : op.code()) + "\n"
                + SampleKernels.source("coll_data");
    }

    /** The module name of {@code type} and {@code op}: {@code coll_data-float-sum}, {@code coll_data-half-move}. */
    static String moduleName(DataType type, @Nullable ReduceOp op) {
        return "coll_data-" + type.label() + "-" + (op == null ? "move" : op.label());
    }

    private CudaModule module(CollectiveRun run) {
        ReduceOp op = run.kind().reduces() ? run.op() : null;
        return modules.computeIfAbsent(moduleName(run.type(), op), name -> SampleKernels.load(backend, name,
                source(run.type(), op)));
    }

    private CudaModule module(DataType type) {
        return modules.computeIfAbsent(moduleName(type, null), name -> SampleKernels.load(backend, name,
                source(type, null)));
    }

    private LaunchConfig grid(long elements) {
        long blocks = Math.min(maxBlocks, (elements + THREADS - 1) / THREADS);
        return LaunchConfig.of((int) Math.max(1, blocks), THREADS);
    }

    /** The arguments of {@code collDataPoison} (see the kernel file). */
    static KernelArgs poisonArgs(long out, long elements) {
        return KernelArgs.builder().pointer(out).i64(elements).build();
    }

    /** The arguments of {@code collDataInput}. */
    static KernelArgs inputArgs(long dst, CollectiveRun run, int rank, long seed) {
        return KernelArgs.builder().pointer(dst).i64(run.sendElements()).i32(run.kind().code()).i32(run.n()).i32(rank)
                .i64(seed).build();
    }

    /** The arguments of {@code collDataReset}. */
    static KernelArgs resetArgs(long counter) {
        return KernelArgs.builder().pointer(counter).build();
    }

    /** The arguments of {@code collDataCheck}. */
    static KernelArgs checkArgs(long out, CollectiveRun run, int rank, long seed, long counter) {
        return KernelArgs.builder().pointer(out).i64(run.recvElements()).i32(run.kind().code()).i32(run.n()).i32(rank)
                .i32(run.root()).i64(run.count()).i64(seed).pointer(counter).build();
    }

    @Override
    public void poison(DeviceBuffer out, DataType type, long elements) {
        stream.launch(module(type).function("collDataPoison"), grid(elements), poisonArgs(out.address(), elements));
    }

    @Override
    public void input(DeviceBuffer dst, CollectiveRun run, int rank, long seed) {
        stream.launch(module(run).function("collDataInput"), grid(run.sendElements()), inputArgs(dst.address(), run,
                rank, seed));
    }

    @Override
    public void await() {
        stream.synchronize(timeout, "the data of a collective run");
    }

    @Override
    public long check(DeviceBuffer out, CollectiveRun run, int rank, long seed) {
        CudaModule m = module(run);
        stream.launch(m.function("collDataReset"), LaunchConfig.of(1, 1), resetArgs(counter.address()));
        stream.launch(m.function("collDataCheck"), grid(run.recvElements()), checkArgs(out.address(), run, rank, seed,
                counter.address()));
        stream.synchronize(timeout, "the check of " + run.describe());
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
