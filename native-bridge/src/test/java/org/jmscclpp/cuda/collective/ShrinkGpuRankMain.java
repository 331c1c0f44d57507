package org.jmscclpp.cuda.collective;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.cuda.CudaBackend;

/**
 * One rank of {@link CudaShrinkGpuTest}: CUDA allreduces of 16 Mi int32 in a loop, each checked.
 * The last rank crashes after round 3 ({@code Runtime.halt}: no goodbye, the kernel resets its
 * connections), possibly while the others' kernels wait for it. Each survivor's call fails naming
 * it; the survivor closes its collective communicator and communicator, shrinks the bootstrap
 * without it, and runs three checked allreduces on the same GPU with a new communicator: the CUDA
 * context must have survived. Prints {@code SHRUNK rank=R of N round K} and {@code OK}; exits 0,
 * or 1 after printing the failure.
 */
public final class ShrinkGpuRankMain {

    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int COUNT = 16 << 20;

    private ShrinkGpuRankMain() {
    }

    public static void main(String[] args) {
        int rank = Integer.parseInt(arg(args, "rank"));
        int n = Integer.parseInt(arg(args, "nranks"));
        int code = 1;
        TcpBootstrap bs = TcpBootstrap.create(rank, n, BootstrapOptions.builder().initTimeout(TIMEOUT)
                .operationTimeout(TIMEOUT).build());
        try (CudaBackend backend = CudaBackend.open()) {
            bs.initialize(arg(args, "address")).block(TIMEOUT.plusSeconds(5));
            try {
                allReduces(bs, backend, rank == n - 1 ? 4 : Long.MAX_VALUE, "ROUND ");
                // the last rank: crash in the middle of the job
                say("CRASH");
                Runtime.getRuntime().halt(0);
            } catch (JmscclppException e) {
                say("LOST " + e.code() + " peer=" + e.peer() + " " + e.getMessage().replace('\n', ' '));
                if (e.peer() != n - 1 || (e.code() != ErrorCode.REMOTE_ERROR && e.code() != ErrorCode.ABORTED)) {
                    throw e;
                }
                try (TcpBootstrap smaller = bs.shrink(List.of(n - 1), TIMEOUT).block(TIMEOUT.plusSeconds(5))) {
                    allReduces(smaller, backend, 3, "SHRUNK rank=" + smaller.rank() + " of " + smaller.size()
                            + " round ");
                    smaller.barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
                }
            }
            say("OK");
            code = 0;
        } catch (AssertionError | RuntimeException e) {
            say("FAILED " + e);
            e.printStackTrace(System.out);
        } finally {
            bs.close();
        }
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }

    /** Checked allreduces over {@code bs}'s ranks with a new communicator; prints {@code label + k} after round k. */
    private static void allReduces(TcpBootstrap bs, CudaBackend backend, long rounds, String label) {
        int rank = bs.rank();
        int n = bs.size();
        try (Arena arena = Arena.ofConfined();
             Communicator comm = Communicator.create(bs, backend);
             CollectiveComm coll = CollectiveComm.create(comm, CollectiveOptions.defaults().withTimeout(TIMEOUT))
                     .block(TIMEOUT);
             DeviceBuffer buf = backend.allocate(4L * COUNT)) {
            MemorySegment host = arena.allocate(4L * COUNT, 16);
            for (long k = 0; k < rounds; k++) {
                for (int i = 0; i < COUNT; i++) {
                    host.setAtIndex(ValueLayout.JAVA_INT, i, (int) (rank + k + i));
                }
                backend.copyFromHost(buf, 0, host);
                coll.allReduce(buf, buf, COUNT, DataType.INT32, ReduceOp.SUM).block(TIMEOUT.plusSeconds(5));
                backend.copyToHost(host, buf, 0);
                for (int i = 0; i < COUNT; i++) {
                    int expected = (int) (n * (k + i) + (long) n * (n - 1) / 2);
                    int got = host.getAtIndex(ValueLayout.JAVA_INT, i);
                    if (got != expected) {
                        throw new AssertionError("rank " + rank + " round " + k + " element " + i + ": " + got
                                + ", expected " + expected);
                    }
                }
                say(label + k);
            }
        }
    }

    private static String arg(String[] args, String key) {
        for (String a : args) {
            if (a.startsWith(key + "=")) {
                return a.substring(key.length() + 1);
            }
        }
        throw new IllegalArgumentException("missing " + key + "=");
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
