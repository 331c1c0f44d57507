package org.jmscclpp.samples;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.Host2DeviceSemaphore;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.PortChannel;
import org.jmscclpp.core.ProxyService;
import org.jmscclpp.core.SemaphoreId;
import org.jmscclpp.nativebridge.Kernel;
import org.jmscclpp.nativebridge.KernelArgs;

/**
 * The {@code port} algorithm of allgather, alltoall and sendrecv on the CUDA backend: a
 * {@link ProxyService} owned by the collective (started at setup, stopped at close) and one
 * {@link PortChannel} per peer whose dst is the peer's output. The kernels of
 * {@code collectives.cu} push {@code putWithSignal} from one thread per peer, copy this rank's own
 * part locally meanwhile, wait for every peer's signal and flush, so a run ends once this rank's
 * data is at every peer and every peer's is here.
 *
 * <p>Allgather keeps two channels per peer over the same semaphore: one whose src is the input
 * (out of place), one whose src is the output (in place, this rank's slice of it). A trigger's
 * sizes and offsets have 32 bits, so S stays below 4 GiB; longer puts are cut into 1 GiB pieces.
 *
 * <p>A peer starts its next run, and puts into this rank's output, as soon as its own run ended:
 * callers that read the output between runs (checks) put a barrier between that read and the
 * peers' next enqueue.
 */
final class CudaPortCollective extends CudaCollectiveBase {

    static final String ALGORITHM = "port";
    /** Trigger offsets have 32 bits. */
    static final long SIZE_LIMIT = 1L << 32;
    private static final Duration PROXY_IDLE_SPIN = Duration.ofMillis(1);

    private final ProxyService proxy;
    private final Kernel kernel;
    /** Out of place (src: input) for every kind; for sendrecv [send, recv]. */
    private final DeviceBuffer channels;
    /** In-place allgather's channels (src: output); the same as {@link #channels} for the other kinds. */
    private final DeviceBuffer inPlaceChannels;

    private CudaPortCollective(CollectiveKind kind, CollectiveSetup setup) {
        super(kind, ALGORITHM, setup, SIZE_LIMIT);
        try {
            // the proxy's own core, as in MSCCL++: it polls 1 ms before parking
            proxy = own(ProxyService.builder(backend).poller(ProxyService.Poller.PLATFORM_THREAD)
                    .idleSpin(PROXY_IDLE_SPIN).build());
            MemoryId fromInput = proxy.addMemory(inputMemory);
            MemoryId fromOutput = proxy.addMemory(outputMemory);
            List<PortChannel> outOfPlace = new ArrayList<>();
            List<PortChannel> inPlace = new ArrayList<>();
            for (int i = 0; i < ranks - 1; i++) {
                int peer = peer(i);
                SemaphoreId semaphore = proxy.addSemaphore(own(new Host2DeviceSemaphore(
                        mesh.semaphore(peer), backend)));
                MemoryId dst = proxy.addMemory(mesh.remoteMemory(peer));
                outOfPlace.add(proxy.portChannel(semaphore, dst, fromInput));
                inPlace.add(proxy.portChannel(semaphore, dst, fromOutput));
            }
            if (kind == CollectiveKind.SENDRECV) {
                outOfPlace = List.of(outOfPlace.get(index(next())),
                        outOfPlace.get(index(previous())));
            }
            channels = deviceArray(PortChannel.DEVICE_HANDLE_BYTES, encoders(outOfPlace));
            inPlaceChannels = kind == CollectiveKind.ALLGATHER
                    ? deviceArray(PortChannel.DEVICE_HANDLE_BYTES, encoders(inPlace)) : channels;
            kernel = kernel(switch (kind) {
                case ALLGATHER -> "allgatherPort";
                case ALLTOALL -> "alltoallPort";
                case SENDRECV -> "sendrecvPort";
                case ALLREDUCE -> throw new IllegalStateException("the port collective does not reduce");
            });
            proxy.start();
        } catch (RuntimeException e) {
            throw failed(e);
        }
    }

    private static List<Consumer<ByteBuffer>> encoders(List<PortChannel> channels) {
        List<Consumer<ByteBuffer>> encoders = new ArrayList<>();
        channels.forEach(ch -> encoders.add(ch::encodeDeviceHandle));
        return encoders;
    }

    static Collective allGather(CollectiveSetup setup) {
        return new CudaPortCollective(CollectiveKind.ALLGATHER, setup);
    }

    static Collective allToAll(CollectiveSetup setup) {
        return new CudaPortCollective(CollectiveKind.ALLTOALL, setup);
    }

    static Collective sendRecv(CollectiveSetup setup) {
        return new CudaPortCollective(CollectiveKind.SENDRECV, setup);
    }

    @Override
    public void enqueue(long count, DataType type, boolean inPlace) {
        long unit = unitBytes(count, type, inPlace);
        int peers = ranks - 1;
        switch (kind) {
            case ALLGATHER -> {
                long src = inPlace ? output.address() + rank * unit : input.address();
                long srcOffset = inPlace ? rank * unit : 0;
                stream.launch(kernel, CudaCollectiveBase.grid(inPlace ? 0 : unit), KernelArgs.builder()
                        .pointer((inPlace ? inPlaceChannels : channels).address()).i32(peers).pointer(src)
                        .pointer(output.address()).i64(unit).i64(srcOffset).i32(rank).i32(inPlace ? 0 : 1)
                        .build());
            }
            case ALLTOALL -> stream.launch(kernel, CudaCollectiveBase.grid(unit), KernelArgs.builder()
                    .pointer(channels.address()).i32(peers).pointer(input.address())
                    .pointer(output.address()).i64(unit).i32(rank).build());
            case SENDRECV -> stream.launch(kernel, CudaCollectiveBase.grid(0), KernelArgs.builder()
                    .pointer(channels.address()).pointer(channels.address() + PortChannel.DEVICE_HANDLE_BYTES)
                    .i64(unit).build());
            case ALLREDUCE -> throw new IllegalStateException("not built for allreduce");
        }
    }

    /** Stops the proxy (every rank has finished its runs), then closes what setup made, newest first. */
    @Override
    public void close() {
        try {
            Blocking.done(proxy.stop(), timeout, rank, kind.label() + " port proxy stop");
        } finally {
            super.close();
        }
    }
}
