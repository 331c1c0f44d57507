package org.jmscclpp.core.host;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CallOptions;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Bad input and faults on the host engine: arguments that are wrong on one rank fail there before
 * anything moves and leave the communicator usable; calls that differ between ranks fail on every
 * rank with INVALID_USAGE naming the ranks and the values, and break the communicator; a peer that
 * never calls is TIMEOUT at the deadline; a peer that dies is REMOTE_ERROR at once.
 */
class HostCollectiveFaultsTest {

    static final Duration LIMIT = Duration.ofSeconds(30);

    /** Every rank's outcome of one call: null for success, else the error. */
    static List<Throwable> outcomes(HostCollectivesTest.Job job, IntFunction<Mono<Void>> perRank) {
        List<Mono<Throwable>> monos = new ArrayList<>();
        for (int r = 0; r < job.n; r++) {
            monos.add(perRank.apply(r).then(Mono.<Throwable>empty()).onErrorResume(Mono::just)
                    .defaultIfEmpty(new Ok()));
        }
        List<Throwable> all = new ArrayList<>(Mono.zip(monos, a -> {
            List<Throwable> l = new ArrayList<>();
            for (Object o : a) {
                l.add(o instanceof Ok ? null : (Throwable) o);
            }
            return l;
        }).block(LIMIT.plusSeconds(10)));
        return all;
    }

    private static final class Ok extends Throwable {
    }

    static JmscclppException usage(Throwable t) {
        assertTrue(t instanceof JmscclppException, "a JmscclppException, not " + t);
        JmscclppException e = (JmscclppException) t;
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        return e;
    }

    @Test
    void localArgumentErrorsFailBeforeAnythingMovesAndLeaveTheCommunicatorUsable() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
            CollectiveComm c = job.comms.get(0);
            DeviceBuffer small = job.backends.get(0).allocate(16);
            DeviceBuffer closed = job.backends.get(0).allocate(64);
            closed.close();
            String[] messages = {
                message(() -> c.allReduce(small, small, -1, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT)),
                message(() -> c.allReduce(small, small, 5, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT)),
                message(() -> c.allReduce(closed, closed, 1, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT)),
                message(() -> c.allReduce(small, small, Long.MAX_VALUE / 2, DataType.FLOAT64, ReduceOp.SUM)
                        .block(LIMIT)),
                message(() -> c.allGather(small.slice(0, 16), small, 16, DataType.INT8).block(LIMIT)),
                message(() -> c.broadcast(small, small, 1, DataType.INT32, 2).block(LIMIT)),
                message(() -> c.send(small, 1, DataType.INT32, -1).block(LIMIT)),
                message(() -> c.allReduce(small.slice(0, 8), small.slice(4, 8), 2, DataType.FLOAT32, ReduceOp.SUM)
                        .block(LIMIT)),
                message(() -> c.allReduce(gpuMemory(), small, 1, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT)),
                message(() -> c.with(CallOptions.algorithm("nosuch")).allReduce(small, small, 1, DataType.FLOAT32,
                        ReduceOp.SUM).block(LIMIT)),
                // a send to itself needs its receive in the same group; the pair must agree
                message(() -> c.send(small, 4, DataType.FLOAT32, 0).block(LIMIT)),
                message(() -> c.group(g -> g.send(small, 4, DataType.FLOAT32, 0).recv(small, 2, DataType.FLOAT32, 0))
                        .block(LIMIT)),
            };
            String[] expected = {"a count of -1", "holds 16 bytes, the call needs 20", "closed",
                "overflows", "the recv buffer holds 16 bytes, the call needs 32", "root 2 is not a rank",
                "peer -1 is not a rank", "overlap", "not host memory", "no all_reduce algorithm 'nosuch'",
                "a batch with 1 sends to this rank itself and 0 receives from it", "does not match rank 0 recv(count 2"};
            for (int i = 0; i < expected.length; i++) {
                assertTrue(messages[i].contains(expected[i]) && messages[i].contains("rank 0"),
                        "'" + messages[i] + "' should say '" + expected[i] + "'");
            }
            assertTrue(c.failure().isEmpty(), "argument errors do not break the communicator");
            // and nothing moved: both ranks still run a real call
            List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(8), job.backends.get(1).allocate(8));
            bufs.get(0).hostSegment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 3);
            bufs.get(1).hostSegment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 4);
            job.all(r -> job.comms.get(r).allReduce(bufs.get(r), bufs.get(r), 1, DataType.INT32, ReduceOp.SUM));
            assertEquals(7, bufs.get(1).hostSegment().get(java.lang.foreign.ValueLayout.JAVA_INT, 0));
            // calls that move nothing take no buffers, as NCCL's take any pointer with a count of 0
            job.all(r -> job.comms.get(r).allReduce(null, null, 0, DataType.INT32, ReduceOp.SUM));
            job.all(r -> job.comms.get(r).group(g -> g.send(null, 0, DataType.INT8, 1 - r)
                    .recv(null, 0, DataType.INT8, 1 - r).reduce(bufs.get(r), r == 0 ? bufs.get(r) : null, 1, DataType.INT32,
                    ReduceOp.MAX, 0)));
            assertEquals(7, bufs.get(0).hostSegment().get(java.lang.foreign.ValueLayout.JAVA_INT, 0));
        }
    }

    /**
     * A wrapped segment of a confined arena (only the thread that made it may touch it; calls run on the engine's
     * threads) is INVALID_USAGE before anything moves, saying so, and leaves the communicator usable: the engine's
     * access used to throw WrongThreadException on its worker, an INTERNAL_ERROR that broke the communicator.
     */
    @Test
    void aWrappedSegmentOfAConfinedArenaIsRefusedBeforeAnythingMoves() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults());
             java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            CollectiveComm c = job.comms.get(0);
            DeviceBuffer confined = DeviceBuffer.wrap(arena.allocate(64));
            DeviceBuffer shared = job.backends.get(0).allocate(64);
            for (Mono<Void> call : List.of(c.allReduce(confined, confined, 4, DataType.FLOAT32, ReduceOp.SUM),
                    c.allGather(shared.slice(0, 4), confined, 1, DataType.INT32),
                    c.group(g -> g.send(confined, 4, DataType.INT8, 0).recv(shared, 4, DataType.INT8, 0)))) {
                JmscclppException e = usage(assertThrows(JmscclppException.class, () -> call.block(LIMIT)));
                assertTrue(e.getMessage().contains("confined") && e.getMessage().contains("rank 0"), e.getMessage());
            }
            assertTrue(c.failure().isEmpty(), "an argument error does not break the communicator");
            List<DeviceBuffer> bufs = List.of(shared, job.backends.get(1).allocate(64));
            for (int r = 0; r < 2; r++) {
                bufs.get(r).hostSegment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, r + 3);
            }
            job.all(r -> job.comms.get(r).allReduce(bufs.get(r), bufs.get(r), 1, DataType.INT32, ReduceOp.SUM));
            assertEquals(7, bufs.get(0).hostSegment().get(java.lang.foreign.ValueLayout.JAVA_INT, 0));
            // a shared arena's segment, an automatic one and an array are the engine's to touch
            try (java.lang.foreign.Arena sharedArena = java.lang.foreign.Arena.ofShared()) {
                List<DeviceBuffer> wraps = List.of(DeviceBuffer.wrap(sharedArena.allocate(4)),
                        DeviceBuffer.wrap(java.lang.foreign.Arena.ofAuto().allocate(4)));
                job.all(r -> job.comms.get(r).allReduce(wraps.get(r), wraps.get(r), 1, DataType.INT32, ReduceOp.SUM));
            }
        }
    }

    /**
     * Two wraps of the same memory are one memory, as NCCL compares pointers: send and recv wrapped
     * separately from one segment run in place and sum right; ranges of it that overlap outside the
     * in-place layout are INVALID_USAGE naming both ranges, as they are within one buffer.
     */
    @Test
    void twoWrapsOfTheSameMemoryAreOneMemory() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
            List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(64), job.backends.get(1).allocate(64));
            for (int r = 0; r < 2; r++) {
                for (int i = 0; i < 16; i++) {
                    bufs.get(r).hostSegment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, i, 10 * r + i);
                }
            }
            job.all(r -> {
                MemorySegment m = bufs.get(r).hostSegment();
                return job.comms.get(r).allReduce(DeviceBuffer.wrap(m), DeviceBuffer.wrap(m), 16, DataType.INT32,
                        ReduceOp.SUM);
            });
            for (int r = 0; r < 2; r++) {
                for (int i = 0; i < 16; i++) {
                    assertEquals(10 + 2 * i, bufs.get(r).hostSegment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_INT,
                            i), "rank " + r + " element " + i);
                }
            }
            MemorySegment m = bufs.get(0).hostSegment();
            String shifted = message(() -> job.comms.get(0).allReduce(DeviceBuffer.wrap(m.asSlice(0, 32)),
                    DeviceBuffer.wrap(m.asSlice(4, 32)), 8, DataType.INT32, ReduceOp.SUM).block(LIMIT));
            assertTrue(shifted.contains("of the same memory overlap") && shifted.contains("0x"
                    + Long.toHexString(m.address() + 4)), shifted);
            // rank 1's in-place allgather layout through two wraps: its slot of the output is the input
            String gather = message(() -> job.comms.get(0).allGather(DeviceBuffer.wrap(m.asSlice(8, 8)),
                    DeviceBuffer.wrap(m.asSlice(0, 16)), 2, DataType.INT32).block(LIMIT));
            assertTrue(gather.contains("overlap, but not in all_gather's in-place layout"), gather);
            assertTrue(job.comms.get(0).failure().isEmpty(), "argument errors do not break the communicator");
        }
    }

    /**
     * Wraps of Java arrays (heap segments, which have no address) are one memory exactly when they
     * are ranges of one array: slices of two arrays run whatever their offsets, and ranges of one
     * array that overlap outside the in-place layout are INVALID_USAGE, as for native memory, instead
     * of a staged call whose pieces overwrite input they have not read yet.
     */
    @Test
    void wrapsOfJavaArraysAreOneMemoryOnlyWithinOneArray() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults()
                .withScratchBytes(64 << 10))) {
            int[][] in = {{1, 2, 3, 4}, {10, 20, 30, 40}};
            int[][] out = new int[2][4];
            job.all(r -> job.comms.get(r).allReduce(DeviceBuffer.wrap(MemorySegment.ofArray(in[r])).slice(4, 8),
                    DeviceBuffer.wrap(MemorySegment.ofArray(out[r])).slice(8, 8), 2, DataType.INT32, ReduceOp.SUM));
            for (int r = 0; r < 2; r++) {
                assertArrayEquals(new int[] {0, 0, 22, 33}, out[r], "rank " + r);
            }
            // more than one piece of the 16 KiB the scratch stages at a time, shifted by one element
            int n = 8192;
            int[] shared = new int[n + 1];
            String shifted = message(() -> job.comms.get(0).allReduce(
                    DeviceBuffer.wrap(MemorySegment.ofArray(shared).asSlice(0, 4L * n)),
                    DeviceBuffer.wrap(MemorySegment.ofArray(shared).asSlice(4, 4L * n)), n, DataType.INT32,
                    ReduceOp.SUM).block(LIMIT));
            assertTrue(shifted.contains("overlap, but not in all_reduce's in-place layout"), shifted);
            // in place through two wraps of one array runs, as through one wrap
            int[][] gathered = {{7, 0}, {0, 8}};
            job.all(r -> job.comms.get(r).allGather(
                    DeviceBuffer.wrap(MemorySegment.ofArray(gathered[r]).asSlice(4L * r, 4)),
                    DeviceBuffer.wrap(MemorySegment.ofArray(gathered[r])), 1, DataType.INT32));
            for (int r = 0; r < 2; r++) {
                assertArrayEquals(new int[] {7, 8}, gathered[r], "rank " + r);
            }
            assertTrue(job.comms.get(0).failure().isEmpty(), "argument errors do not break the communicator");
        }
    }

    private static String message(Runnable call) {
        JmscclppException e = assertThrows(JmscclppException.class, call::run);
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        return e.getMessage();
    }

    /** A buffer that claims to be a GPU's: the host engine must refuse it. */
    private static DeviceBuffer gpuMemory() {
        DeviceBuffer host = DeviceBuffer.wrap(MemorySegment.ofArray(new byte[64]));
        return new DeviceBuffer() {
            @Override
            public long address() {
                return 0x7f0000000000L;
            }

            @Override
            public long size() {
                return 64;
            }

            @Override
            public Device device() {
                return Device.gpu(0);
            }

            @Override
            public boolean hostAccessible() {
                return false;
            }

            @Override
            public MemorySegment hostSegment() {
                return host.hostSegment();
            }

            @Override
            public boolean isClosed() {
                return false;
            }

            @Override
            public void close() {
            }
        };
    }

    /**
     * A scratch size whose layout does not fit in a long ({@code JMSCCLPP_SCRATCH_BYTES=9223372036854775807})
     * is INVALID_USAGE naming the size and the largest one, not an allocation of a negative size.
     */
    @ParameterizedTest
    @ValueSource(longs = {Long.MAX_VALUE, (1L << 62) + 1})
    void aScratchSizeBeyondTheLargestIsRefusedNamingIt(long bytes) {
        List<InMemoryBootstrap> bootstraps = InMemoryBootstrap.group(1);
        HostBackend backend = HostBackend.open();
        Communicator communicator = Communicator.create(bootstraps.get(0), backend);
        try {
            JmscclppException e = usage(assertThrows(JmscclppException.class, () -> CollectiveComm.create(communicator,
                    CollectiveOptions.defaults().withScratchBytes(bytes)).block(LIMIT)));
            assertTrue(e.getMessage().contains("at most " + HostCollectiveComm.MAX_SCRATCH + " bytes of scratch, got "
                    + bytes) && e.getMessage().contains("rank 0"), e.getMessage());
        } finally {
            communicator.close();
            bootstraps.forEach(InMemoryBootstrap::close);
            backend.close();
        }
    }

    @Test
    void ranksThatSetUpWithDifferentScratchSizesAllFailNamingTheRanksAndSizes() {
        List<InMemoryBootstrap> bootstraps = InMemoryBootstrap.group(2);
        List<HostBackend> backends = List.of(HostBackend.open(), HostBackend.open());
        List<Communicator> communicators = List.of(Communicator.create(bootstraps.get(0), backends.get(0)),
                Communicator.create(bootstraps.get(1), backends.get(1)));
        try {
            List<Mono<Throwable>> setups = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                CollectiveOptions options = CollectiveOptions.defaults().withScratchBytes((1L + r) << 20);
                setups.add(CollectiveComm.create(communicators.get(r), options).<Throwable>flatMap(c -> {
                    c.close();
                    return Mono.empty();
                }).onErrorResume(Mono::just).defaultIfEmpty(new AssertionError("the setup succeeded")));
            }
            List<Throwable> errors = Flux.mergeSequential(setups).collectList().block(LIMIT);
            for (int r = 0; r < 2; r++) {
                String m = usage(errors.get(r)).getMessage();
                assertTrue(m.contains("set up the collective communicator differently") && m.contains("rank " + r
                        + " with " + ((1L + r) << 20) + " bytes") && m.contains("rank " + (1 - r) + " with "
                        + ((2L - r) << 20) + " bytes"), m);
            }
        } finally {
            communicators.forEach(Communicator::close);
            bootstraps.forEach(InMemoryBootstrap::close);
            backends.forEach(HostBackend::close);
        }
    }

    @Test
    void ranksThatCallDifferentCollectivesAllFailNamingTheRanksAndValues() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(3, CollectiveOptions.defaults())) {
            List<DeviceBuffer> bufs = new ArrayList<>();
            for (int r = 0; r < 3; r++) {
                bufs.add(job.backends.get(r).allocate(65536));
            }
            List<Throwable> out = outcomes(job, r -> job.comms.get(r).allReduce(bufs.get(r), bufs.get(r),
                    r == 2 ? 99 : 100, DataType.FLOAT32, ReduceOp.SUM));
            for (int r = 0; r < 3; r++) {
                JmscclppException e = usage(out.get(r));
                assertTrue(e.getMessage().contains("rank 2 has count 99") && e.getMessage().contains("count 100"),
                        e.getMessage());
                assertEquals(r, e.rank());
            }
            // broken: the next call fails at once, with the error that broke it
            JmscclppException later = assertThrows(JmscclppException.class, () -> job.comms.get(0)
                    .allReduce(bufs.get(0), bufs.get(0), 1, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT));
            assertTrue(later.getMessage().contains("failed earlier"), later.getMessage());
        }
    }

    /**
     * A send or receive on one rank where the others call a collective (NCCL hangs there): every rank fails with
     * INVALID_USAGE naming both calls, long before the deadline (60 s here), whether the odd rank sends or receives,
     * whether two ranks or three are in the collective, and across hosts (the pair on two hosts, 2 or 3 ranks each).
     */
    @ParameterizedTest
    @ValueSource(strings = {"send-2", "recv-2", "send-3", "recv-3", "send-4-hosts", "recv-4-hosts", "send-6-hosts",
        "recv-6-hosts"})
    void aSendOrReceiveAgainstACollectiveFailsEveryRankAtOnce(String form) {
        boolean send = form.startsWith("send");
        String[] parts = form.split("-");
        int n = Integer.parseInt(parts[1]);
        CollectiveOptions options = CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(60));
        // "hosts": rank r on pretend host r % 2, so rank 0 and rank 1 (the pair) are on different hosts
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(n, options, parts.length > 2 ? r -> r % 2
                : null)) {
            List<DeviceBuffer> bufs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                bufs.add(job.backends.get(r).allocate(64));
            }
            long start = System.nanoTime();
            List<Throwable> out = outcomes(job, r -> r == 0
                    ? (send ? job.comms.get(0).send(bufs.get(0), 4, DataType.INT32, 1)
                    : job.comms.get(0).recv(bufs.get(0), 4, DataType.INT32, 1))
                    : job.comms.get(r).allReduce(bufs.get(r), bufs.get(r), 4, DataType.INT32, ReduceOp.SUM));
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            for (int r = 0; r < n; r++) {
                JmscclppException e = usage(out.get(r));
                assertTrue(e.getMessage().contains((send ? "send" : "recv") + "(count 4, int32, peer 1)")
                        && e.getMessage().contains("all_reduce(count 4, int32, sum"), e.getMessage());
                assertEquals(r, e.rank());
            }
            assertTrue(took.compareTo(Duration.ofSeconds(30)) < 0, "the ranks failed after " + took);
            // and nothing is left waiting for the peers (a close waits for the calls in flight)
            long closing = System.nanoTime();
            job.close();
            Duration closed = Duration.ofNanos(System.nanoTime() - closing);
            assertTrue(closed.compareTo(Duration.ofSeconds(10)) < 0, "the job closed after " + closed);
        }
    }

    /**
     * Across hosts (4 ranks on 2 pretend hosts, rank r on host r % 2), calls that differ between
     * the hosts, within one host, and on a host that only receives (a broadcast's other host): every
     * rank fails with INVALID_USAGE naming the odd rank by its rank in the job and both values, and
     * the communicator refuses later calls.
     */
    @Test
    void mismatchedCallsAcrossHostsFailEveryRankNamingTheRanksAndValues() {
        record Case(String name, String expect, IntFunction<Call> call) {
        }
        List<Case> cases = List.of(
                new Case("between the hosts", "rank 1 has count 99",
                        r -> (c, b) -> c.allReduce(b, b, r % 2 == 1 ? 99 : 100, DataType.FLOAT32, ReduceOp.SUM)),
                new Case("within a host", "rank 3 has count 99",
                        r -> (c, b) -> c.allReduce(b, b, r == 3 ? 99 : 100, DataType.FLOAT32, ReduceOp.SUM)),
                new Case("on the receiving host", "rank 3 has count 7",
                        r -> (c, b) -> c.broadcast(b, b, r == 3 ? 7 : 8, DataType.INT8, 0)));
        for (Case k : cases) {
            try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(4, CollectiveOptions.defaults(),
                    r -> r % 2)) {
                List<DeviceBuffer> bufs = new ArrayList<>();
                for (int r = 0; r < 4; r++) {
                    bufs.add(job.backends.get(r).allocate(4096));
                }
                List<Throwable> out = outcomes(job, r -> k.call().apply(r).run(job.comms.get(r), bufs.get(r)));
                for (int r = 0; r < 4; r++) {
                    JmscclppException e = usage(out.get(r));
                    assertTrue(e.getMessage().contains(k.expect()), k.name() + ", rank " + r + ": " + e.getMessage());
                    assertEquals(r, e.rank(), k.name() + ": " + e);
                }
                JmscclppException later = assertThrows(JmscclppException.class, () -> job.comms.get(0)
                        .allReduce(bufs.get(0), bufs.get(0), 1, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT));
                assertTrue(later.getMessage().contains("failed earlier"), k.name() + ": " + later.getMessage());
            }
        }
    }

    @Test
    void everyFieldOfTheDescriptorIsCompared() {
        record Case(String name, String expect, IntFunction<Call> call) {
        }
        List<Case> cases = List.of(
                new Case("type", "type int32", r -> (c, b) -> c.allReduce(b, b, 8, r == 1 ? DataType.INT32
                        : DataType.FLOAT32, ReduceOp.SUM)),
                new Case("op", "op max", r -> (c, b) -> c.allReduce(b, b, 8, DataType.FLOAT32, r == 1 ? ReduceOp.MAX
                        : ReduceOp.SUM)),
                new Case("root", "root 0", r -> (c, b) -> c.broadcast(b, b, 8, DataType.INT8, r == 1 ? 0 : 1)),
                new Case("kind", "calls all_gather", r -> (c, b) -> r == 1 ? c.allGather(b.slice(8, 8), b, 8,
                        DataType.INT8) : c.allReduce(b, b, 8, DataType.INT8, ReduceOp.SUM)));
        for (Case k : cases) {
            try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
                List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(256), job.backends.get(1).allocate(256));
                List<Throwable> out = outcomes(job, r -> k.call().apply(r).run(job.comms.get(r), bufs.get(r)));
                for (int r = 0; r < 2; r++) {
                    JmscclppException e = usage(out.get(r));
                    assertTrue(e.getMessage().contains(k.expect()), k.name() + ": " + e.getMessage());
                }
            }
        }
    }

    @FunctionalInterface
    interface Call {
        Mono<Void> run(CollectiveComm c, DeviceBuffer b);
    }

    @Test
    void aRegisteredBufferOnOneRankAndAnUnregisteredOneOnAnotherIsAMismatch() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
            List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(256), job.backends.get(1).allocate(256));
            List<DeviceBuffer> other = List.of(job.backends.get(0).allocate(256), job.backends.get(1).allocate(256));
            job.all(r -> job.comms.get(r).register(r == 0 ? bufs.get(r) : other.get(r)));
            List<Throwable> out = outcomes(job, r -> job.comms.get(r).allReduce(bufs.get(r), bufs.get(r), 8,
                    DataType.FLOAT32, ReduceOp.SUM));
            for (int r = 0; r < 2; r++) {
                assertTrue(usage(out.get(r)).getMessage().contains("staged"), out.get(r).getMessage());
            }
        }
    }

    @Test
    void sendsAndReceivesThatDoNotMatchFailBothEnds() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
            List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(256), job.backends.get(1).allocate(256));
            List<Throwable> out = outcomes(job, r -> r == 0 ? job.comms.get(0).send(bufs.get(0), 10, DataType.INT8, 1)
                    : job.comms.get(1).recv(bufs.get(1), 11, DataType.INT8, 0));
            for (int r = 0; r < 2; r++) {
                JmscclppException e = usage(out.get(r));
                assertTrue(e.getMessage().contains("count 10") && e.getMessage().contains("count 11"), e.getMessage());
            }
        }
    }

    /**
     * Misuse around closing and deregistering: every error is typed. A deregister waits for the calls in flight (it
     * unmapped the memory under one, whose worker then failed with a raw IllegalStateException); register and
     * deregister after close are INVALID_USAGE (they failed on the closed scheduler); a call after the communicator
     * under the collective one was closed is INVALID_USAGE saying so.
     */
    @Test
    void closingAndDeregisteringUnderCallsGiveTypedErrorsAndNoCrash() {
        int count = 1 << 22;
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
            List<DeviceBuffer> bufs = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                DeviceBuffer b = job.backends.get(r).allocate(4L * count);
                for (int i = 0; i < count; i++) {
                    b.hostSegment().setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, r + 1);
                }
                bufs.add(b);
            }
            job.all(r -> job.comms.get(r).register(bufs.get(r)));
            // a large call in flight, then deregister at once: it waits, and the call's result is right
            job.all(r -> Mono.when(job.comms.get(r).allReduce(bufs.get(r), bufs.get(r), count, DataType.FLOAT32,
                    ReduceOp.SUM), job.comms.get(r).deregister(bufs.get(r))));
            for (int r = 0; r < 2; r++) {
                assertEquals(3f, bufs.get(r).hostSegment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT,
                        count - 1));
                assertTrue(job.comms.get(r).failure().isEmpty(), "the communicator stays usable");
            }
            CollectiveComm c = job.comms.get(0);
            job.communicators.get(0).close();
            JmscclppException afterCommClosed = assertThrows(JmscclppException.class,
                    () -> c.allReduce(bufs.get(0), bufs.get(0), 4, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT));
            assertEquals(ErrorCode.INVALID_USAGE, afterCommClosed.code(), afterCommClosed.getMessage());
            assertTrue(afterCommClosed.getMessage().contains("was made from is closed"), afterCommClosed.getMessage());
            c.close();
            for (Mono<Void> step : List.of(c.register(bufs.get(0)), c.deregister(bufs.get(0)))) {
                JmscclppException e = assertThrows(JmscclppException.class, () -> step.block(LIMIT));
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
                assertTrue(e.getMessage().contains("closed"), e.getMessage());
            }
        }
    }

    /**
     * close() waits for the calls issued before it (as NCCL's ncclCommDestroy finalizes them): rank 0 closes while
     * its call waits for rank 1's, refuses new calls from then on, and its call still completes with the right
     * result once rank 1 makes its part; close() from a call's own doFinally does not wait for that call.
     */
    @Test
    void closeWaitsForTheCallsInFlightAndMayBeCalledFromTheirCallbacks() throws Exception {
        CollectiveOptions options = CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(20));
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, options)) {
            List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(64), job.backends.get(1).allocate(64));
            for (int r = 0; r < 2; r++) {
                bufs.get(r).hostSegment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, r + 5);
            }
            CollectiveComm c0 = job.comms.get(0);
            java.util.concurrent.CompletableFuture<Void> call = c0.allReduce(bufs.get(0), bufs.get(0), 1,
                    DataType.INT32, ReduceOp.SUM).toFuture();
            Thread closer = Thread.ofPlatform().name("closer").start(c0::close);
            // close() parks only in its wait for the calls in flight, after it began refusing new ones (a probe
            // before that would queue behind the call in flight)
            long deadline = System.nanoTime() + LIMIT.toNanos();
            while (closer.getState() != Thread.State.TIMED_WAITING && closer.isAlive() && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(Thread.State.TIMED_WAITING, closer.getState(), "close() waits for the call in flight");
            DeviceBuffer probe = job.backends.get(0).allocate(64);
            JmscclppException refused = assertThrows(JmscclppException.class, () -> c0.group(g -> g.send(bufs.get(0),
                    1, DataType.INT32, 0).recv(probe, 1, DataType.INT32, 0)).block(LIMIT));
            assertTrue(refused.code() == ErrorCode.INVALID_USAGE && refused.getMessage().contains("closed"),
                    refused.getMessage());
            job.comms.get(1).allReduce(bufs.get(1), bufs.get(1), 1, DataType.INT32, ReduceOp.SUM).block(LIMIT);
            call.get(LIMIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
            assertTrue(closer.join(LIMIT), "close() returned once the call ended");
            assertEquals(11, bufs.get(0).hostSegment().get(java.lang.foreign.ValueLayout.JAVA_INT, 0));

            // rank 1 closes from the doFinally of a send/recv with itself (a call that needs no peer)
            CollectiveComm c1 = job.comms.get(1);
            DeviceBuffer received = job.backends.get(1).allocate(64);
            long start = System.nanoTime();
            c1.group(g -> g.send(bufs.get(1), 1, DataType.INT32, 1).recv(received, 1, DataType.INT32, 1))
                    .doFinally(signal -> c1.close()).block(LIMIT);
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertTrue(took.compareTo(Duration.ofSeconds(10)) < 0, "close() in the call's doFinally waited " + took
                    + " (for the call whose callback it ran in?)");
            JmscclppException after = assertThrows(JmscclppException.class, () -> c1.allGather(bufs.get(1),
                    bufs.get(1), 0, DataType.INT32).block(LIMIT));
            assertEquals(ErrorCode.INVALID_USAGE, after.code(), after.getMessage());
        }
    }

    /**
     * close() from a call's doFinally, with another call issued behind it: that call cannot run while the callback
     * (on the engine's thread) waits, so close() returns at once and it fails typed, instead of close() holding the
     * engine's thread for the whole timeout; on one host and across hosts.
     */
    @ParameterizedTest(name = "across hosts={0}")
    @ValueSource(booleans = {false, true})
    void closeFromACallbackWithACallQueuedBehindReturnsAtOnce(boolean acrossHosts) throws InterruptedException {
        CollectiveOptions options = CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(20));
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, options, acrossHosts ? r -> r : null)) {
            List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(64), job.backends.get(1).allocate(64));
            for (int r = 0; r < 2; r++) {
                bufs.get(r).hostSegment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, r + 5);
            }
            long[] closeNanos = new long[2];
            java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(2);
            long start = System.nanoTime();
            List<Throwable> second = new ArrayList<>();
            job.all(r -> {
                CollectiveComm c = job.comms.get(r);
                Mono<Void> first = c.allReduce(bufs.get(r), bufs.get(r), 1, DataType.INT32, ReduceOp.SUM)
                        .doFinally(s -> {
                            long t = System.nanoTime();
                            c.close();
                            closeNanos[r] = System.nanoTime() - t;
                            closed.countDown();
                        });
                Mono<Void> behind = c.allReduce(bufs.get(r), bufs.get(r), 1, DataType.INT32, ReduceOp.SUM)
                        .onErrorResume(e -> {
                            synchronized (second) {
                                second.add(e);
                            }
                            return Mono.empty();
                        });
                return Mono.when(first, behind);
            });
            assertTrue(closed.await(LIMIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS), "both ranks closed");
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            for (int r = 0; r < 2; r++) {
                assertTrue(closeNanos[r] < Duration.ofSeconds(5).toNanos(), "close() in the doFinally took "
                        + Duration.ofNanos(closeNanos[r]) + " on rank " + r + " (timeout 20 s)");
            }
            assertTrue(took.compareTo(Duration.ofSeconds(10)) < 0, "the calls took " + took);
            assertEquals(11, bufs.get(0).hostSegment().get(java.lang.foreign.ValueLayout.JAVA_INT, 0),
                    "the first call completed");
            assertEquals(2, second.size(), "the call behind fails on both ranks: " + second);
            // queued before the close (it fails as closed before it ran), or issued after it on a rank whose first
            // call had already completed (the last rank to subscribe finds its peers waiting): refused as closed
            second.forEach(e -> assertTrue(e instanceof JmscclppException j && j.code() == ErrorCode.INVALID_USAGE
                    && (j.getMessage().contains("closed before this call ran")
                    || j.getMessage().contains("the collective communicator is closed")), "typed: " + e));
        }
    }

    /** A call that waits for a peer which never makes its part holds close() up to the timeout, not longer. */
    @Test
    void closeEndsACallStillWaitingAtTheTimeout() {
        CollectiveOptions options = CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(2));
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, options)) {
            DeviceBuffer b = job.backends.get(0).allocate(64);
            CollectiveComm c0 = job.comms.get(0);
            java.util.concurrent.CompletableFuture<Void> call = c0.allReduce(b, b, 1, DataType.INT32, ReduceOp.SUM)
                    .toFuture();
            long start = System.nanoTime();
            c0.close();
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertTrue(took.compareTo(Duration.ofMillis(1500)) > 0 && took.compareTo(Duration.ofSeconds(15)) < 0,
                    "close() took " + took + " with a call waiting for a peer (timeout 2 s)");
            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> call.get(LIMIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof JmscclppException, String.valueOf(e.getCause()));
        }
    }

    /**
     * Across hosts as on one host: a call waiting for a peer that never makes its part (with a deadline of its own
     * longer than the communicator's) holds close() up to the communicator's timeout, and ends with ABORTED when the
     * communicator is released. Its waits used to run on after that (close() took 2 × the timeout + 5 s: its wait,
     * then the release's wait for the worker), ending in a TIMEOUT or an interrupt. Small calls (flat) and large
     * ones (hier).
     */
    @ParameterizedTest(name = "count {0}")
    @ValueSource(longs = {1, 100_000})
    void closeEndsACallStillWaitingAtTheTimeoutAcrossHosts(long count) {
        CollectiveOptions options = CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(3));
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, options, r -> r)) {
            DeviceBuffer b = job.backends.get(0).allocate(4 * count);
            CollectiveComm c0 = job.comms.get(0);
            java.util.concurrent.CompletableFuture<Void> call = c0.with(CallOptions.timeout(Duration.ofSeconds(60)))
                    .allReduce(b, b, count, DataType.INT32, ReduceOp.SUM).toFuture();
            long start = System.nanoTime();
            c0.close();
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertTrue(took.compareTo(Duration.ofMillis(2500)) > 0 && took.compareTo(Duration.ofSeconds(7)) < 0,
                    "close() took " + took + " with a call waiting for a peer (timeout 3 s)");
            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> call.get(5, java.util.concurrent.TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof JmscclppException j && j.code() == ErrorCode.ABORTED
                    && j.getMessage().contains("closed"), String.valueOf(e.getCause()));
        }
    }

    /** After an abort (here or on a peer) failure() says so at once, and later calls fail up front with it. */
    @Test
    void anAbortedCommunicatorSaysSoAndRefusesLaterCallsAtOnce() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
            DeviceBuffer b = job.backends.get(0).allocate(64);
            CollectiveComm c = job.comms.get(0);
            assertTrue(c.failure().isEmpty());
            c.abort("the service shuts down");
            JmscclppException f = c.failure().orElseThrow();
            assertEquals(ErrorCode.ABORTED, f.code(), f.getMessage());
            assertTrue(f.getMessage().contains("the service shuts down"), f.getMessage());
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> c.allReduce(b, b, 4, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT));
            assertEquals(ErrorCode.ABORTED, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("failed earlier and cannot run more calls"), e.getMessage());
            // the peer hears of it through the bootstrap, and refuses as well
            CollectiveComm peer = job.comms.get(1);
            long deadline = System.nanoTime() + LIMIT.toNanos();
            while (peer.failure().isEmpty() && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(ErrorCode.ABORTED, peer.failure().orElseThrow().code());
        }
    }

    /**
     * An abort on a job of one rank breaks its collective communicator as on any other (the watch of the abort
     * signal was started only with peers to watch, so failure() stayed empty and calls kept running); on one host's
     * engine and on the hierarchical one.
     */
    @ParameterizedTest(name = "hierarchical={0}")
    @ValueSource(booleans = {false, true})
    void anAbortOnAJobOfOneRankRefusesLaterCalls(boolean hierarchical) {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(1, CollectiveOptions.defaults(),
                hierarchical ? r -> r : null)) {
            DeviceBuffer b = job.backends.get(0).allocate(64);
            CollectiveComm c = job.comms.get(0);
            c.allReduce(b, b, 4, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT);
            c.abort("the service shuts down");
            JmscclppException f = c.failure().orElseThrow(() -> new AssertionError("no failure after an abort"));
            assertEquals(ErrorCode.ABORTED, f.code(), f.getMessage());
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> c.allReduce(b, b, 4, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT));
            assertEquals(ErrorCode.ABORTED, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("the service shuts down"), e.getMessage());
        }
    }

    /**
     * The timeout a caller writes for "no deadline" ({@link ChronoUnit#FOREVER}'s duration) as the
     * communicator's, a call's and a setup's: everything runs as with any other timeout; no deadline
     * made of it overflows (an ArithmeticException, or a deadline already past).
     */
    @Test
    void aTimeoutOfForeverIsALongWaitNotAnOverflow() {
        Duration forever = ChronoUnit.FOREVER.getDuration();
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults()
                .withTimeout(forever))) {
            List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(8), job.backends.get(1).allocate(8));
            for (int r = 0; r < 2; r++) {
                bufs.get(r).hostSegment().set(java.lang.foreign.ValueLayout.JAVA_INT, 0, r + 3);
            }
            job.all(r -> job.comms.get(r).allReduce(bufs.get(r), bufs.get(r), 1, DataType.INT32, ReduceOp.SUM));
            job.all(r -> job.comms.get(r).with(CallOptions.timeout(forever)).allReduce(bufs.get(r), bufs.get(r), 1,
                    DataType.INT32, ReduceOp.SUM));
            assertEquals(14, bufs.get(1).hostSegment().get(java.lang.foreign.ValueLayout.JAVA_INT, 0));
            job.all(r -> job.communicators.get(r).setup(forever));
        }
    }

    @Test
    void aPeerThatNeverCallsIsATimeoutAtTheDeadline() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
            DeviceBuffer b = job.backends.get(0).allocate(64);
            long t0 = System.nanoTime();
            JmscclppException e = assertThrows(JmscclppException.class, () -> job.comms.get(0)
                    .with(CallOptions.timeout(Duration.ofMillis(500))).allReduce(b, b, 4, DataType.FLOAT32,
                            ReduceOp.SUM).block(LIMIT));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
            assertEquals(1, e.peer(), e.getMessage());
            assertTrue(ms >= 450 && ms < 10_000, "failed after " + ms + " ms");
        }
    }

    /** The TIMEOUT of a send or receive whose peer never takes part says so (a receive said "0 of -1 chunks"). */
    @Test
    void aSendOrReceiveWhosePeerNeverTakesPartSaysSoAtTheDeadline() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
            DeviceBuffer b = job.backends.get(0).allocate(64);
            CollectiveComm comm = job.comms.get(0).with(CallOptions.timeout(Duration.ofMillis(300)));
            JmscclppException recv = assertThrows(JmscclppException.class,
                    () -> comm.recv(b, 4, DataType.INT32, 1).block(LIMIT));
            assertEquals(ErrorCode.TIMEOUT, recv.code(), recv.getMessage());
            assertTrue(recv.getMessage().contains("did not complete in time (nothing came from rank 1)"),
                    recv.getMessage());
        }
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
            DeviceBuffer b = job.backends.get(0).allocate(64);
            JmscclppException send = assertThrows(JmscclppException.class, () -> job.comms.get(0)
                    .with(CallOptions.timeout(Duration.ofMillis(300))).send(b, 4, DataType.INT32, 1).block(LIMIT));
            assertEquals(ErrorCode.TIMEOUT, send.code(), send.getMessage());
            assertTrue(send.getMessage().contains("did not complete in time (0 of 1 chunks acknowledged)"),
                    send.getMessage());
        }
    }

    @Test
    void aPeerThatDiesDuringACallIsARemoteErrorLongBeforeTheDeadline() {
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(3, CollectiveOptions.defaults())) {
            List<DeviceBuffer> bufs = new ArrayList<>();
            for (int r = 0; r < 3; r++) {
                bufs.add(job.backends.get(r).allocate(64));
            }
            long t0 = System.nanoTime();
            // ranks 0 and 1 call; rank 2 never does and leaves the job
            List<Mono<Throwable>> calls = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                calls.add(job.comms.get(r).with(CallOptions.timeout(Duration.ofSeconds(60))).allReduce(bufs.get(r),
                        bufs.get(r), 4, DataType.FLOAT32, ReduceOp.SUM).then(Mono.<Throwable>empty())
                        .onErrorResume(Mono::just));
            }
            Mono<List<Throwable>> both = Mono.zip(calls, a -> List.of((Throwable) a[0], (Throwable) a[1])).cache();
            both.subscribe();
            job.bootstraps.get(2).close();
            List<Throwable> out = both.block(LIMIT);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            for (Throwable t : out) {
                assertTrue(t instanceof JmscclppException j && j.code() == ErrorCode.REMOTE_ERROR,
                        "REMOTE_ERROR, not " + t);
            }
            assertTrue(ms < 10_000, "the survivors failed after " + ms + " ms, against a deadline of 60 s");
        }
    }

    /**
     * Across hosts (4 ranks on 2 pretend hosts): rank 3 leaves while the others run an allReduce.
     * Its host partner (rank 1) waits for it inside the host, ranks 0 and 2 on their rails between
     * hosts; all three fail with REMOTE_ERROR long before the deadline. Slices of one chunk of the
     * rail, and of several (the rail's sending half then runs on its own thread).
     */
    @ParameterizedTest(name = "{0} floats")
    @ValueSource(longs = {300_000, 3_000_000})
    void aPeerThatDiesDuringACallAcrossHostsIsARemoteErrorOnEverySurvivor(long count) {
        int n = 4;
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(n, CollectiveOptions.defaults(), r -> r % 2)) {
            List<DeviceBuffer> bufs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                bufs.add(job.backends.get(r).allocate(count * 4));
            }
            long t0 = System.nanoTime();
            List<Mono<Throwable>> calls = new ArrayList<>();
            for (int r = 0; r < n - 1; r++) {
                calls.add(job.comms.get(r).with(CallOptions.timeout(Duration.ofSeconds(60))).allReduce(bufs.get(r),
                        bufs.get(r), count, DataType.FLOAT32, ReduceOp.SUM).then(Mono.<Throwable>empty())
                        .onErrorResume(Mono::just));
            }
            Mono<List<Throwable>> all = Mono.zip(calls, a -> List.of((Throwable) a[0], (Throwable) a[1],
                    (Throwable) a[2])).cache();
            all.subscribe();
            job.bootstraps.get(n - 1).close();
            List<Throwable> out = all.block(LIMIT);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            for (int r = 0; r < n - 1; r++) {
                Throwable t = out.get(r);
                assertTrue(t instanceof JmscclppException j && j.code() == ErrorCode.REMOTE_ERROR && j.rank() == r,
                        "rank " + r + ": REMOTE_ERROR, not " + t);
            }
            assertTrue(ms < 10_000, "the survivors failed after " + ms + " ms, against a deadline of 60 s");
        }
    }

    /**
     * Sends between hosts (2 ranks on 2 pretend hosts): rank 1 leaves while rank 0 sends it 3 M floats
     * (several of the link's chunks), before the link between them exists or after a first send made
     * it. Rank 0 fails with REMOTE_ERROR long before its 60 s deadline, whether it waits in the
     * descriptor check, the link's setup or the link's chunks.
     */
    @ParameterizedTest(name = "link made first: {0}")
    @ValueSource(booleans = {false, true})
    void aPeerThatLeavesDuringASendAcrossHostsIsARemoteError(boolean linked) throws Exception {
        long count = 3_000_000;
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults(), r -> r)) {
            DeviceBuffer src = job.backends.get(0).allocate(count * 4);
            DeviceBuffer dst = job.backends.get(1).allocate(count * 4);
            if (linked) {
                Mono.when(job.comms.get(0).send(src, count, DataType.FLOAT32, 1),
                        job.comms.get(1).recv(dst, count, DataType.FLOAT32, 0)).block(LIMIT);
            }
            long t0 = System.nanoTime();
            Mono<Throwable> sent = job.comms.get(0).with(CallOptions.timeout(Duration.ofSeconds(60)))
                    .send(src, count, DataType.FLOAT32, 1).then(Mono.<Throwable>empty()).onErrorResume(Mono::just)
                    .cache();
            sent.subscribe();
            java.util.concurrent.CompletableFuture<Void> received = null;
            if (linked) {
                // the receive starts, then its rank leaves: rank 0 may be anywhere in the transfer
                received = job.comms.get(1).recv(dst, count, DataType.FLOAT32, 0).toFuture();
            }
            job.bootstraps.get(1).close();
            Throwable t = sent.block(LIMIT);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (t == null && received != null) {
                // the link outran the news: the whole message was received before rank 1's departure was heard of
                // (its receive then completes as well); anything else is a send that wrongly succeeded
                Throwable receiveError = received.handle((v, e) -> e).get(LIMIT.toSeconds(),
                        java.util.concurrent.TimeUnit.SECONDS);
                assertTrue(receiveError == null, "rank 0's send completed, rank 1's receive failed: " + receiveError);
                return;
            }
            assertTrue(t instanceof JmscclppException j && j.code() == ErrorCode.REMOTE_ERROR && j.rank() == 0,
                    "REMOTE_ERROR, not " + t);
            assertTrue(ms < 10_000, "rank 0 failed after " + ms + " ms, against a deadline of 60 s");
        }
    }

    /**
     * A rank whose call completed may close at once, as NCCL ranks destroy their communicator after the last call:
     * the peer still finishing the same call (its last barrier signal already came) must complete too, not fail
     * with the news that the first rank left.
     */
    @Test
    void aRankThatLeavesRightAfterItsCallDoesNotFailAPeerFinishingTheSameCall() {
        for (int round = 0; round < 40; round++) {
            try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
                List<Mono<Void>> calls = new ArrayList<>();
                List<float[]> values = List.of(new float[] {1, 2, 3, 4, 5}, new float[] {10, 20, 30, 40, 50});
                for (int r = 0; r < 2; r++) {
                    int rank = r;
                    DeviceBuffer b = DeviceBuffer.wrap(MemorySegment.ofArray(values.get(r)));
                    calls.add(job.comms.get(r).allReduce(b, b, 5, DataType.FLOAT32, ReduceOp.SUM)
                            .doOnSuccess(v -> job.bootstraps.get(rank).close()));
                }
                Mono.when(calls).block(LIMIT);
                for (float[] v : values) {
                    assertArrayEquals(new float[] {11, 22, 33, 44, 55}, v, "round " + round);
                }
            }
        }
    }

    /**
     * Across hosts (4 ranks on 2 pretend hosts, rank r on host r % 2), rank 1 never calls: rank 3, which waits for
     * it inside their host, must name rank 1 (its rank in the job), not only 0 (its place in the host's
     * communicator, which is the job's healthy rank 0).
     */
    @Test
    void aPeerMissingInsideTheHostIsNamedByItsRankInTheJob() {
        CollectiveOptions options = CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(2));
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(4, options, r -> r % 2)) {
            List<DeviceBuffer> bufs = new ArrayList<>();
            for (int r = 0; r < 4; r++) {
                bufs.add(job.backends.get(r).allocate(65536));
            }
            List<Throwable> out = outcomes(job, r -> r == 1 ? Mono.never().then().timeout(Duration.ofSeconds(4),
                    Mono.empty()) : job.comms.get(r).allReduce(bufs.get(r), bufs.get(r), 16384, DataType.FLOAT32,
                    ReduceOp.SUM));
            Throwable t = out.get(3);
            assertTrue(t instanceof JmscclppException, "rank 3: a JmscclppException, not " + t);
            JmscclppException e = (JmscclppException) t;
            assertEquals(3, e.rank(), e.getMessage());
            assertEquals(1, e.peer(), "rank 3 waits for rank 1 in its host: " + e.getMessage());
            assertTrue(e.getMessage().contains("rank 1 of the job"), "says which rank of the job it waits for: "
                    + e.getMessage());
            bufs.forEach(DeviceBuffer::close);
        }
    }
}
