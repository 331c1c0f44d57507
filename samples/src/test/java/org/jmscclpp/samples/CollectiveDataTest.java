package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The checks of the collective samples and the bench against the library's host engine: every kind,
 * a spread of types, every reduction, in and out of place, registered and staged buffers, on 3
 * ranks in this JVM (InMemoryBootstrap, one host backend over a temporary directory, a thread per
 * rank), through {@link CollectiveJob#checkedRun}: a correct collective passes every check; a run
 * that writes nothing leaves every output element wrong (no expected value is the poison); one
 * corrupted element is counted once.
 */
class CollectiveDataTest {

    static final Duration TIMEOUT = Duration.ofSeconds(30);
    static final int RANKS = 3;
    /** One element, a tail, and more than a 1 MiB chunk of the Java checks for 1-byte types. */
    static final long[] COUNTS = {1, 1531, (1 << 20) + 17};
    static final List<DataType> TYPES = List.of(DataType.INT8, DataType.UINT32, DataType.INT64, DataType.FLOAT16,
            DataType.BFLOAT16, DataType.FLOAT32, DataType.FLOAT64, DataType.FP8_E4M3, DataType.FP8_E5M2);

    @TempDir
    Path shm;

    static Stream<Arguments> kinds() {
        return CollectiveSample.KINDS.stream().map(Arguments::of);
    }

    /** One rank's body: its job and its data. */
    interface RankBody {
        void run(CollectiveJob job, CollectiveData data) throws Exception;
    }

    /** The ranks of one job in this JVM, each running {@code body} on a thread of its own. */
    private void onRanks(int n, RankBody body) throws Exception {
        try (HostBackend backend = HostBackend.open(shm)) {
            List<InMemoryBootstrap> bootstraps = InMemoryBootstrap.group(n);
            List<Communicator> comms = new ArrayList<>();
            bootstraps.forEach(b -> comms.add(Communicator.create(b, backend)));
            ExecutorService threads = Executors.newFixedThreadPool(n);
            try {
                List<Future<?>> ranks = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    Communicator comm = comms.get(r);
                    ranks.add(threads.submit(() -> {
                        try (CollectiveJob job = CollectiveJob.open(comm, CollectiveKind.ALL_REDUCE, null, TIMEOUT);
                             CollectiveData data = CollectiveData.create(backend, null, comm.rank(), TIMEOUT)) {
                            body.run(job, data);
                            job.barrier("test end");
                        }
                        return null;
                    }));
                }
                for (Future<?> f : ranks) {
                    f.get(240, TimeUnit.SECONDS);
                }
            } finally {
                threads.shutdownNow();
                assertTrue(threads.awaitTermination(30, TimeUnit.SECONDS), "rank threads ended");
                comms.forEach(Communicator::close);
                bootstraps.forEach(InMemoryBootstrap::close);
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("kinds")
    @Timeout(250)
    void everyElementOfEveryRunIsRight(CollectiveKind kind) throws Exception {
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Integer> runs = new ConcurrentLinkedQueue<>();
        long bytes = RANKS * COUNTS[COUNTS.length - 1] * 8;
        onRanks(RANKS, (job, data) -> {
            int rank = job.rank();
            try (CollectiveBuffers registered = CollectiveBuffers.allocate(job.backend(), bytes);
                 CollectiveBuffers staged = CollectiveBuffers.hostMemory(bytes)) {
                Blocking.done(registered.register(job.comm()), TIMEOUT, rank, "register");
                int done = 0;
                for (DataType type : TYPES) {
                    for (ReduceOp op : kind.reduces() ? ReduceOp.values() : new ReduceOp[] {null}) {
                        for (long count : COUNTS) {
                            // the large count once per type, in place: the Java checks' chunks
                            if (count == COUNTS[COUNTS.length - 1] && (type.bytes() != 1 || op == ReduceOp.PROD
                                    || op == ReduceOp.MIN)) {
                                continue;
                            }
                            for (boolean inPlace : CollectiveRun.hasInPlace(kind) ? new boolean[] {false, true}
                                    : new boolean[] {false}) {
                                CollectiveRun run = new CollectiveRun(kind, type, op, kind.rooted() ? RANKS - 1 : -1,
                                        RANKS, count, inPlace);
                                CollectiveBuffers buffers = done % 2 == 0 ? registered : staged;
                                long bad = job.checkedRun(run, buffers, data, () -> Blocking.done(
                                        buffers.issue(job.comm(), run, rank), TIMEOUT, rank, run.describe()));
                                if (bad != 0) {
                                    wrong.add(String.format(Locale.ROOT, "rank %d: %s on %s buffers: %d wrong", rank,
                                            run.describe(), buffers == registered ? "registered" : "staged", bad));
                                }
                                done++;
                            }
                        }
                    }
                }
                runs.add(done);
                job.barrier("runs done");
            }
        });
        assertEquals(List.of(), List.copyOf(wrong));
        assertEquals(RANKS, runs.size());
    }

    /** A check sees every element: all of them poisoned when nothing ran, exactly one after one is corrupted. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("kinds")
    @Timeout(120)
    void theChecksCountEveryElementThatIsNotTheResult(CollectiveKind kind) throws Exception {
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        onRanks(RANKS, (job, data) -> {
            int rank = job.rank();
            try (CollectiveBuffers buffers = CollectiveBuffers.allocate(job.backend(), 1 << 16)) {
                for (DataType type : DataType.values()) {
                    for (ReduceOp op : kind.reduces() ? ReduceOp.values() : new ReduceOp[] {null}) {
                        CollectiveRun run = new CollectiveRun(kind, type, op, kind.rooted() ? 1 : -1, RANKS, 333,
                                false);
                        boolean output = run.writesRecv(rank);
                        long unwritten = job.checkedRun(run, buffers, data, () -> { });
                        if (unwritten != (output ? run.recvElements() : 0)) {
                            wrong.add("rank " + rank + " " + run.describe() + ": " + unwritten + " wrong without a run");
                        }
                        long right = job.checkedRun(run, buffers, data, () -> Blocking.done(buffers.issue(job.comm(),
                                run, rank), TIMEOUT, rank, run.describe()));
                        if (right != 0) {
                            wrong.add("rank " + rank + " " + run.describe() + ": " + right + " wrong after the run");
                        }
                        long seed = 42;
                        job.barrier("checked");
                        data.prepare(run, buffers, seed);
                        job.barrier("prepared again");
                        Blocking.done(buffers.issue(job.comm(), run, rank), TIMEOUT, rank, run.describe());
                        if (output) {
                            // flip one bit of one element in the middle
                            MemorySegment out = buffers.recvOf(run, rank).hostSegment();
                            long at = run.recvElements() / 2 * type.bytes();
                            out.set(ValueLayout.JAVA_BYTE, at, (byte) (out.get(ValueLayout.JAVA_BYTE, at) ^ 0x10));
                            long one = data.check(run, buffers, seed);
                            if (one != 1) {
                                wrong.add("rank " + rank + " " + run.describe() + ": " + one + " wrong after"
                                        + " corrupting one");
                            }
                        }
                    }
                }
                job.barrier("runs done");
            }
        });
        assertEquals(List.of(), List.copyOf(wrong));
    }

    @Test
    @Timeout(60)
    void runsThatDoNotFitAreRefused() throws Exception {
        onRanks(2, (job, data) -> {
            try (CollectiveBuffers buffers = CollectiveBuffers.allocate(job.backend(), 4096)) {
                CollectiveRun big = new CollectiveRun(CollectiveKind.ALL_TO_ALL, DataType.FLOAT32, null, -1, 2, 1024,
                        false);
                JmscclppException e = assertThrows(JmscclppException.class, () -> data.prepare(big, buffers, 1));
                assertEquals(ErrorCode.INVALID_USAGE, e.code());
                assertThrows(JmscclppException.class, () -> new CollectiveRun(CollectiveKind.SEND, DataType.FLOAT32,
                        null, -1, 2, 8, true));
                assertThrows(JmscclppException.class, () -> new CollectiveRun(CollectiveKind.ALL_REDUCE,
                        DataType.FLOAT32, null, -1, 2, 8, false));
                assertThrows(JmscclppException.class, () -> new CollectiveRun(CollectiveKind.BROADCAST,
                        DataType.FLOAT32, null, 2, 2, 8, false));
            }
        });
    }
}
