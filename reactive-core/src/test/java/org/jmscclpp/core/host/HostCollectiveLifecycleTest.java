package org.jmscclpp.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.testkit.ForwardingBootstrap;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
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

    /**
     * close() while this rank's register() (or deregister()) waits in its exchange with the peers (a collective
     * that the peer makes only later): the step fails with INVALID_USAGE saying the communicator is closed once it
     * ends, and leaves no registration (nor the peer's memory mapped here) behind; it neither completes on a closed
     * communicator nor fails with an untyped exception.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aRegistrationStepThatCloseOvertakesFailsTypedAndLeavesNoRegistration(boolean deregister) throws Exception {
        List<InMemoryBootstrap> group = InMemoryBootstrap.group(2);
        AtomicReference<CompletableFuture<Void>> exchanging = new AtomicReference<>(new CompletableFuture<>());
        Bootstrap watched = new ForwardingBootstrap(group.get(0)) {
            @Override
            public Mono<byte[]> recv(int peer, int tag, Duration timeout) {
                return super.recv(peer, tag, timeout).doOnSubscribe(s -> {
                    if ((tag & 0xFF000000) == 0x4B000000) {   // the registration exchange's tags
                        exchanging.get().complete(null);
                    }
                });
            }
        };
        List<HostBackend> backends = List.of(HostBackend.open(), HostBackend.open());
        List<Communicator> communicators = List.of(Communicator.create(watched, backends.get(0)),
                Communicator.create(group.get(1), backends.get(1)));
        List<CollectiveComm> comms = Flux.mergeSequential(communicators.stream().map(CollectiveComm::create).toList())
                .collectList().block(LIMIT);
        try {
            List<DeviceBuffer> bufs = List.of(backends.get(0).allocate(4096), backends.get(1).allocate(4096));
            if (deregister) {
                Mono.when(comms.get(0).register(bufs.get(0)), comms.get(1).register(bufs.get(1))).block(LIMIT);
                exchanging.set(new CompletableFuture<>());
            }
            CompletableFuture<Void> step0 = (deregister ? comms.get(0).deregister(bufs.get(0))
                    : comms.get(0).register(bufs.get(0))).toFuture();
            exchanging.get().get(LIMIT.toSeconds(), TimeUnit.SECONDS);
            comms.get(0).close();
            // rank 1's part of the exchange: rank 0's message is there already
            (deregister ? comms.get(1).deregister(bufs.get(1)) : comms.get(1).register(bufs.get(1))).block(LIMIT);
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> step0.get(LIMIT.toSeconds(), TimeUnit.SECONDS), "the step completed after close()");
            assertTrue(e.getCause() instanceof JmscclppException j && j.code() == ErrorCode.INVALID_USAGE
                    && j.getMessage().contains("closed"), String.valueOf(e.getCause()));
            assertFalse(comms.get(0).isRegistered(bufs.get(0)), "a registration outlived close()");
        } finally {
            comms.forEach(CollectiveComm::close);
            communicators.forEach(Communicator::close);
            group.forEach(InMemoryBootstrap::close);
            backends.forEach(HostBackend::close);
        }
    }

    /**
     * The same on ranks that span (pretend) hosts, whose hierarchical communicator completes calls on a worker
     * thread of its own: close() from a call's doFinally runs there, and must return at once, not after waiting
     * the communicator's timeout for that worker to end.
     */
    @Test
    void closeFromACallsDoFinallyAcrossHostsReturnsAtOnce() throws Exception {
        CollectiveOptions options = CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(20));
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, options, r -> r)) {
            List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(64), job.backends.get(1).allocate(64));
            for (int r = 0; r < 2; r++) {
                bufs.get(r).hostSegment().set(ValueLayout.JAVA_INT, 0, r + 1);
            }
            List<CompletableFuture<Duration>> closes = List.of(new CompletableFuture<>(), new CompletableFuture<>());
            job.all(r -> {
                CollectiveComm c = job.comms.get(r);
                return c.allReduce(bufs.get(r), bufs.get(r), 1, DataType.INT32, ReduceOp.SUM).doFinally(s -> {
                    long start = System.nanoTime();
                    c.close();
                    closes.get(r).complete(Duration.ofNanos(System.nanoTime() - start));
                });
            });
            assertEquals(3, bufs.get(1).hostSegment().get(ValueLayout.JAVA_INT, 0));
            for (int r = 0; r < 2; r++) {
                Duration took = closes.get(r).get(LIMIT.toSeconds() * 2, TimeUnit.SECONDS);
                assertTrue(took.compareTo(Duration.ofSeconds(10)) < 0, "rank " + r + ": close() in a call's doFinally"
                        + " took " + took + " (it waited for the worker it ran on)");
            }
        }
    }

    /**
     * A setup whose subscriber cancelled it (a {@code timeout} operator, a dispose) while it waited for the peer:
     * once the peer makes its part the setup ends here, and the collective communicator it made, which nobody
     * receives, is closed (its worker thread, scratch and watch), not left running.
     */
    @Test
    void aSetupCancelledWhileItWaitsForThePeerClosesWhatItMade() throws Exception {
        List<InMemoryBootstrap> group = InMemoryBootstrap.group(2);
        CompletableFuture<Void> watching = new CompletableFuture<>();
        CompletableFuture<Void> settingUp = new CompletableFuture<>();
        Bootstrap watched = new ForwardingBootstrap(group.get(0)) {
            @Override
            public Mono<byte[]> allGather(byte[] local, Duration timeout) {
                return super.allGather(local, timeout).doOnSubscribe(s -> settingUp.complete(null));
            }

            @Override
            public Mono<byte[]> recv(int peer, int tag, Duration timeout) {
                return super.recv(peer, tag, timeout).doOnSubscribe(s -> {
                    if ((tag & 0xFF000000) == 0x4C000000) {   // the watch: the last step of a setup
                        watching.complete(null);
                    }
                });
            }
        };
        List<HostBackend> backends = List.of(HostBackend.open(), HostBackend.open());
        List<Communicator> communicators = List.of(Communicator.create(watched, backends.get(0)),
                Communicator.create(group.get(1), backends.get(1)));
        CollectiveComm other = null;
        try {
            int before = workers("jmscclpp-collective-r0");
            reactor.core.Disposable abandoned = CollectiveComm.create(communicators.get(0)).subscribe();
            settingUp.get(LIMIT.toSeconds(), TimeUnit.SECONDS);   // it runs, and waits for rank 1
            abandoned.dispose();
            other = CollectiveComm.create(communicators.get(1)).block(LIMIT);
            watching.get(LIMIT.toSeconds(), TimeUnit.SECONDS);
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            int alive = workers("jmscclpp-collective-r0");
            while (alive > before && System.nanoTime() < deadline) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
                alive = workers("jmscclpp-collective-r0");
            }
            assertTrue(alive <= before, "the cancelled setup's communicator still runs its worker (" + alive
                    + " of rank 0, " + before + " before)");
        } finally {
            if (other != null) {
                other.close();
            }
            communicators.forEach(Communicator::close);
            group.forEach(InMemoryBootstrap::close);
            backends.forEach(HostBackend::close);
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
        return workers(WORKER);
    }

    /** Live threads named {@code name}, from a JSON thread dump. */
    private int workers(String name) throws IOException {
        return workers(Pattern.compile("\"name\"\\s*:\\s*\"" + Pattern.quote(name) + "\""));
    }

    private int workers(Pattern named) throws IOException {
        Path dump = dumps.resolve("threads-" + dumpsTaken++ + ".json");
        ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                .dumpThreads(dump.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.JSON);
        Matcher m = named.matcher(Files.readString(dump));
        int alive = 0;
        while (m.find()) {
            alive++;
        }
        return alive;
    }
}
