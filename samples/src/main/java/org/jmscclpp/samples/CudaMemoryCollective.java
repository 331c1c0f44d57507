package org.jmscclpp.samples;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryChannel;
import org.jmscclpp.core.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.nativebridge.CudaStream;
import org.jmscclpp.nativebridge.Kernel;
import org.jmscclpp.nativebridge.KernelArgs;

/**
 * The {@code memory} algorithm of allgather, alltoall and sendrecv on the CUDA backend: one
 * {@link MemoryChannel} per peer (dst: the peer's output, mapped here over {@code CUDA_IPC}); the
 * kernels of {@code collectives.cu} store the data straight into the peers' outputs with 16-byte
 * stores from up to {@link CudaCollectiveBase#MAX_BLOCKS} blocks, then every block signals every
 * peer and block 0 waits for all of every peer's blocks, so a run ends only when every slice meant
 * for this rank has landed.
 *
 * <p>The channels' handles are copied to the GPU once, at setup; each semaphore's expected-inbound
 * word lives in device memory and the kernels advance it, so graphs of many runs replay correctly.
 * Nothing on the GPU reads a slot that a peer's next run may already be storing into (in place,
 * this rank reads only its own slot), but the host may: callers that read the output between runs
 * (checks) put a barrier between that read and the peers' next enqueue.
 */
final class CudaMemoryCollective implements Collective {

    static final String ALGORITHM = "memory";

    private final CudaCollectiveBase base;
    private final Kernel kernel;
    private final DeviceBuffer channels;

    private CudaMemoryCollective(CollectiveKind kind, CollectiveSetup setup) {
        base = new CudaCollectiveBase(kind, ALGORITHM, setup, Long.MAX_VALUE);
        try {
            List<MemoryChannel> all = new ArrayList<>();
            for (int i = 0; i < base.ranks - 1; i++) {
                int peer = base.peer(i);
                MemoryDevice2DeviceSemaphore semaphore = base.own(new MemoryDevice2DeviceSemaphore(
                        base.mesh.semaphore(peer), base.backend));
                all.add(new MemoryChannel(semaphore, base.mesh.remoteMemory(peer), base.inputMemory, null));
            }
            List<MemoryChannel> used = kind == CollectiveKind.SENDRECV
                    ? List.of(all.get(base.index(base.next())), all.get(base.index(base.previous())))
                    : all;
            List<Consumer<ByteBuffer>> encoders = new ArrayList<>();
            used.forEach(ch -> encoders.add(ch::encodeDeviceHandle));
            channels = base.deviceArray(MemoryChannel.DEVICE_HANDLE_BYTES, encoders);
            kernel = base.kernel(switch (kind) {
                case ALLGATHER -> "allgatherMemory";
                case ALLTOALL -> "alltoallMemory";
                case SENDRECV -> "sendrecvMemory";
                case ALLREDUCE -> throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                        "the memory collective moves data without reducing it: no allreduce").phase("collective setup")
                        .build();
            });
        } catch (RuntimeException e) {
            try {
                base.close();
            } catch (RuntimeException c) {
                e.addSuppressed(c);
            }
            throw e;
        }
    }

    static Collective allGather(CollectiveSetup setup) {
        return new CudaMemoryCollective(CollectiveKind.ALLGATHER, setup);
    }

    static Collective allToAll(CollectiveSetup setup) {
        return new CudaMemoryCollective(CollectiveKind.ALLTOALL, setup);
    }

    static Collective sendRecv(CollectiveSetup setup) {
        return new CudaMemoryCollective(CollectiveKind.SENDRECV, setup);
    }

    @Override
    public CollectiveKind kind() {
        return base.kind;
    }

    @Override
    public String algorithm() {
        return ALGORITHM;
    }

    @Override
    public long maxSize() {
        return base.maxSize;
    }

    @Override
    public DeviceBuffer input() {
        return base.input;
    }

    @Override
    public DeviceBuffer output() {
        return base.output;
    }

    @Override
    public void enqueue(long count, DataType type, boolean inPlace) {
        long unit = base.unitBytes(ALGORITHM, count, type, inPlace);
        int peers = base.ranks - 1;
        switch (base.kind) {
            case ALLGATHER -> {
                long src = inPlace ? base.output.address() + base.rank * unit : base.input.address();
                base.stream.launch(kernel, CudaCollectiveBase.grid(unit), KernelArgs.builder()
                        .pointer(channels.address()).i32(peers).pointer(src).pointer(base.output.address()).i64(unit)
                        .i32(base.rank).i32(inPlace ? 0 : 1).build());
            }
            case ALLTOALL -> base.stream.launch(kernel, CudaCollectiveBase.grid(unit * base.ranks), KernelArgs.builder()
                    .pointer(channels.address()).i32(peers).pointer(base.input.address())
                    .pointer(base.output.address()).i64(unit).i32(base.rank).build());
            case SENDRECV -> base.stream.launch(kernel, CudaCollectiveBase.grid(unit), KernelArgs.builder()
                    .pointer(channels.address()).pointer(channels.address() + MemoryChannel.DEVICE_HANDLE_BYTES)
                    .pointer(base.input.address()).i64(unit).build());
            case ALLREDUCE -> throw new IllegalStateException("not built for allreduce");
        }
    }

    @Override
    public void synchronize(Duration timeout) {
        base.synchronize(timeout, ALGORITHM);
    }

    @Override
    public CudaStream stream() {
        return base.stream;
    }

    @Override
    public void close() {
        base.close();
    }
}
