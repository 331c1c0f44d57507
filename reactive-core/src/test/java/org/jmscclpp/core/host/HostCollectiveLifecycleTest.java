package org.jmscclpp.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.function.Tuple2;

/**
 * The host engine's collective communicator as a Reactor user drives its lifetime: closed from a
 * call's own callbacks, as the README's example does, it leaves no thread behind.
 */
class HostCollectiveLifecycleTest {

    static final Duration LIMIT = Duration.ofSeconds(30);
    private static final Pattern WORKER = Pattern.compile("\"name\"\\s*:\\s*\"jmscclpp-collective-r\\d+\"");

    @TempDir
    Path dumps;

    private int dumpsTaken;

    /**
     * {@code coll.allReduce(...).doFinally(s -> coll.close())} (the README's pattern) closes the collective
     * communicator on its own worker, from the call's completion: the worker must still end.
     */
    @Test
    void closeFromACallsDoFinallyLeavesNoWorkerThread() throws IOException {
        int before = workers();
        int cycles = 3;
        for (int i = 0; i < cycles; i++) {
            try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
                List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(64), job.backends.get(1).allocate(64));
                for (int r = 0; r < 2; r++) {
                    bufs.get(r).hostSegment().set(ValueLayout.JAVA_INT, 0, r + 1);
                }
                job.all(r -> {
                    CollectiveComm c = job.comms.get(r);
                    return c.allReduce(bufs.get(r), bufs.get(r), 1, DataType.INT32, ReduceOp.SUM)
                            .doFinally(s -> c.close());
                });
                assertEquals(3, bufs.get(0).hostSegment().get(ValueLayout.JAVA_INT, 0));
            }
        }
        int after = awaitWorkersAtMost(before, Duration.ofSeconds(10));
        assertTrue(after <= before, after + " collective worker threads alive after " + cycles
                + " communicators of 2 ranks were closed from a call's doFinally, " + before + " before");
    }

    /**
     * Two collective communicators of different tags over one communicator (the Javadoc's way to have two),
     * set up with one {@code Mono.zip} on every rank (the same subscription order everywhere), then used with
     * {@code Mono.zip} of a call on each: both set up and both calls complete with the right sums, every time.
     */
    @Test
    void twoCollectiveCommunicatorsOfOneCommunicatorSetUpTogetherWithMonoZip() {
        int n = 2;
        for (int round = 0; round < 20; round++) {
            List<InMemoryBootstrap> bootstraps = InMemoryBootstrap.group(n);
            List<HostBackend> backends = new ArrayList<>();
            List<Communicator> communicators = new ArrayList<>();
            List<Mono<Tuple2<CollectiveComm, CollectiveComm>>> setups = new ArrayList<>();
            List<CollectiveComm> made = new ArrayList<>();
            try {
                for (int r = 0; r < n; r++) {
                    HostBackend b = HostBackend.open();
                    backends.add(b);
                    Communicator c = Communicator.create(bootstraps.get(r), b);
                    communicators.add(c);
                    setups.add(Mono.zip(CollectiveComm.create(c, CollectiveOptions.defaults().withTag(1)),
                            CollectiveComm.create(c, CollectiveOptions.defaults().withTag(2))));
                }
                List<Tuple2<CollectiveComm, CollectiveComm>> pairs = Flux.mergeSequential(setups).collectList()
                        .block(LIMIT);
                pairs.forEach(t -> made.addAll(List.of(t.getT1(), t.getT2())));
                List<DeviceBuffer> bufs = new ArrayList<>();
                List<Mono<?>> calls = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    DeviceBuffer a = backends.get(r).allocate(4);
                    DeviceBuffer b = backends.get(r).allocate(4);
                    a.hostSegment().set(ValueLayout.JAVA_INT, 0, r + 1);
                    b.hostSegment().set(ValueLayout.JAVA_INT, 0, 10 * (r + 1));
                    bufs.addAll(List.of(a, b));
                    calls.add(Mono.zip(
                            pairs.get(r).getT1().allReduce(a, a, 1, DataType.INT32, ReduceOp.SUM).thenReturn(1),
                            pairs.get(r).getT2().allReduce(b, b, 1, DataType.INT32, ReduceOp.SUM).thenReturn(2)));
                }
                Mono.when(calls).block(LIMIT);
                for (int r = 0; r < n; r++) {
                    assertEquals(3, bufs.get(2 * r).hostSegment().get(ValueLayout.JAVA_INT, 0), "round " + round);
                    assertEquals(30, bufs.get(2 * r + 1).hostSegment().get(ValueLayout.JAVA_INT, 0), "round " + round);
                }
            } finally {
                made.forEach(CollectiveComm::close);
                communicators.forEach(Communicator::close);
                bootstraps.forEach(InMemoryBootstrap::close);
                backends.forEach(HostBackend::close);
            }
        }
    }

    /** Waits (at most {@code within}) until no more than {@code limit} collective workers are alive; returns how many are. */
    private int awaitWorkersAtMost(int limit, Duration within) throws IOException {
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            int alive = workers();
            if (alive <= limit || System.nanoTime() > deadline) {
                return alive;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    /** Live virtual collective workers ({@code jmscclpp-collective-rN}), from a JSON thread dump. */
    private int workers() throws IOException {
        Path dump = dumps.resolve("threads-" + dumpsTaken++ + ".json");
        ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                .dumpThreads(dump.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.JSON);
        Matcher m = WORKER.matcher(Files.readString(dump));
        int alive = 0;
        while (m.find()) {
            alive++;
        }
        return alive;
    }
}
