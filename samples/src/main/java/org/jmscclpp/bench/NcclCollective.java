package org.jmscclpp.bench;

import java.util.Objects;
import org.jmscclpp.bench.nccl.NcclCommunicator;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.samples.Blocking;
import org.jmscclpp.samples.CollectiveBuffers;
import org.jmscclpp.samples.CollectiveData;
import org.jmscclpp.samples.CollectiveJob;
import org.jmscclpp.samples.CollectiveRun;

/**
 * NCCL's collectives (through JNA, {@link NcclCommunicator}) as a {@link CollTarget}: the baseline
 * of {@code jmscclpp bench coll --baseline nccl}, run by the same runner with the same data checks
 * as jmscclpp's, on the same buffers, with a stream of its own. Rank 0's {@code ncclUniqueId}
 * reaches the other ranks over the job's bootstrap. Sendrecv is a group of {@code ncclSend} to
 * rank + 1 and {@code ncclRecv} from rank − 1, alltoall one of a send and a receive per peer, as in
 * nccl-tests. Only on the CUDA backend.
 */
final class NcclCollective implements CollTarget {

    static final String ALGORITHM = "nccl";

    private final CollectiveJob job;
    private final NcclCommunicator nccl;
    private final CudaStream stream;
    private final CollectiveBuffers buffers;
    private final CollectiveData data;

    private NcclCollective(CollectiveJob job, NcclCommunicator nccl, CudaStream stream, CollectiveBuffers buffers,
                           CollectiveData data) {
        this.job = job;
        this.nccl = nccl;
        this.stream = stream;
        this.buffers = buffers;
        this.data = data;
    }

    /**
     * Creates every rank's NCCL communicator (all ranks call this together) and a stream, for runs on
     * {@code buffers}.
     *
     * @throws JmscclppException INVALID_USAGE on another backend than CUDA; SYSTEM_ERROR when NCCL
     *                           cannot be loaded or fails; TIMEOUT when a rank does not join in time
     */
    static NcclCollective create(CollectiveJob job, CollectiveBuffers buffers) {
        if (!(job.backend() instanceof CudaBackend cuda)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the NCCL baseline runs on the cuda backend, not"
                    + " on " + job.backend().name()).rank(job.rank()).phase("nccl").build();
        }
        // every rank offers 128 bytes; rank 0's, a real id that also starts NCCL's root here, wins
        byte[] offer = job.rank() == 0 ? NcclCommunicator.uniqueId() : new byte[128];
        byte[] id = Blocking.value(job.communicator().bootstrap().broadcast(0, offer, job.timeout()),
                job.timeout().plusSeconds(5), job.rank(), "nccl unique id");
        NcclCommunicator nccl = NcclCommunicator.init(cuda, job.size(), id, job.rank(), job.timeout());
        try {
            CudaStream stream = cuda.createStream("nccl");
            try {
                return new NcclCollective(job, nccl, stream, buffers, CollectiveData.create(cuda, stream, job.rank(),
                        job.timeout()));
            } catch (RuntimeException e) {
                stream.close();
                throw e;
            }
        } catch (RuntimeException e) {
            nccl.close();
            throw e;
        }
    }

    /** NCCL's version, such as {@code 2.28.9}. */
    String version() {
        return nccl.version();
    }

    @Override
    public String implementation() {
        return CollReport.NCCL;
    }

    @Override
    public String algorithm(CollectiveRun run) {
        return ALGORITHM;
    }

    @Override
    public boolean offers(CollectiveRun run) {
        return !(run.inPlace() && run.kind() == CollectiveKind.ALL_TO_ALL);
    }

    @Override
    public CollectiveBuffers buffers() {
        return buffers;
    }

    @Override
    public CollectiveData data() {
        return data;
    }

    @Override
    public void issue(CollectiveRun run) {
        int rank = job.rank();
        long send = buffers.sendOf(run, rank).address();
        long recv = buffers.recvOf(run, rank).address();
        long c = run.count();
        int type = run.type().code();
        switch (run.kind()) {
            case ALL_REDUCE -> nccl.allReduce(send, recv, c, type, op(run), stream);
            case ALL_GATHER -> nccl.allGather(send, recv, c, type, stream);
            case REDUCE_SCATTER -> nccl.reduceScatter(send, recv, c, type, op(run), stream);
            case BROADCAST -> nccl.broadcast(send, recv, c, type, run.root(), stream);
            case REDUCE -> nccl.reduce(send, recv, c, type, op(run), run.root(), stream);
            case ALL_TO_ALL -> nccl.allToAll(send, recv, c, type, stream);
            case SEND, RECV -> nccl.sendRecv(send, run.next(rank), recv, run.previous(rank), c, type, stream);
        }
    }

    private static int op(CollectiveRun run) {
        return Objects.requireNonNull(run.op()).code();
    }

    @Override
    public void synchronize() {
        stream.synchronize(job.timeout(), "nccl");
    }

    @Override
    public CudaStream stream() {
        return stream;
    }

    @Override
    public void close() {
        try {
            data.close();
            nccl.close();
        } finally {
            stream.close();
        }
    }
}
