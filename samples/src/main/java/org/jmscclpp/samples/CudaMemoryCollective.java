package org.jmscclpp.samples;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryChannel;
import org.jmscclpp.core.MemoryDevice2DeviceSemaphore;
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
final class CudaMemoryCollective extends CudaCollectiveBase {

    static final String ALGORITHM = "memory";

    private final Kernel kernel;
    private final DeviceBuffer channels;

    private CudaMemoryCollective(CollectiveKind kind, CollectiveSetup setup) {
        super(kind, ALGORITHM, setup, Long.MAX_VALUE);
        try {
            List<MemoryChannel> all = new ArrayList<>();
            for (int i = 0; i < ranks - 1; i++) {
                int peer = peer(i);
                MemoryDevice2DeviceSemaphore semaphore = own(new MemoryDevice2DeviceSemaphore(
                        mesh.semaphore(peer), backend));
                all.add(new MemoryChannel(semaphore, mesh.remoteMemory(peer), inputMemory, null));
            }
            List<MemoryChannel> used = kind == CollectiveKind.SENDRECV
                    ? List.of(all.get(index(next())), all.get(index(previous())))
                    : all;
            List<Consumer<ByteBuffer>> encoders = new ArrayList<>();
            used.forEach(ch -> encoders.add(ch::encodeDeviceHandle));
            channels = deviceArray(MemoryChannel.DEVICE_HANDLE_BYTES, encoders);
            kernel = kernel(switch (kind) {
                case ALLGATHER -> "allgatherMemory";
                case ALLTOALL -> "alltoallMemory";
                case SENDRECV -> "sendrecvMemory";
                case ALLREDUCE -> throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                        "the memory collective moves data without reducing it: no allreduce").phase("collective setup")
                        .build();
            });
        } catch (RuntimeException e) {
            throw failed(e);
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
    public void enqueue(long count, DataType type, boolean inPlace) {
        long unit = unitBytes(count, type, inPlace);
        int peers = ranks - 1;
        switch (kind) {
            case ALLGATHER -> {
                long src = inPlace ? output.address() + rank * unit : input.address();
                stream.launch(kernel, CudaCollectiveBase.grid(unit), KernelArgs.builder()
                        .pointer(channels.address()).i32(peers).pointer(src).pointer(output.address()).i64(unit)
                        .i32(rank).i32(inPlace ? 0 : 1).build());
            }
            case ALLTOALL -> stream.launch(kernel, CudaCollectiveBase.grid(unit * ranks), KernelArgs.builder()
                    .pointer(channels.address()).i32(peers).pointer(input.address())
                    .pointer(output.address()).i64(unit).i32(rank).build());
            case SENDRECV -> stream.launch(kernel, CudaCollectiveBase.grid(unit), KernelArgs.builder()
                    .pointer(channels.address()).pointer(channels.address() + MemoryChannel.DEVICE_HANDLE_BYTES)
                    .pointer(input.address()).i64(unit).build());
            case ALLREDUCE -> throw new IllegalStateException("not built for allreduce");
        }
    }
}
