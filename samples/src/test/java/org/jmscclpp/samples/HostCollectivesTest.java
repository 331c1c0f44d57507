package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.InMemoryBootstrap;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.host.HostBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every host collective and algorithm, every type, in and out of place (where the kind has it),
 * on 2, 3 and 4 ranks in this JVM (InMemoryBootstrap, one host backend over a temporary
 * directory), over counts with tails and across ll16's chunk and auto's threshold, two runs of
 * each with fresh data: {@link CollectiveData} checks every output element of every rank.
 */
class HostCollectivesTest {

    static final Duration TIMEOUT = Duration.ofSeconds(20);
    /** 1 element, tails of 4, 8 and 16, and more than one 64 KiB ll16 chunk (and auto's rsag) for 4-byte types. */
    static final long[] COUNTS = {1, 7, 1531, 20011};
    static final long MAX_SIZE = 4L * 20011 * 4;

    @TempDir
    Path shm;

    static Stream<Arguments> cases() {
        List<Arguments> all = new ArrayList<>();
        for (int n : new int[] {2, 3, 4}) {
            for (CollectiveKind kind : CollectiveKind.values()) {
                for (CollectiveAlgorithms.Entry e : CollectiveAlgorithms.of(kind, "host")) {
                    // other test classes of this JVM may have registered TestCollectives (one corrupts on purpose)
                    if (!e.algorithm().startsWith("test-")) {
                        all.add(Arguments.of(n, kind, e.algorithm()));
                    }
                }
            }
        }
        return all.stream();
    }

    /** The ranks of one job in this JVM, each running {@code perRank} on a thread of its own. */
    interface RankBody {
        void run(CollectiveSetup setup) throws Exception;
    }

    private void onRanks(int n, RankBody body) throws Exception {
        try (HostBackend backend = HostBackend.open(shm)) {
            List<InMemoryBootstrap> bootstraps = InMemoryBootstrap.group(n);
            List<Communicator> comms = new ArrayList<>();
            bootstraps.forEach(b -> comms.add(Communicator.create(b, backend)));
            ExecutorService threads = Executors.newFixedThreadPool(n);
            try {
                List<Future<?>> ranks = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    CollectiveSetup setup = new CollectiveSetup(comms.get(r), MAX_SIZE, TIMEOUT);
                    ranks.add(threads.submit(() -> {
                        body.run(setup);
                        return null;
                    }));
                }
                for (Future<?> f : ranks) {
                    f.get(120, TimeUnit.SECONDS);
                }
            } finally {
                threads.shutdownNow();
                assertTrue(threads.awaitTermination(30, TimeUnit.SECONDS), "rank threads ended");
                comms.forEach(Communicator::close);
                bootstraps.forEach(InMemoryBootstrap::close);
            }
        }
    }

    static long seed(int n, CollectiveKind kind, DataType type, boolean inPlace, long count, int run) {
        return CollectiveValues.mix(((long) n << 48) ^ ((long) kind.ordinal() << 40) ^ ((long) type.ordinal() << 32)
                ^ (inPlace ? 1L << 31 : 0) ^ (count << 4) ^ run);
    }

    @ParameterizedTest(name = "{1} {2} on {0} ranks")
    @MethodSource("cases")
    @Timeout(150)
    void everyElementOfEveryRunIsRight(int n, CollectiveKind kind, String algorithm) throws Exception {
        CollectiveAlgorithms.Entry entry = CollectiveAlgorithms.find(kind, "host", algorithm).orElseThrow();
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Integer> runs = new ConcurrentLinkedQueue<>();
        onRanks(n, setup -> {
            try (Collective c = entry.factory().apply(setup); CollectiveData data = CollectiveData.create(c, setup)) {
                assertEquals(kind, c.kind());
                assertEquals(algorithm, c.algorithm());
                int done = 0;
                for (DataType type : DataType.values()) {
                    for (boolean inPlace : kind.hasInPlace() ? new boolean[] {false, true} : new boolean[] {false}) {
                        for (long count : COUNTS) {
                            for (int run = 0; run < 2; run++) {
                                long seed = seed(n, kind, type, inPlace, count, run);
                                data.prepare(count, type, inPlace, seed);
                                c.enqueue(count, type, inPlace);
                                c.synchronize(TIMEOUT);
                                long bad = data.check(count, type, inPlace, seed);
                                if (bad != 0) {
                                    wrong.add(String.format(Locale.ROOT, "rank %d: %s %s count %d run %d: %d wrong",
                                            setup.rank(), type, inPlace ? "in place" : "out of place", count, run,
                                            bad));
                                }
                                done++;
                            }
                        }
                    }
                }
                runs.add(done);
                // nobody frees its buffers while a peer may still write into them
                Blocking.done(setup.bootstrap().barrier(TIMEOUT), TIMEOUT, setup.rank(), "test end");
            }
        });
        assertEquals(List.of(), List.copyOf(wrong));
        assertEquals(n, runs.size());
    }

    /** A check sees every element: all of them poisoned before the run, exactly one after one is corrupted. */
    @Test
    @Timeout(60)
    void checkCountsExactlyTheCorruptedElement() throws Exception {
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        onRanks(3, setup -> {
            try (Collective c = new HostMemoryAllGather(setup); CollectiveData data = CollectiveData.create(c, setup);
                 Arena arena = Arena.ofConfined()) {
                long count = 1001;
                for (DataType type : DataType.values()) {
                    long seed = 99 + type.ordinal();
                    data.prepare(count, type, false, seed);
                    long before = data.check(count, type, false, seed);
                    if (before != 3 * count) {
                        wrong.add("rank " + setup.rank() + " " + type + ": " + before + " wrong before the run");
                    }
                    c.enqueue(count, type, false);
                    if (data.check(count, type, false, seed) != 0) {
                        wrong.add("rank " + setup.rank() + " " + type + ": wrong after the run");
                    }
                    // flip one bit of one element of a peer's slice (element 1500)
                    long at = 1500L * type.bytes();
                    MemorySegment b = arena.allocate(1);
                    setup.backend().copyToHost(b, c.output(), at);
                    b.set(ValueLayout.JAVA_BYTE, 0, (byte) (b.get(ValueLayout.JAVA_BYTE, 0) ^ 0x10));
                    setup.backend().copyFromHost(c.output(), at, b);
                    long after = data.check(count, type, false, seed);
                    if (after != 1) {
                        wrong.add("rank " + setup.rank() + " " + type + ": " + after + " wrong after corrupting one");
                    }
                    Blocking.done(setup.bootstrap().barrier(TIMEOUT), TIMEOUT, setup.rank(), "next type");
                }
            }
        });
        assertEquals(List.of(), List.copyOf(wrong));
    }

    @Test
    @Timeout(60)
    void refusesRunsThatDoNotFit() throws Exception {
        onRanks(2, setup -> {
            try (Collective c = new HostPortCollective(setup, CollectiveKind.ALLTOALL);
                 CollectiveData data = CollectiveData.create(c, setup)) {
                JmscclppException tooBig = assertThrows(JmscclppException.class,
                        () -> c.enqueue(MAX_SIZE / 4, DataType.FLOAT32, false));
                assertEquals(ErrorCode.INVALID_USAGE, tooBig.code());
                JmscclppException inPlace = assertThrows(JmscclppException.class,
                        () -> c.enqueue(8, DataType.FLOAT32, true));
                assertEquals(ErrorCode.INVALID_USAGE, inPlace.code());
                assertEquals(ErrorCode.INVALID_USAGE, assertThrows(JmscclppException.class,
                        () -> data.prepare(8, DataType.INT32, true, 1)).code());
                assertEquals(ErrorCode.INVALID_USAGE, assertThrows(JmscclppException.class,
                        () -> data.prepare(MAX_SIZE, DataType.INT32, false, 1)).code());
                Blocking.done(setup.bootstrap().barrier(TIMEOUT), TIMEOUT, setup.rank(), "test end");
            }
        });
    }
}
