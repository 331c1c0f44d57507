package org.jmscclpp.samples;

import java.time.Duration;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.host.HostBackend;

/**
 * One rank process of {@link HostCollectivesProcessTest}: over a TCP bootstrap and the host
 * backend (shared memory between processes), runs each kind named on the command line
 * ({@code ALL_REDUCE}, {@code SEND} for sendrecv, ...) through the library's collective
 * communicator on a few counts, types and reductions, in and out of place, on registered buffers
 * and on staged ones, each run checked by {@link CollectiveData}, and prints the algorithm an
 * allReduce gets at the smallest and the largest count ({@code rank R: allReduce runs NAME and NAME}) and {@code rank R: N runs checked, W wrong};
 * exits 1 when an element was wrong.
 */
public final class HostCollectiveRankMain {

    static final DataType[] TYPES = {DataType.FLOAT16, DataType.INT32};
    static final ReduceOp[] OPS = {ReduceOp.SUM, ReduceOp.MAX};
    static final long[] COUNTS = {3, 5001};

    private HostCollectiveRankMain() {
    }

    /** Runs of {@code kind} this rank checks: types × reductions × counts × placements × (registered, staged). */
    static int runs(CollectiveKind kind) {
        return TYPES.length * (kind.reduces() ? OPS.length : 1) * COUNTS.length
                * (CollectiveRun.hasInPlace(kind) ? 2 : 1) * 2;
    }

    public static void main(String[] args) {
        RankEnvironment env = RankEnvironment.fromEnvironment();
        Duration timeout = Duration.ofSeconds(30);
        int rank = env.rank();
        int n = env.worldSize();
        long runs = 0;
        long wrong = 0;
        try (HostBackend backend = HostBackend.open();
             TcpBootstrap bs = TcpBootstrap.create(rank, n, BootstrapOptions.fromEnvironment())) {
            Blocking.done(env.join(bs), timeout, rank, "initialize");
            long bytes = n * COUNTS[COUNTS.length - 1] * 4;
            try (Communicator comm = Communicator.create(bs, backend);
                 CollectiveBuffers registered = CollectiveBuffers.allocate(backend, bytes);
                 CollectiveBuffers staged = CollectiveBuffers.hostMemory(bytes);
                 CollectiveData data = CollectiveData.create(backend, null, rank, timeout);
                 CollectiveJob job = CollectiveJob.open(comm, CollectiveKind.ALL_REDUCE, null, timeout)) {
                Blocking.done(registered.register(job.comm()), timeout, rank, "register");
                System.out.println("rank " + rank + ": allReduce runs " + job.comm().algorithmFor(CollectiveCall.allReduce(
                        null, null, COUNTS[0], DataType.INT32, ReduceOp.SUM)).name() + " and " + job.comm().algorithmFor(
                        CollectiveCall.allReduce(null, null, COUNTS[1], DataType.INT32, ReduceOp.SUM)).name());
                for (String name : args) {
                    CollectiveKind kind = CollectiveKind.valueOf(name);
                    for (DataType type : TYPES) {
                        for (ReduceOp op : kind.reduces() ? OPS : new ReduceOp[] {null}) {
                            for (long count : COUNTS) {
                                for (boolean inPlace : CollectiveRun.hasInPlace(kind) ? new boolean[] {false, true}
                                        : new boolean[] {false}) {
                                    for (CollectiveBuffers buffers : new CollectiveBuffers[] {registered, staged}) {
                                        CollectiveRun run = new CollectiveRun(kind, type, op, kind.rooted() ? n - 1 : -1,
                                                n, count, inPlace);
                                        wrong += job.checkedRun(run, buffers, data, () -> Blocking.done(
                                                buffers.issue(job.comm(), run, rank), timeout, rank, run.describe()));
                                        runs++;
                                    }
                                }
                            }
                        }
                    }
                }
                job.barrier("end");
                job.close();
                job.barrier("closed");
            }
        }
        System.out.println("rank " + rank + ": " + runs + " runs checked, " + wrong + " wrong");
        System.out.flush();
        System.exit(wrong == 0 ? 0 : 1);
    }
}
