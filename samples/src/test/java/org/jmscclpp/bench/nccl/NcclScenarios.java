package org.jmscclpp.bench.nccl;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Map;
import java.util.function.IntToDoubleFunction;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.cuda.CudaGraph;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.cuda.GpuJob;
import org.jmscclpp.cuda.GpuRankMain;

/**
 * The NCCL scenarios of the GPU tests, one rank per process ({@link GpuJob}): the unique id made
 * by rank 0 travels to the others over the job's TCP bootstrap; float32 all-reduce, all-gather,
 * all-to-all, send/receive, reduce-scatter, broadcast and reduce (max) are checked element by
 * element on the host; an all-reduce captured
 * in a {@link CudaGraph} is replayed and timed; and an init that one rank never joins ends with
 * {@link ErrorCode#TIMEOUT} within its deadline.
 */
final class NcclScenarios {

    static final int FLOAT32 = 7;
    static final int SUM = 0;
    static final int MAX = 2;
    static final Duration NCCL_TIMEOUT = Duration.ofSeconds(60);
    static final Duration JOIN_TIMEOUT = Duration.ofSeconds(5);

    private NcclScenarios() {
    }

    /** A rank of {@link NcclGpuTest}'s jobs. */
    public static void main(String[] args) {
        GpuRankMain.run(args, NcclScenarios::run);
    }

    static void run(GpuRankMain r, String scenario, Map<String, String> args) {
        switch (scenario) {
            case "nccl-collectives" -> collectives(r);
            case "nccl-init-timeout" -> initTimeout(r);
            default -> throw new IllegalArgumentException("unknown scenario " + scenario);
        }
    }

    /** Rank 0's unique id on every rank, then every rank's communicator. */
    static NcclCommunicator join(GpuRankMain r) {
        byte[] id = r.rank == 0 ? NcclCommunicator.uniqueId() : new byte[0];
        byte[] shared = r.bootstrap.broadcast(0, id, GpuRankMain.TIMEOUT).block(GpuRankMain.TIMEOUT);
        return NcclCommunicator.init(r.backend, r.n, shared, r.rank, NCCL_TIMEOUT);
    }

    static void collectives(GpuRankMain r) {
        int n = r.n;
        int me = r.rank;
        try (NcclCommunicator nccl = join(r); CudaStream stream = r.backend.createStream("nccl rank " + me)) {
            GpuRankMain.say("rank " + me + ": NCCL " + nccl.version() + ", " + nccl);

            // all-reduce, out of place: element i of rank q is (i % 1021) + 1000 q + 1, exact in float32
            int count = (1 << 20) + 3;
            float[] reduced = run(r, stream, count, count, i -> value(me, i), (send, recv) ->
                    nccl.allReduce(send, recv, count, FLOAT32, SUM, stream));
            check("allReduce", reduced, i -> sumOverRanks(n, i));

            // all-gather: rank q's block lands at q * sendCount
            int sendCount = (1 << 18) + 1;
            float[] gathered = run(r, stream, sendCount, sendCount * n, i -> value(me, i), (send, recv) ->
                    nccl.allGather(send, recv, sendCount, FLOAT32, stream));
            check("allGather", gathered, i -> value(i / sendCount, i % sendCount));

            // all-to-all: block p of rank q goes to rank p, which keeps it as its block q
            int perPeer = (1 << 17) + 5;
            float[] exchanged = run(r, stream, perPeer * n, perPeer * n, i -> block(me, i / perPeer, i % perPeer),
                    (send, recv) -> nccl.allToAll(send, recv, perPeer, FLOAT32, stream));
            check("allToAll", exchanged, i -> block(i / perPeer, me, i % perPeer));

            // send to the next rank, receive from the previous
            int next = (me + 1) % n;
            int previous = (me - 1 + n) % n;
            int pairCount = 1 << 20;
            float[] received = run(r, stream, pairCount, pairCount, i -> value(me, i), (send, recv) ->
                    nccl.sendRecv(send, next, recv, previous, pairCount, FLOAT32, stream));
            check("sendRecv", received, i -> value(previous, i));

            // reduce-scatter: rank q gets the sum of block q of every rank's buffer
            int perRank = (1 << 18) + 7;
            float[] scattered = run(r, stream, perRank * n, perRank, i -> value(me, i), (send, recv) ->
                    nccl.reduceScatter(send, recv, perRank, FLOAT32, SUM, stream));
            check("reduceScatter", scattered, i -> sumOverRanks(n, me * perRank + i));

            // broadcast from the last rank, reduce (max) onto the last rank: values grow with the rank
            int root = n - 1;
            int rootedCount = (1 << 20) + 1;
            float[] broadcast = run(r, stream, rootedCount, rootedCount, i -> value(me, i), (send, recv) ->
                    nccl.broadcast(send, recv, rootedCount, FLOAT32, root, stream));
            check("broadcast", broadcast, i -> value(root, i));
            float[] maximum = run(r, stream, rootedCount, rootedCount, i -> value(me, i), (send, recv) ->
                    nccl.reduce(send, recv, rootedCount, FLOAT32, MAX, root, stream));
            if (me == root) {
                check("reduce", maximum, i -> value(root, i));
            }

            graphedAllReduce(r, nccl, stream);
            GpuRankMain.say("OK nccl-collectives rank " + me + ": allReduce, allGather, allToAll, sendRecv,"
                    + " reduceScatter, broadcast, reduce of float32 on " + n + " ranks, every element checked");
        }
    }

    /**
     * Ten out-of-place all-reduces captured in one graph, replayed three times: the result is the
     * same sum (the input never changes) and the replays are timed with events.
     */
    private static void graphedAllReduce(GpuRankMain r, NcclCommunicator nccl, CudaStream stream) {
        int count = 1 << 22;
        long bytes = (long) count * Float.BYTES;
        try (DeviceBuffer send = r.backend.allocate(bytes); DeviceBuffer recv = r.backend.allocate(bytes);
             Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(bytes, 16);
            for (int i = 0; i < count; i++) {
                host.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) value(r.rank, i));
            }
            r.backend.copyFromHost(send, 0, host);
            try (CudaGraph graph = CudaGraph.capture(stream, () -> {
                for (int k = 0; k < 10; k++) {
                    nccl.allReduce(send.address(), recv.address(), count, FLOAT32, SUM, stream);
                }
            })) {
                float ms = stream.elapsedMillis(() -> {
                    for (int replay = 0; replay < 3; replay++) {
                        graph.launch(stream);
                    }
                }, NCCL_TIMEOUT, "three replays of ten all-reduces");
                r.backend.copyToHost(host, recv, 0);
                float[] out = new float[count];
                for (int i = 0; i < count; i++) {
                    out[i] = host.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                }
                check("allReduce in a graph", out, i -> sumOverRanks(r.n, i));
                GpuRankMain.say("rank " + r.rank + ": 30 graphed all-reduces of " + bytes + " bytes took " + ms
                        + " ms (" + ms * 1000 / 30 + " µs each)");
            }
        }
    }

    /** One operation: fills a send buffer of {@code sendCount} floats, zeroes the receive buffer, runs, returns the result. */
    private static float[] run(GpuRankMain r, CudaStream stream, int sendCount, int recvCount,
                               IntToDoubleFunction input, Op op) {
        long sendBytes = (long) sendCount * Float.BYTES;
        long recvBytes = (long) recvCount * Float.BYTES;
        try (DeviceBuffer send = r.backend.allocate(sendBytes); DeviceBuffer recv = r.backend.allocate(recvBytes);
             Arena arena = Arena.ofConfined()) {
            MemorySegment in = arena.allocate(sendBytes, 16);
            for (int i = 0; i < sendCount; i++) {
                in.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) input.applyAsDouble(i));
            }
            r.backend.copyFromHost(send, 0, in);
            op.enqueue(send.address(), recv.address());
            stream.synchronize(NCCL_TIMEOUT, "NCCL operation");
            MemorySegment out = arena.allocate(recvBytes, 16);
            r.backend.copyToHost(out, recv, 0);
            float[] result = new float[recvCount];
            for (int i = 0; i < recvCount; i++) {
                result[i] = out.getAtIndex(ValueLayout.JAVA_FLOAT, i);
            }
            return result;
        }
    }

    /**
     * Rank 0 of a two-rank communicator whose rank 1 never calls init: init must give up with
     * TIMEOUT after its deadline (plus the bounded abort), not hang.
     */
    static void initTimeout(GpuRankMain r) {
        byte[] id = NcclCommunicator.uniqueId();
        long start = System.nanoTime();
        try {
            NcclCommunicator alone = NcclCommunicator.init(r.backend, 2, id, 0, JOIN_TIMEOUT);
            alone.close();
            throw new AssertionError("init of 2 ranks returned with rank 1 absent");
        } catch (JmscclppException e) {
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            if (e.code() != ErrorCode.TIMEOUT || !e.detail().contains("rank 0")) {
                throw new AssertionError("expected TIMEOUT naming rank 0, got " + e, e);
            }
            Duration limit = JOIN_TIMEOUT.plus(NcclCommunicator.ABORT_GRACE).plusSeconds(5);
            if (took.compareTo(JOIN_TIMEOUT) < 0 || took.compareTo(limit) > 0) {
                throw new AssertionError("init gave up after " + took + ", expected between " + JOIN_TIMEOUT + " and "
                        + limit);
            }
            GpuRankMain.say("OK nccl-init-timeout: " + e.getMessage() + " after " + took);
        }
    }

    private static double value(int rank, int i) {
        return (i % 1021) + 1000.0 * rank + 1;
    }

    private static double sumOverRanks(int n, int i) {
        double sum = 0;
        for (int q = 0; q < n; q++) {
            sum += value(q, i);
        }
        return sum;
    }

    /** Element i of the block that rank {@code from} sends to rank {@code to}. */
    private static double block(int from, int to, int i) {
        return 100_000.0 * from + 1000.0 * to + (i % 997);
    }

    private static void check(String what, float[] actual, IntToDoubleFunction expected) {
        long wrong = 0;
        int first = -1;
        for (int i = 0; i < actual.length; i++) {
            if (actual[i] != (float) expected.applyAsDouble(i)) {
                if (wrong++ == 0) {
                    first = i;
                }
            }
        }
        if (wrong != 0) {
            throw new AssertionError(what + ": " + wrong + " of " + actual.length + " elements wrong; the first at " + first
                    + " is " + actual[first] + ", expected " + (float) expected.applyAsDouble(first));
        }
        GpuRankMain.say("checked " + what + ": " + actual.length + " elements");
    }

    @FunctionalInterface
    private interface Op {
        void enqueue(long send, long recv);
    }
}
