package org.jmscclpp.bench;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.proxy.Fifo;
import org.jmscclpp.core.proxy.FifoProducer;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.proxy.ProxyService.Poller;
import org.jmscclpp.core.proxy.ProxyTrigger;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.samples.Blocking;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Sample;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.publisher.Mono;

/**
 * {@code bench-proxy-rank --iters N --warmup N --triggers N --rounds N --threads N}: one of the two
 * ranks of {@code jmscclpp bench proxy}. Each rank registers a host-backend buffer of
 * {@value #MAX_INTS} ints with {@code HOST_IPC}, connects to the other and maps its buffer. Then,
 * for each {@link Poller} in turn, both ranks build a {@link ProxyService} with that poller (a
 * semaphore over the connection, the peer's buffer as destination memory, their own as source, a
 * {@link PortChannel}), start it and measure:
 * <ol>
 *   <li><b>trigger cost</b>, MSCCL++'s FifoTest method with the producer in another process: rank
 *       0 registers its service's fifo ({@link ProxyService#fifoBuffer()}) for HOST_IPC and sends
 *       it with the ids of its semaphore and memories; rank 1 maps it and pushes, through a
 *       {@link FifoProducer} over the mapping, {@code triggers} DATA triggers of 0 bytes (rank 0's
 *       loop handles each as a zero-length HOST_IPC write: the id lookups and range checks, no
 *       bytes), syncing on the last position once a lap as FifoTest does, and syncing on the last
 *       one at the end. One round is the time from the first push to that sync over
 *       {@code triggers}; after an untimed round, the median of {@code rounds} rounds;</li>
 *   <li><b>trigger rate</b> with 1 to {@code threads} producer threads in rank 1, each with its own
 *       producer over the mapping, pushing {@code triggers / T} of the same triggers without a
 *       sync until its last: triggers over the time from the start signal until every thread's
 *       last trigger was consumed; median of {@code rounds} rounds;</li>
 *   <li><b>busy proxy CPU</b>: the CPU time of rank 0's proxy threads (ThreadMXBean: the platform
 *       poller's thread, or the virtual-thread scheduler's threads) and of its process
 *       over the whole of the two measurements above, in cores: what a proxy that has triggers to
 *       handle all the time takes of the host;</li>
 *   <li><b>ping-pong</b>, MSCCL++'s PingPongPerf for 1, 1K, 1M and 4M ints: rank 0 stamps its
 *       buffer, {@code putWithSignal}s the ints, {@code flush}es and {@code wait}s; rank 1 waits,
 *       checks the stamp, stamps, puts back with a signal and flushes. The stamp is the round's
 *       value in the first and the last int, and each side checks it, so a missing or stale copy
 *       fails the run. Rank 0 times every round trip; the median of {@link #itersFor} after
 *       {@link #warmupFor} untimed ones.</li>
 * </ol>
 * Every result is one line on stdout, for {@link ProxyBench} to parse:
 * <pre>
 * PROXY poller=VIRTUAL_THREAD metric=trigger_us param=1 iters=500000 value=0.8123
 * PROXY poller=VIRTUAL_THREAD metric=rate_mps param=3 iters=500000 value=1.2345
 * PROXY poller=PLATFORM_THREAD metric=pingpong_us param=1024 iters=20000 value=12.3456
 * PROXY poller=PLATFORM_THREAD metric=busy_cores param=0 iters=2500000 value=0.9876
 * PROXY poller=PLATFORM_THREAD metric=busy_process_cores param=0 iters=2500000 value=1.0432
 * </pre>
 * ({@code param}: producer threads for the trigger metrics, ints for the ping-pong, 0 for the busy
 * CPU; {@code iters}: triggers or round trips timed in all, every trigger pushed for the busy CPU.) A wrong stamp or a failed step ends the rank with an error.
 */
public final class ProxyBenchRankSample implements Sample {

    /** The name the command line registers this rank sample under. */
    public static final String NAME = "bench-proxy-rank";

    /** The ping-pong sizes in ints: MSCCL++'s PingPong sizes. */
    static final List<Integer> SIZES = List.of(1, 1 << 10, 1 << 20, 4 << 20);
    static final int MAX_INTS = 4 << 20;
    /** Bytes the timed round trips of one size move, both directions together, at most. */
    static final long BUDGET = 1L << 30;
    /** Timed round trips of a size, at least, whatever the budget says. */
    static final int MIN_ITERS = 5;

    static final String TRIGGER_US = "trigger_us";
    static final String RATE_MPS = "rate_mps";
    /**
     * The CPU of rank 0's proxy threads ({@link CpuTime#proxyThreads}), in cores, while rank 1 pushed every trigger of the trigger and rate measurements.
     */
    static final String BUSY_CORES = "busy_cores";
    /** The same for rank 0's whole process (every thread of its JVM). */
    static final String BUSY_PROCESS_CORES = "busy_process_cores";
    static final String PINGPONG_US = "pingpong_us";

    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int TAG = 0x5058;   // "PX": bootstrap tag of the fifo's ids
    private static final int PARENT_BASE = 0x10000000;
    private static final int CHILD_BASE = 0x20000000;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;

    record Options(int iters, int warmup, int triggers, int rounds, int threads) {
    }

    /** Timed round trips of {@code ints} ints: {@code iters}, fewer where they would move more than {@link #BUDGET}. */
    /** The triggers rank 1 pushes in the trigger and rate measurements (the window of {@link #BUSY_CORES}). */
    static long busyTriggers(Options o) {
        long n = (long) o.triggers() * (1 + o.rounds());
        for (int t = 1; t <= o.threads(); t++) {
            n += (long) (o.triggers() / t) * t * o.rounds();
        }
        return n;
    }

    static int itersFor(int ints, int iters) {
        return (int) Math.max(MIN_ITERS, Math.min(iters, BUDGET / (8L * ints)));
    }

    /** Untimed round trips before them: {@code warmup}, fewer where that would move more than a quarter budget. */
    static int warmupFor(int ints, int warmup) {
        return (int) Math.min(warmup, Math.max(2, BUDGET / 4 / (8L * ints)));
    }

    /** The line a result is printed as. */
    static String line(Poller poller, String metric, int param, long iters, double value) {
        return String.format(Locale.ROOT, "PROXY poller=%s metric=%s param=%d iters=%d value=%.4f", poller, metric,
                param, iters, value);
    }

    @Override
    public int run(RankEnvironment env, List<String> args) throws InterruptedException {
        Options o = BenchArgs.parseForRank(NAME, args, ProxyBenchRankSample::parse);
        BenchArgs.requireRanks(NAME, env, 2);
        int rank = env.rank();
        int peer = 1 - rank;
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        try (HostBackend backend = HostBackend.open();
             TcpBootstrap bs = TcpBootstrap.create(rank, 2, options)) {
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            try (DeviceBuffer buffer = backend.allocate(4L * MAX_INTS);
                 Communicator comm = Communicator.create(bs, backend);
                 RegisteredMemory local = comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC))) {
                Connection connection = Blocking.value(comm.connect(peer, 0, EndpointConfig.of(Transport.HOST_IPC)),
                        TIMEOUT, rank, "connect");
                RegisteredMemory remote = Blocking.value(comm.recvMemory(peer, 0)
                        .zipWith(comm.sendMemory(local, peer, 0).thenReturn(0), (m, x) -> m), TIMEOUT, rank,
                        "exchange buffers");
                for (Poller poller : Poller.values()) {
                    Measure m = new Measure(bs, comm, backend, connection, local, remote, buffer.hostSegment(),
                            poller, o);
                    m.run();
                }
                // nobody unmaps while the peer may still write into its mapping
                Blocking.done(bs.barrier(TIMEOUT), TIMEOUT.plusSeconds(5), rank, "final barrier");
            }
        }
        return ExitCodes.OK;
    }

    /** The measurements with one poller, on both ranks. */
    private record Measure(TcpBootstrap bs, Communicator comm, HostBackend backend, Connection connection,
                           RegisteredMemory local, RegisteredMemory remote, MemorySegment buffer, Poller poller,
                           Options o) {

        void run() throws InterruptedException {
            int rank = bs.rank();
            try (ProxyService proxy = ProxyService.builder(backend).poller(poller).build()) {
                SemaphoreId semaphore = Blocking.value(proxy.buildAndAddSemaphore(comm, connection), TIMEOUT, rank,
                        "semaphore for " + poller);
                MemoryId dst = proxy.addMemory(remote);
                MemoryId src = proxy.addMemory(local);
                PortChannel channel = proxy.portChannel(semaphore, dst, src);
                proxy.start();
                int tag = 1 + poller.ordinal();
                if (rank == 0) {
                    Predicate<String> proxyThreads = CpuTime.proxyThreads(poller);
                    long threadsCpu = CpuTime.threadsNanos(proxyThreads);
                    long cpu = CpuTime.processNanos();
                    long start = System.nanoTime();
                    try (RegisteredMemory fifo = comm.registerMemory(proxy.fifoBuffer(),
                            TransportFlags.of(Transport.HOST_IPC))) {
                        byte[] ids = ByteBuffer.allocate(4 * Integer.BYTES).putInt(semaphore.value())
                                .putInt(dst.value()).putInt(src.value()).putInt(proxy.fifoCapacity()).array();
                        Blocking.done(Mono.when(comm.sendMemory(fifo, 1, tag), bs.send(1, TAG, ids, TIMEOUT)),
                                TIMEOUT, rank, "send the fifo");
                        // rank 1 pushes into this process's fifo meanwhile; the loop consumes
                        Blocking.done(bs.barrier(TIMEOUT.multipliedBy(4)), TIMEOUT.multipliedBy(4), rank,
                                "wait for the producer measurements");
                    }
                    // what a busy proxy takes: its threads, and this process, which did little else meanwhile
                    long wall = System.nanoTime() - start;
                    long triggers = busyTriggers(o);
                    say(line(poller, BUSY_CORES, 0, triggers,
                            CpuTime.cores(CpuTime.threadsNanos(proxyThreads) - threadsCpu, wall)));
                    say(line(poller, BUSY_PROCESS_CORES, 0, triggers, CpuTime.cores(CpuTime.processNanos() - cpu, wall)));
                } else {
                    RegisteredMemory fifo = Blocking.value(comm.recvMemory(0, tag), TIMEOUT, rank, "receive the fifo");
                    ByteBuffer ids = ByteBuffer.wrap(Blocking.value(bs.recv(0, TAG, TIMEOUT), TIMEOUT.plusSeconds(5),
                            rank, "receive the fifo's ids"));
                    int sem = ids.getInt();
                    int dstId = ids.getInt();
                    int srcId = ids.getInt();
                    int capacity = ids.getInt();
                    ProxyTrigger trigger = ProxyTrigger.of(ProxyTrigger.DATA, dstId, 0, srcId, 0, 0, sem);
                    produce(fifo.buffer(), capacity, trigger);
                    Blocking.done(bs.barrier(TIMEOUT.multipliedBy(4)), TIMEOUT.multipliedBy(4), rank,
                            "end the producer measurements");
                }
                pingPong(channel);
                Blocking.done(proxy.stop(), TIMEOUT, rank, "stop the " + poller + " proxy");
            }
        }

        /** Rank 1: the trigger cost, then the rate with 1 to {@code threads} producer threads. */
        private void produce(DeviceBuffer fifo, int capacity, ProxyTrigger trigger) throws InterruptedException {
            FifoProducer producer = Fifo.producer(fifo, capacity);
            int n = o.triggers();
            pushLaps(producer, trigger, n, capacity);   // warm-up
            long[] nanos = new long[o.rounds()];
            for (int r = 0; r < o.rounds(); r++) {
                long t = System.nanoTime();
                pushLaps(producer, trigger, n, capacity);
                nanos[r] = System.nanoTime() - t;
            }
            say(line(poller, TRIGGER_US, 1, (long) n * o.rounds(), BenchStats.median(nanos) / n / 1e3));
            for (int threads = 1; threads <= o.threads(); threads++) {
                int each = n / threads;
                long[] rounds = new long[o.rounds()];
                for (int r = 0; r < o.rounds(); r++) {
                    rounds[r] = pushConcurrently(fifo, capacity, trigger, threads, each);
                }
                // triggers per microsecond of the median round: millions per second
                say(line(poller, RATE_MPS, threads, (long) each * threads * o.rounds(),
                        (double) each * threads / BenchStats.median(rounds) * 1e3));
            }
        }

        /** FifoTest: {@code n} pushes, a sync on the last position before each new lap, and one at the end. */
        private static void pushLaps(FifoProducer producer, ProxyTrigger trigger, int n, int capacity) {
            long last = -1;
            for (int i = 0; i < n; i++) {
                if (i % capacity == 0 && last >= 0) {
                    producer.sync(last, TIMEOUT);
                }
                last = producer.push(trigger, TIMEOUT);
            }
            producer.sync(last, TIMEOUT);
        }

        /**
         * {@code threads} platform threads, standing in for kernels, each pushing {@code each}
         * triggers through its own producer and syncing on its last; returns the nanoseconds from
         * the start signal until the last thread's sync returned.
         */
        private static long pushConcurrently(DeviceBuffer fifo, int capacity, ProxyTrigger trigger, int threads,
                                             int each) throws InterruptedException {
            CountDownLatch ready = new CountDownLatch(threads);
            CountDownLatch go = new CountDownLatch(1);
            AtomicReference<@Nullable Throwable> failure = new AtomicReference<>();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                FifoProducer producer = Fifo.producer(fifo, capacity);
                workers.add(Thread.ofPlatform().name("bench-producer-" + t).start(() -> {
                    try {
                        ready.countDown();
                        if (!go.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                            throw new IllegalStateException("no start signal within " + TIMEOUT.toSeconds() + " s");
                        }
                        long last = -1;
                        for (int i = 0; i < each; i++) {
                            last = producer.push(trigger, TIMEOUT);
                        }
                        producer.sync(last, TIMEOUT);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            if (!ready.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("the producer threads did not start within " + TIMEOUT.toSeconds() + " s");
            }
            long start = System.nanoTime();
            go.countDown();
            long deadline = start + TIMEOUT.toNanos();
            for (Thread w : workers) {
                if (!w.join(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())))) {
                    throw new IllegalStateException(w.getName() + " still pushes after " + TIMEOUT.toSeconds() + " s");
                }
            }
            long elapsed = System.nanoTime() - start;
            Throwable e = failure.get();
            if (e instanceof JmscclppException je) {
                throw je;
            } else if (e != null) {
                throw new IllegalStateException("a producer thread failed: " + e, e);
            }
            return elapsed;
        }

        /** Both ranks: the round trips of every size; rank 0 times them and prints the medians. */
        private void pingPong(PortChannel channel) {
            int rank = bs.rank();
            long round = 0;
            for (int ints : SIZES) {
                int iters = itersFor(ints, o.iters());
                int warmup = warmupFor(ints, o.warmup());
                long bytes = 4L * ints;
                long[] nanos = new long[iters];
                for (int i = 0; i < warmup + iters; i++) {
                    round++;
                    if (rank == 0) {
                        long t = System.nanoTime();
                        stamp(ints, PARENT_BASE + (int) round);
                        channel.putWithSignal(0, bytes);
                        channel.flush(TIMEOUT);
                        channel.await(TIMEOUT);
                        check(ints, CHILD_BASE + (int) round, round);
                        long d = System.nanoTime() - t;
                        if (i >= warmup) {
                            nanos[i - warmup] = d;
                        }
                    } else {
                        channel.await(TIMEOUT);
                        check(ints, PARENT_BASE + (int) round, round);
                        stamp(ints, CHILD_BASE + (int) round);
                        channel.putWithSignal(0, bytes);
                        channel.flush(TIMEOUT);
                    }
                }
                if (rank == 0) {
                    say(line(poller, PINGPONG_US, ints, iters, BenchStats.median(nanos) / 1e3));
                }
            }
        }

        private void stamp(int ints, int value) {
            buffer.setAtIndex(INT, 0, value);
            buffer.setAtIndex(INT, ints - 1, value);
        }

        private void check(int ints, int value, long round) {
            int first = buffer.getAtIndex(INT, 0);
            int last = buffer.getAtIndex(INT, ints - 1);
            if (first != value || last != value) {
                throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, String.format(Locale.ROOT,
                        "%d ints, round %d: the first and the last int hold %d and %d, the peer stamped %d", ints, round,
                        first, last, value)).rank(bs.rank()).peer(1 - bs.rank()).phase("ping-pong check").build();
            }
        }

        private static void say(String line) {
            System.out.println(line);
            System.out.flush();
        }
    }

    /** The options of {@code jmscclpp bench proxy} (host backend) and of its ranks. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false)
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--iters", paramLabel = "N", description = "timed round trips per size (default: 10000)")
        int iters = 10_000;
        @Option(names = "--warmup", paramLabel = "N", description = "untimed round trips first (default: 2000)")
        int warmup = 2_000;
        @Option(names = "--triggers", paramLabel = "N", description = "triggers per throughput round (default: 100000)")
        int triggers = 100_000;
        @Option(names = "--rounds", paramLabel = "N", description = "throughput rounds (default: 5)")
        int rounds = 5;
        @Option(names = "--threads", paramLabel = "N", description = "the most producer threads (default: 4)")
        int threads = 4;

        @Override
        public void check() {
            SampleArgs.range("--iters", iters, 1, Integer.MAX_VALUE);
            SampleArgs.range("--warmup", warmup, 0, Integer.MAX_VALUE);
            SampleArgs.range("--triggers", triggers, 1, Integer.MAX_VALUE);
            SampleArgs.range("--rounds", rounds, 1, 1000);
            SampleArgs.range("--threads", threads, 1, 64);
            if (triggers < threads) {
                throw new IllegalArgumentException("--triggers (" + triggers + ") must be at least --threads ("
                        + threads + ")");
            }
        }
    }

    static Options parse(List<String> args) {
        Args a = SampleArgs.parse(new Args(), args);
        return new Options(a.iters, a.warmup, a.triggers, a.rounds, a.threads);
    }

    @Override
    public Object options() {
        return new Args();
    }

    /** The arguments that make a rank run with {@code o}. */
    static List<String> args(Options o) {
        return List.of("--iters", Integer.toString(o.iters()), "--warmup", Integer.toString(o.warmup()),
                "--triggers", Integer.toString(o.triggers()), "--rounds", Integer.toString(o.rounds()),
                "--threads", Integer.toString(o.threads()));
    }
}
