package org.jmscclpp.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;
import java.util.function.IntUnaryOperator;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.collective.CallOptions;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.TuningTable;
import org.jmscclpp.core.hierarchy.HierarchicalComm;
import org.jmscclpp.testkit.CollectiveReference;
import org.jmscclpp.testkit.HostBackendJob;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The host engine's whole matrix: every kind × every type × every reduction × in place and out of
 * place × counts {0, 1, 7, ranks − 1, 1000003} × buffer offsets, on 1 to 4 ranks in this JVM (each
 * with its own host backend, communicator and collective communicator over an in-memory
 * bootstrap), with staged buffers and with registered ones. Every output element is checked
 * against {@link CollectiveReference} (the bound is stated there), every rank's allreduce output
 * must equal rank 0's bit for bit, and the bytes around every receive range (and a non-root's
 * receive buffer of a reduce) must be untouched.
 *
 * <p>Offsets: small counts run at offsets 0 and 13 bytes into the buffers; the large count at 13
 * only (unaligned is the harder case; the aligned one is covered by the small counts). The scratch
 * is 1 MiB, so the large count takes many staged rounds.
 */
class HostCollectivesTest {

    static final long LARGE = 1_000_003;
    static final int GUARD = 16;
    static final byte POISON = (byte) 0x5A;
    static final Duration LIMIT = Duration.ofSeconds(120);

    static TuningTable hostTuning() {
        return TuningTable.read(HostCollectiveEngine.class.getResourceAsStream("/" + HostCollectiveEngine.TUNING),
                HostCollectiveEngine.TUNING);
    }

    /** One job of n ranks in this JVM. */
    static final class Job implements AutoCloseable {
        final int n;
        final List<HostBackend> backends = new ArrayList<>();
        final List<Communicator> communicators = new ArrayList<>();
        final List<CollectiveComm> comms = new ArrayList<>();
        final List<InMemoryBootstrap> bootstraps;

        Job(int n, CollectiveOptions options) {
            this(n, options, null);
        }

        /**
         * With {@code hostOf} non-null, the ranks act as if spread over hosts (rank r on host
         * {@code hostOf(r)}) and run the hierarchical collectives of jobs that span hosts.
         */
        Job(int n, CollectiveOptions options, @Nullable IntUnaryOperator hostOf) {
            this.n = n;
            this.bootstraps = InMemoryBootstrap.group(n);
            List<Mono<CollectiveComm>> setups = new ArrayList<>();
            TuningTable tuning = hostTuning();
            for (int r = 0; r < n; r++) {
                HostBackend b = HostBackend.open();
                backends.add(b);
                Communicator c = Communicator.create(bootstraps.get(r), b);
                communicators.add(c);
                int rank = r;
                setups.add(hostOf == null ? CollectiveComm.create(c, options)
                        : HierarchicalComm.create(c, options, tuning, HostCollectiveEngine.LEVEL, () -> 0x5EED0000L + hostOf.applyAsInt(rank),
                        Transport.HOST_IPC));
            }
            List<CollectiveComm> made = Flux.mergeSequential(setups).collectList().block(LIMIT);
            comms.addAll(made);
        }

        /** Runs {@code perRank} on every rank at once and waits. */
        void all(IntFunction<Mono<Void>> perRank) {
            List<Mono<Void>> monos = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                monos.add(perRank.apply(r));
            }
            Mono.when(monos).block(LIMIT);
        }

        @Override
        public void close() {
            comms.forEach(CollectiveComm::close);
            communicators.forEach(Communicator::close);
            bootstraps.forEach(InMemoryBootstrap::close);
            backends.forEach(HostBackend::close);
        }
    }

    @ParameterizedTest(name = "{0} ranks, registered={1}")
    @CsvSource({"1, false", "2, false", "3, false", "4, false", "1, true", "2, true", "3, true", "4, true"})
    void everyKindTypeReductionPlacementCountAndOffset(int n, boolean registered) {
        everyCall(n, registered, null);
    }

    /**
     * The same matrix with the ranks spread over {@code hosts} pretend hosts, rank r on host
     * {@code r % hosts} (so no host's ranks are contiguous), running {@link HierarchicalComm}:
     * shared memory inside each host, and the rail's writes and signals over HOST_IPC connections
     * standing in for the network (HostCollectivesAcrossHostsTest runs them over ETHERNET). Two
     * shapes: both levels (2 hosts of 2) and the rail alone over 3 hosts (6 ranks on 3 hosts passes
     * too, and takes 100 s here, too long for every build).
     */
    @ParameterizedTest(name = "{0} ranks on {1} hosts")
    @CsvSource({"4, 2", "3, 3"})
    void everyCallSpanningHosts(int n, int hosts) {
        // the fold of a rail's chunk split over 3 threads, as on a host of 12 cores or more
        String was = System.setProperty(HierarchicalComm.FOLD_THREADS_PROPERTY, "3");
        try {
            everyCall(n, false, r -> r % hosts);
        } finally {
            if (was == null) {
                System.clearProperty(HierarchicalComm.FOLD_THREADS_PROPERTY);
            } else {
                System.setProperty(HierarchicalComm.FOLD_THREADS_PROPERTY, was);
            }
        }
    }

    /**
     * The hierarchical engine's algorithms chosen by name, for the communicator (as NCCL_ALGO does)
     * and per call: the communicator inside each host does not get them (it has none of that name;
     * it refused every call before), and a flat call beyond what the flat algorithm carries runs the
     * hierarchical one. 4 ranks on 2 pretend hosts, every element checked.
     */
    @Test
    void theHierarchicalAlgorithmsAreChosenByName() {
        int n = 4;
        int count = 1000;
        CollectiveOptions options = CollectiveOptions.defaults().withAlgorithm(CollectiveKind.ALL_REDUCE, "hier")
                .withAlgorithm(CollectiveKind.ALL_GATHER, HierarchicalComm.FLAT);
        try (Job job = new Job(n, options, r -> r % 2)) {
            List<DeviceBuffer> send = new ArrayList<>();
            List<DeviceBuffer> recv = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                send.add(job.backends.get(r).allocate(count * 4L));
                recv.add(job.backends.get(r).allocate(n * count * 4L));
                for (int i = 0; i < count; i++) {
                    send.get(r).hostSegment().setAtIndex(ValueLayout.JAVA_INT, i, 1000 * r + i);
                }
            }
            for (String perCall : new String[] {null, "hier", HierarchicalComm.FLAT}) {
                CallOptions call = perCall == null ? CallOptions.defaults() : CallOptions.algorithm(perCall);
                assertEquals(perCall == null ? "hier" : perCall, job.comms.get(0).with(call).algorithmFor(
                        CollectiveCall.allReduce(send.get(0), recv.get(0), count, DataType.INT32, ReduceOp.SUM)).name());
                job.all(r -> job.comms.get(r).with(call).allReduce(send.get(r), recv.get(r), count, DataType.INT32,
                        ReduceOp.SUM));
                for (int r = 0; r < n; r++) {
                    for (int i = 0; i < count; i++) {
                        assertEquals(1000 * (0 + 1 + 2 + 3) + n * i, recv.get(r).hostSegment()
                                .getAtIndex(ValueLayout.JAVA_INT, i), perCall + " allreduce, rank " + r + " element " + i);
                    }
                }
                job.all(r -> job.comms.get(r).with(call).allGather(send.get(r), recv.get(r), count, DataType.INT32));
                for (int r = 0; r < n; r++) {
                    for (int q = 0; q < n; q++) {
                        assertEquals(1000 * q + 7, recv.get(r).hostSegment().getAtIndex(ValueLayout.JAVA_INT,
                                q * count + 7), perCall + " allgather, rank " + r + " slot " + q);
                    }
                }
            }
            DeviceBuffer big = job.backends.get(0).allocate(8 << 20);
            assertEquals("hier", job.comms.get(0).with(CallOptions.algorithm(HierarchicalComm.FLAT)).algorithmFor(
                    CollectiveCall.allReduce(big, big, 2 << 20, DataType.INT32, ReduceOp.SUM)).name());
        }
    }

    /**
     * An engine's table whose rows for any topology ("*") name its single-host algorithms (as the
     * CUDA engine's names ll16) leaves the hierarchical communicator on its own algorithm: it reads
     * only the rows of topology {@code hosts}.
     */
    @Test
    void aTableForAnyTopologyDoesNotNameTheHierarchicalAlgorithms() {
        int n = 2;
        TuningTable tuning = TuningTable.parse("all_reduce * * 1M ll16\nall_gather * * * memory\n", "a cuda-like table");
        try (HostBackendJob job = new HostBackendJob(n, (r, c) -> HierarchicalComm.create(c,
                CollectiveOptions.defaults(), tuning, HostCollectiveEngine.LEVEL, () -> 0x5EED0000L + r,
                Transport.HOST_IPC), LIMIT);
             Arena arena = Arena.ofConfined()) {
            DeviceBuffer b = DeviceBuffer.wrap(arena.allocate(4096));
            for (CollectiveComm c : job.comms()) {
                assertEquals("hier", c.algorithmFor(CollectiveCall.allReduce(b, b, 16, DataType.FLOAT32,
                        ReduceOp.SUM)).name());
                assertEquals("hier", c.algorithmFor(CollectiveCall.allGather(b, b, 16, DataType.FLOAT32)).name());
            }
        }
    }

    /** Hosts of 2 and 1 ranks: every rank's setup fails with INVALID_USAGE naming both hosts' ranks. */
    @Test
    void hostsHoldingDifferentRankCountsFailEveryRanksSetup() {
        int n = 3;
        try (HostBackendJob job = new HostBackendJob(n, (r, c) -> HierarchicalComm.create(c,
                CollectiveOptions.defaults(), hostTuning(), HostCollectiveEngine.LEVEL, () -> 0x5EED0000L + r % 2,
                Transport.HOST_IPC), LIMIT)) {
            for (int r = 0; r < n; r++) {
                JmscclppException e = assertInstanceOf(JmscclppException.class, job.setups.get(r).getThrowable(),
                        "rank " + r);
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.toString());
                assertEquals(r, e.rank(), e.toString());
                assertTrue(e.getMessage().contains("the host of ranks [0, 2] holds 2, the host of ranks [1] holds 1"),
                        e.getMessage());
            }
        }
    }

    /**
     * Ranks of one call may differ in whether they run it in place (NCCL decides it per rank): every
     * kind, one rank in place and the others not, on 2 and 3 ranks, on registered buffers (where
     * peers read each other's directly; a rank's descriptor names one location twice in place, and
     * an allToAll's rank in place takes what its peers send only once they are done reading) and
     * staged ones.
     */
    @Test
    void ranksMayMixInPlaceAndOutOfPlace() {
        for (int n : new int[] {2, 3}) {
            for (boolean registered : new boolean[] {true, false}) {
                List<String> failures = new ArrayList<>();
                try (Job job = new Job(n, CollectiveOptions.defaults().withScratchBytes(1 << 20), null);
                     Arena arena = Arena.ofShared()) {
                    long bytes = n * LARGE * 4 + 2 * 64;
                    List<DeviceBuffer> sendRoot = buffers(job, bytes, registered);
                    List<DeviceBuffer> recvRoot = buffers(job, bytes, registered);
                    MemorySegment[] inputs = new MemorySegment[n];
                    for (int q = 0; q < n; q++) {
                        inputs[q] = arena.allocate(n * LARGE * 4, 8);
                        CollectiveReference.fill(DataType.FLOAT32, 7, q, 0, n * LARGE, inputs[q], 0);
                    }
                    for (CollectiveKind kind : CollectiveKind.values()) {
                        if (kind == CollectiveKind.SEND || kind == CollectiveKind.RECV) {
                            continue;
                        }
                        ReduceOp op = kind.reduces() ? ReduceOp.SUM : null;
                        for (int inPlaceRank = 0; inPlaceRank < n; inPlaceRank++) {
                            int one = inPlaceRank;
                            for (long count : new long[] {7, LARGE}) {
                                String why = runAndCheck(job, kind, DataType.FLOAT32, op, r -> r == one, count, 13,
                                        inputs, sendRoot, recvRoot);
                                if (why != null) {
                                    failures.add(kind.label() + " count " + count + ", rank " + one + " of " + n
                                            + " in place" + (registered ? ", registered" : "") + ": " + why);
                                }
                            }
                        }
                    }
                    for (int r = 0; r < n; r++) {
                        job.comms.get(r).failure().ifPresent(e -> failures.add("broke: " + e));
                    }
                }
                assertEquals(List.of(), failures);
            }
        }
    }

    private static void everyCall(int n, boolean registered, @Nullable IntUnaryOperator hostOf) {
        long maxElements = n * LARGE;
        List<String> failures = new ArrayList<>();
        long calls = 0;
        long t0 = System.nanoTime();
        try (Job job = new Job(n, CollectiveOptions.defaults().withScratchBytes(1 << 20), hostOf);
             Arena arena = Arena.ofShared()) {
            long bytes = maxElements * 8 + 2 * 64;
            List<DeviceBuffer> sendRoot = buffers(job, bytes, registered);
            List<DeviceBuffer> recvRoot = buffers(job, bytes, registered);
            for (DataType type : DataType.values()) {
                MemorySegment[] inputs = new MemorySegment[n];
                for (int q = 0; q < n; q++) {
                    inputs[q] = arena.allocate(maxElements * type.bytes(), 8);
                    CollectiveReference.fill(type, 42 + type.code(), q, 0, maxElements, inputs[q], 0);
                }
                for (CollectiveKind kind : CollectiveKind.values()) {
                    if (kind == CollectiveKind.RECV) {
                        continue;   // SEND runs both
                    }
                    for (ReduceOp op : kind.reduces() ? ReduceOp.values() : new ReduceOp[] {null}) {
                        for (boolean inPlace : new boolean[] {false, true}) {
                            if (inPlace && kind == CollectiveKind.SEND) {
                                continue;
                            }
                            for (long count : new long[] {0, 1, 7, n - 1, LARGE}) {
                                for (long offset : count == LARGE ? new long[] {13} : new long[] {0, 13}) {
                                    String what = kind.label() + " " + type + (op == null ? "" : " " + op)
                                            + (inPlace ? " in place" : "") + " count " + count + " offset " + offset
                                            + " on " + n + " ranks" + (registered ? " registered" : "");
                                    String why = runAndCheck(job, kind, type, op, inPlace, count, offset, inputs,
                                            sendRoot, recvRoot);
                                    calls++;
                                    if (why != null) {
                                        failures.add(what + ": " + why);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            assertTrue(job.comms.stream().allMatch(c -> c.failure().isEmpty()), "no communicator broke");
        }
        System.out.printf("HostCollectivesTest: %d ranks%s%s: %d calls checked in %.1f s%n", n,
                registered ? " (registered)" : "", hostOf == null ? "" : " spanning hosts", calls,
                (System.nanoTime() - t0) / 1e9);
        assertEquals(List.of(), failures.subList(0, Math.min(20, failures.size())), failures.size() + " failures");
    }

    /** A buffer of {@code bytes} on every rank of {@code job}, registered on every rank where {@code registered}. */
    private static List<DeviceBuffer> buffers(Job job, long bytes, boolean registered) {
        List<DeviceBuffer> buffers = new ArrayList<>();
        for (int r = 0; r < job.n; r++) {
            buffers.add(job.backends.get(r).allocate(bytes));
        }
        if (registered) {
            job.all(r -> job.comms.get(r).register(buffers.get(r)));
        }
        return buffers;
    }

    /** Runs one call on every rank and checks every rank's output; null when right, else why not. */
    static String runAndCheck(Job job, CollectiveKind kind, DataType type, ReduceOp op, boolean inPlace, long count,
                              long offset, MemorySegment[] inputs, List<DeviceBuffer> sendRoot,
                              List<DeviceBuffer> recvRoot) {
        return runAndCheck(job, kind, type, op, r -> inPlace, count, offset, inputs, sendRoot, recvRoot);
    }

    /** {@link #runAndCheck}, each rank in place or not as {@code inPlaceOf} says (NCCL decides it per rank). */
    static String runAndCheck(Job job, CollectiveKind kind, DataType type, ReduceOp op, IntPredicate inPlaceOf,
                              long count, long offset, MemorySegment[] inputs, List<DeviceBuffer> sendRoot,
                              List<DeviceBuffer> recvRoot) {
        int n = job.n;
        int w = type.bytes();
        int root = n - 1;
        long sendElements = kind.sendElements(count, n);
        // the ring of sends and receives receives what it sends
        long recvElements = kind == CollectiveKind.SEND ? count : kind.recvElements(count, n);
        List<CollectiveCall> calls = new ArrayList<>();
        List<DeviceBuffer> recvOf = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            boolean inPlace = inPlaceOf.test(r);
            MemorySegment recvSeg = recvRoot.get(r).hostSegment();
            MemorySegment sendSeg = sendRoot.get(r).hostSegment();
            long region = inPlace ? Math.max(sendElements, recvElements) * w : recvElements * w;
            recvSeg.asSlice(offset, region + 2L * GUARD).fill(POISON);
            DeviceBuffer recv = recvRoot.get(r).slice(offset + GUARD, Math.max(1, recvElements * w));
            DeviceBuffer send;
            if (inPlace) {
                CollectiveReference.InPlace layout = CollectiveReference.InPlace.of(kind, recvRoot.get(r).slice(
                        offset + GUARD, Math.max(1, region)), r, count, w, sendElements);
                send = layout.send();
                recv = layout.recv();
                if (layout.inputBytes() > 0) {
                    MemorySegment.copy(inputs[r], 0, recvSeg, offset + GUARD + layout.inputAt(), layout.inputBytes());
                }
            } else {
                send = sendRoot.get(r).slice(offset, Math.max(1, sendElements * w));
                if (sendElements > 0) {
                    MemorySegment.copy(inputs[r], 0, sendSeg, offset, sendElements * w);
                }
            }
            recvOf.add(recv);
            calls.add(switch (kind) {
                case ALL_REDUCE -> CollectiveCall.allReduce(send, recv, count, type, op);
                case ALL_GATHER -> CollectiveCall.allGather(send, recv, count, type);
                case REDUCE_SCATTER -> CollectiveCall.reduceScatter(send, recv, count, type, op);
                case BROADCAST -> CollectiveCall.broadcast(send, recv, count, type, root);
                case REDUCE -> CollectiveCall.reduce(send, recv, count, type, op, root);
                case ALL_TO_ALL -> CollectiveCall.allToAll(send, recv, count, type);
                case SEND, RECV -> null;
            });
        }
        try {
            if (kind == CollectiveKind.SEND) {
                // a ring: send to rank + 1, receive from rank - 1, as one group (with one rank: itself)
                List<DeviceBuffer> sends = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    sends.add(sendRoot.get(r).slice(offset, Math.max(1, count * w)));
                }
                job.all(r -> job.comms.get(r).group(g -> g.recv(recvOf.get(r), count, type, (r + n - 1) % n)
                        .send(sends.get(r), count, type, (r + 1) % n)));
            } else {
                job.all(r -> job.comms.get(r).execute(calls.get(r)));
            }
        } catch (RuntimeException e) {
            return "failed: " + e;
        }
        // the outputs
        for (int r = 0; r < n; r++) {
            boolean inPlace = inPlaceOf.test(r);
            MemorySegment out = recvOf.get(r).hostSegment();
            MemorySegment around = recvRoot.get(r).hostSegment();
            long start = offset + GUARD;
            long end = start + (inPlace ? Math.max(sendElements, recvElements) : recvElements) * w;
            boolean writes = kind != CollectiveKind.REDUCE || r == root;
            if (!untouched(around, offset, GUARD) || !untouched(around, end, GUARD)
                    || (!writes && !inPlace && !untouched(around, start, recvElements * w))) {
                return "rank " + r + " wrote outside its receive range";
            }
            if (!writes || count == 0) {
                continue;
            }
            String why = switch (kind) {
                case ALL_REDUCE -> r == 0 ? reduced(type, op, inputs, 0, out, count)
                        : sameAs(recvOf.get(0).hostSegment(), out, count * w);
                case REDUCE -> reduced(type, op, inputs, 0, out, count);
                case REDUCE_SCATTER -> reduced(type, op, inputs, r * count * w, out, count);
                case BROADCAST -> sameAs(inputs[root], out, count * w);
                case ALL_GATHER -> {
                    String bad = null;
                    for (int q = 0; q < n && bad == null; q++) {
                        bad = sameAs(inputs[q].asSlice(0, count * w), out.asSlice(q * count * w, count * w), count * w);
                    }
                    yield bad;
                }
                case ALL_TO_ALL -> {
                    String bad = null;
                    for (int q = 0; q < n && bad == null; q++) {
                        bad = sameAs(inputs[q].asSlice(r * count * w, count * w), out.asSlice(q * count * w,
                                count * w), count * w);
                    }
                    yield bad;
                }
                case SEND, RECV -> sameAs(inputs[(r + n - 1) % n], out, count * w);
            };
            if (why != null) {
                return "rank " + r + ": " + why;
            }
        }
        return null;
    }

    static String reduced(DataType type, ReduceOp op, MemorySegment[] inputs, long inputOffset, MemorySegment out,
                          long count) {
        long[] offsets = new long[inputs.length];
        java.util.Arrays.fill(offsets, inputOffset);
        return CollectiveReference.checkReduced(type, op, inputs, offsets, out, 0, count);
    }

    static String sameAs(MemorySegment expected, MemorySegment actual, long bytes) {
        long at = MemorySegment.mismatch(expected, 0, bytes, actual, 0, bytes);
        return at < 0 ? null : "byte " + at + " differs";
    }

    static boolean untouched(MemorySegment s, long offset, long bytes) {
        for (long i = 0; i < bytes; i++) {
            if (s.get(ValueLayout.JAVA_BYTE, offset + i) != POISON) {
                return false;
            }
        }
        return true;
    }
}
