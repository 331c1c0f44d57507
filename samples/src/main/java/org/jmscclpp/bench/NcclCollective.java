package org.jmscclpp.samples;

import java.time.Duration;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.CudaBackend;
import org.jmscclpp.nativebridge.CudaStream;
import org.jmscclpp.nativebridge.NcclCommunicator;

/**
 * NCCL's collectives (through JNA, {@link NcclCommunicator}) behind the {@link Collective}
 * contract, algorithm {@value #ALGORITHM}: the baseline of {@code jmscclpp bench coll --baseline
 * nccl}, run by the same runner with the same data checks as jmscclpp's. It owns its input and
 * output buffers and a stream; rank 0's {@code ncclUniqueId} reaches the other ranks over the
 * job's bootstrap. Only on the CUDA backend.
 */
final class NcclCollective implements Collective {

    static final String ALGORITHM = "nccl";
    /** {@code ncclSum}. */
    private static final int NCCL_SUM = 0;

    private final CollectiveKind kind;
    private final CollectiveSetup setup;
    private final NcclCommunicator comm;
    private final CudaStream stream;
    private final DeviceBuffer input;
    private final DeviceBuffer output;

    private NcclCollective(CollectiveKind kind, CollectiveSetup setup, NcclCommunicator comm, CudaStream stream,
                           DeviceBuffer input, DeviceBuffer output) {
        this.kind = kind;
        this.setup = setup;
        this.comm = comm;
        this.stream = stream;
        this.input = input;
        this.output = output;
    }

    /**
     * Creates every rank's NCCL communicator (all ranks call this together) and this rank's buffers
     * of {@code setup.maxSize()} bytes.
     *
     * @throws JmscclppException INVALID_USAGE on another backend than CUDA; SYSTEM_ERROR when NCCL
     *                           cannot be loaded or fails; TIMEOUT when a rank does not join in time
     */
    static NcclCollective create(CollectiveKind kind, CollectiveSetup setup) {
        if (!(setup.backend() instanceof CudaBackend cuda)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the NCCL baseline runs on the cuda backend, not"
                    + " on " + setup.backend().name()).rank(setup.rank()).phase("nccl").build();
        }
        // every rank offers 128 bytes; rank 0's, a real id that also starts NCCL's root here, wins
        byte[] offer = setup.rank() == 0 ? NcclCommunicator.uniqueId() : new byte[128];
        byte[] id = Blocking.value(setup.bootstrap().broadcast(0, offer, setup.timeout()),
                setup.timeout().plusSeconds(5), setup.rank(), "nccl unique id");
        NcclCommunicator comm = NcclCommunicator.init(cuda, setup.size(), id, setup.rank(), setup.timeout());
        try {
            CudaStream stream = cuda.createStream("nccl " + kind.label());
            try {
                DeviceBuffer in = cuda.allocate(setup.maxSize());
                try {
                    return new NcclCollective(kind, setup, comm, stream, in, cuda.allocate(setup.maxSize()));
                } catch (RuntimeException e) {
                    in.close();
                    throw e;
                }
            } catch (RuntimeException e) {
                stream.close();
                throw e;
            }
        } catch (RuntimeException e) {
            comm.close();
            throw e;
        }
    }

    /** NCCL's version, such as {@code 2.28.9}. */
    String version() {
        return comm.version();
    }

    @Override
    public CollectiveKind kind() {
        return kind;
    }

    @Override
    public String algorithm() {
        return ALGORITHM;
    }

    @Override
    public long maxSize() {
        return setup.maxSize();
    }

    @Override
    public DeviceBuffer input() {
        return input;
    }

    @Override
    public DeviceBuffer output() {
        return output;
    }

    @Override
    public void enqueue(long count, DataType type, boolean inPlace) {
        int n = setup.size();
        int rank = setup.rank();
        if (count < 1 || kind.size(count, n, type) > maxSize() || (inPlace && !kind.hasInPlace())) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "cannot run " + kind.label() + " of " + count + " "
                    + type.label() + (inPlace ? " in place" : "") + " within " + maxSize() + " bytes").rank(rank)
                    .phase("nccl").build();
        }
        long out = output.address();
        switch (kind) {
            case ALLREDUCE -> comm.allReduce(inPlace ? out : input.address(), out, count, type.code(), NCCL_SUM, stream);
            case ALLGATHER -> comm.allGather(inPlace ? out + rank * count * type.bytes() : input.address(), out, count,
                    type.code(), stream);
            case ALLTOALL -> comm.allToAll(input.address(), out, count, type.code(), stream);
            case SENDRECV -> comm.sendRecv(input.address(), (rank + 1) % n, out, Math.floorMod(rank - 1, n), count,
                    type.code(), stream);
        }
    }

    @Override
    public void synchronize(Duration timeout) {
        stream.synchronize(timeout, "nccl " + kind.label());
    }

    @Override
    public CudaStream stream() {
        return stream;
    }

    @Override
    public void close() {
        comm.close();
        stream.close();
        input.close();
        output.close();
    }
}
