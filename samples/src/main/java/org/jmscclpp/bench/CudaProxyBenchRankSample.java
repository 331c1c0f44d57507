package org.jmscclpp.bench;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
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
import org.jmscclpp.core.channel.MemoryChannel;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.metrics.JmscclppMetrics;
import org.jmscclpp.core.metrics.ProxyMetrics;
import org.jmscclpp.core.proxy.Fifo;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.proxy.ProxyService.Poller;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.HotBindingsProbe;
import org.jmscclpp.cuda.kernel.DeviceKernels;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;
import org.jmscclpp.samples.Blocking;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Sample;
import reactor.core.publisher.Mono;

/**
 * {@code bench-proxy-cuda-rank --iters N --warmup N --bw-iters N --bw-mib N --calls N}: one of the
 * two ranks of {@code jmscclpp bench proxy --backend cuda}, each on its own GPU
 * ({@link CudaBackend#open()}: the rank's local GPU), connected over {@code CUDA_IPC}. In order,
 * with a barrier before every kernel launch so that both ranks' kernels start together:
 * <ol>
 *   <li>rank 0 alone: <b>FIFO push→poll</b> (MSCCL++'s FifoTest): {@code fifoPushTimed} pushes
 *       {@code iters} triggers into a fresh {@link Fifo} of {@value #FIFO_CAPACITY} while this
 *       thread polls, checks and pops each; the kernel's own timer over {@code iters}, and this
 *       thread's wall clock from the launch to the last pop over {@code iters}. After an untimed
 *       run of {@code warmup} triggers on another fifo;</li>
 *   <li>rank 0 alone: the <b>hot bindings</b>' cost per call ({@link HotBindingsProbe});</li>
 *   <li><b>d2d semaphore</b>: {@code d2dPingPong} over a {@link MemoryDevice2DeviceSemaphore},
 *       one-way = elapsed / (2 iters);</li>
 *   <li><b>LL8 and LL16</b> packets of {@value #LL_INTS} ints (4 KiB) over a {@link MemoryChannel}
 *       ({@code llPingPong8}, {@code llPingPong16}, 1024 threads): one-way = elapsed / iters, every
 *       element checked by the kernel;</li>
 *   <li>for each {@link Poller}: a {@link ProxyService} with that poller and a {@link PortChannel}
 *       between the ranks' {@code bw-mib} MiB buffers: the <b>round trip</b> of
 *       {@code portPingPongPerf} (1 int putWithSignal + flush + wait), elapsed / iters, and the
 *       <b>bandwidth</b> of {@code portBandwidth} (both directions at once, {@code bw-iters} puts of
 *       the whole buffer each way after 2 untimed ones), bytes * iters / elapsed per direction.</li>
 * </ol>
 * Rank 0 prints one line per result on stdout, for {@link CudaProxyBench} to parse:
 * <pre>
 * CUDA metric=port_rtt_us variant=PLATFORM_THREAD iters=10000 value=17.1234
 * CUDA-HOT call=cuEventQuery calls=100000 ns=512.34
 * </pre>
 * Kernels are timed by {@code %globaltimer} on the GPU; every launch has a deadline of
 * {@link #KERNEL_TIMEOUT}, every step of the setup one of {@link #TIMEOUT}.
 */
public final class CudaProxyBenchRankSample implements Sample {

    private static final System.Logger LOG = System.getLogger(CudaProxyBenchRankSample.class.getName());

    /** Idle spin of the platform-thread poller in this bench. */
    static final java.time.Duration PLATFORM_IDLE_SPIN = java.time.Duration.ofMillis(1);
    /** The library's idle spin (20 µs unless -Djmscclpp.waitSpinMicros says otherwise), kept for the virtual-thread poller. */
    static final java.time.Duration DEFAULT_IDLE_SPIN = java.time.Duration.ofNanos(Waiting.SPIN_NANOS);

    /** The name the command line registers this rank sample under. */
    public static final String NAME = "bench-proxy-cuda-rank";

    static final String FIFO_US = "fifo_us";
    static final String D2D_US = "d2d_us";
    static final String PORT_RTT_US = "port_rtt_us";
    static final String PORT_BW_GBPS = "port_bw_gbps";
    static final String LL8_US = "ll8_us";
    static final String LL16_US = "ll16_us";
    /** Variants of {@link #FIFO_US}: the kernel's timer, the polling thread's wall clock. */
    static final String KERNEL = "kernel";
    static final String WALL = "wall";
    /** Variant of the metrics that have one. */
    static final String NONE = "-";

    static final int FIFO_CAPACITY = 512;
    static final int LL_INTS = 1024;
    static final int LL_THREADS = 1024;
    /** Untimed bandwidth puts before the timed ones. */
    static final int BW_WARMUP = 2;

    static final Duration TIMEOUT = Duration.ofSeconds(60);
    static final Duration KERNEL_TIMEOUT = Duration.ofSeconds(120);
    private static final int BUFFER_TAG = 1;
    private static final TransportFlags IPC = TransportFlags.of(Transport.CUDA_IPC);

    /** The line a result is printed as. */
    static String line(String metric, String variant, long iters, double value) {
        return String.format(Locale.ROOT, "CUDA metric=%s variant=%s iters=%d value=%.4f", metric, variant, iters,
                value);
    }

    /**
     * The line of what rank 0's proxy loop spent per trigger during the timed round trips of one
     * poller: {@code ProxyMetrics.handleNanos()} over {@code triggers()}, both as differences.
     */
    static String loopLine(String poller, long triggers, double nsPerTrigger) {
        return String.format(Locale.ROOT, "CUDA-LOOP poller=%s triggers=%d ns=%.2f", poller, triggers, nsPerTrigger);
    }

    /** The line a hot binding's cost is printed as. */
    static String hotLine(String call, long calls, double ns) {
        return String.format(Locale.ROOT, "CUDA-HOT call=%s calls=%d ns=%.2f", call, calls, ns);
    }

    @Override
    public Object options() {
        return new CudaProxyBench.Args();
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        CudaProxyBench.Options o = BenchArgs.parseForRank(NAME, args, CudaProxyBench::parse);
        BenchArgs.requireRanks(NAME, env, 2);
        int rank = env.rank();
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        try (TcpBootstrap bs = TcpBootstrap.create(rank, 2, options)) {
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            try (CudaBackend backend = CudaBackend.open(); Communicator comm = Communicator.create(bs, backend)) {
                LOG.log(Level.INFO, "rank {0}: on {1}", rank, backend);
                new Measure(bs, comm, backend, o).run();
                // nobody unmaps while the peer may still use its mappings
                Blocking.done(bs.barrier(TIMEOUT), TIMEOUT.plusSeconds(5), rank, "final barrier");
            }
        }
        return ExitCodes.OK;
    }

    /** The measurements of one rank. */
    private static final class Measure {
        private final TcpBootstrap bs;
        private final Communicator comm;
        private final CudaBackend backend;
        private final CudaProxyBench.Options o;
        private final int rank;
        private final int peer;

        Measure(TcpBootstrap bs, Communicator comm, CudaBackend backend, CudaProxyBench.Options o) {
            this.bs = bs;
            this.comm = comm;
            this.backend = backend;
            this.o = o;
            this.rank = bs.rank();
            this.peer = 1 - rank;
        }

        void run() {
            Connection connection = Blocking.value(comm.connect(peer, 0, EndpointConfig.of(Transport.CUDA_IPC)),
                    TIMEOUT, rank, "connect");
            if (rank == 0) {
                fifo();
                Map<String, Double> hot = HotBindingsProbe.measure(backend, o.calls());
                hot.forEach((call, ns) -> say(hotLine(call, o.calls(), ns)));
            }
            barrier("after the rank-0 measurements");
            d2d(connection);
            packets(connection);
            ports(connection);
        }

        /** fifoPushTimed with this thread polling: a warm-up run, then the timed one. */
        private void fifo() {
            Kernel push = DeviceKernels.load(backend, "fifo").function("fifoPushTimed");
            if (o.warmup() > 0) {
                pushAndPoll(push, o.warmup());
            }
            long[] ns = pushAndPoll(push, o.iters());
            say(line(FIFO_US, KERNEL, o.iters(), ns[0] / 1e3 / o.iters()));
            say(line(FIFO_US, WALL, o.iters(), ns[1] / 1e3 / o.iters()));
        }

        /** Returns the kernel's nanoseconds and this thread's, from the launch to the last pop. */
        private long[] pushAndPoll(Kernel push, int n) {
            try (Fifo fifo = Fifo.create(backend, FIFO_CAPACITY); DeviceBuffer elapsed = backend.allocate(8)) {
                long[] trigger = new long[2];
                boolean[] polled = new boolean[1];
                long start = System.nanoTime();
                long deadline = start + KERNEL_TIMEOUT.toNanos();
                CompletableFuture<Void> kernel = push.run(LaunchConfig.of(1, 1), KernelArgs.builder()
                        .handle(Fifo.DEVICE_HANDLE_BYTES, fifo::encodeDeviceHandle).i64(n).pointer(elapsed.address())
                        .build(), KERNEL_TIMEOUT).toFuture();
                for (int i = 0; i < n; i++) {
                    // a kernel that failed pushes no more: stop waiting for it
                    Waiting.await(() -> (polled[0] = fifo.poll(trigger)) || kernel.isDone(), deadline);
                    if (!polled[0]) {
                        if (kernel.isDone()) {
                            Blocking.done(Mono.fromFuture(kernel), KERNEL_TIMEOUT, rank, "fifoPushTimed");
                        }
                        throw failure(ErrorCode.TIMEOUT, "fifo", "no trigger at position " + i + " of " + n
                                + (kernel.isDone() ? ": the kernel ended" : " within " + KERNEL_TIMEOUT.toSeconds()
                                + " s"));
                    }
                    if (trigger[0] != i || trigger[1] != i) {
                        throw failure(ErrorCode.INTERNAL_ERROR, "fifo", "trigger " + i + " reads (" + trigger[0]
                                + ", " + trigger[1] + ")");
                    }
                    fifo.pop();
                }
                long wall = System.nanoTime() - start;
                Blocking.done(Mono.fromFuture(kernel), KERNEL_TIMEOUT.plusSeconds(5), rank, "fifoPushTimed");
                return new long[] {readElapsed(elapsed, "fifoPushTimed"), wall};
            }
        }

        /** d2dPingPong: a warm-up launch, then the timed one. */
        private void d2d(Connection connection) {
            Kernel pingPong = DeviceKernels.load(backend, "semaphores").function("d2dPingPong");
            try (MemoryDevice2DeviceSemaphore semaphore = Blocking.value(
                    MemoryDevice2DeviceSemaphore.build(comm, connection), TIMEOUT, rank, "d2d semaphore");
                 DeviceBuffer elapsed = backend.allocate(8)) {
                for (int iters : runs(o.warmup(), o.iters())) {
                    launch(pingPong, LaunchConfig.of(1, 1), KernelArgs.builder()
                            .handle(MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES, semaphore.deviceHandle()::encode)
                            .i32(rank).i32(iters).pointer(elapsed.address()).build());
                }
                if (rank == 0) {
                    // the kernel times iters round trips: two one-way signals each
                    say(line(D2D_US, NONE, o.iters(), readElapsed(elapsed, "d2dPingPong") / 1e3 / (2.0 * o.iters())));
                }
                barrier("d2d semaphore done");
            }
        }

        /** llPingPong8 and llPingPong16 of 4 KiB: a warm-up launch each, then the timed one. */
        private void packets(Connection connection) {
            long bytes = (long) LL_INTS * Integer.BYTES;
            try (DeviceBuffer buf = backend.allocate(bytes); DeviceBuffer packets = backend.allocate(2 * bytes);
                 DeviceBuffer errors = backend.allocate(4); DeviceBuffer elapsed = backend.allocate(8);
                 RegisteredMemory src = comm.registerMemory(buf, IPC);
                 RegisteredMemory exposed = comm.registerMemory(packets, IPC)) {
                MemoryChannel channel = Blocking.value(MemoryChannel.build(comm, connection, exposed, src, exposed),
                        TIMEOUT, rank, "memory channel");
                for (String name : List.of("llPingPong8", "llPingPong16")) {
                    Kernel kernel = DeviceKernels.load(backend, "memory_channel").function(name);
                    for (int iters : runs(o.warmup(), o.iters())) {
                        launch(kernel, LaunchConfig.of(1, LL_THREADS), KernelArgs.builder()
                                .handle(MemoryChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle)
                                .pointer(buf.address()).i32(LL_INTS).i32(rank).i32(iters).pointer(errors.address())
                                .pointer(elapsed.address()).build());
                    }
                    int wrong = readInt(errors);
                    if (wrong != 0) {
                        throw failure(ErrorCode.INTERNAL_ERROR, name, wrong + " wrong elements");
                    }
                    if (rank == 0) {
                        say(line(name.endsWith("8") ? LL8_US : LL16_US, NONE, o.iters(),
                                readElapsed(elapsed, name) / 1e3 / o.iters()));
                    }
                }
                barrier("packets done");
            }
        }

        /** The PortChannel round trip and bandwidth with each poller, one proxy service at a time. */
        private void ports(Connection connection) {
            long bytes = (long) o.bwMib() << 20;
            try (DeviceBuffer buf = backend.allocate(bytes); DeviceBuffer elapsed = backend.allocate(8);
                 RegisteredMemory local = comm.registerMemory(buf, IPC)) {
                RegisteredMemory remote = Blocking.value(comm.recvMemory(peer, BUFFER_TAG)
                        .zipWith(comm.sendMemory(local, peer, BUFFER_TAG).thenReturn(0), (m, x) -> m), TIMEOUT, rank,
                        "exchange buffers");
                Kernel perf = DeviceKernels.load(backend, "port_channel").function("portPingPongPerf");
                Kernel bandwidth = DeviceKernels.load(backend, "port_channel").function("portBandwidth");
                for (Poller poller : Poller.values()) {
                    // the platform thread is the proxy's own core, as in MSCCL++: it polls 1 ms before parking
                    ProxyService proxy = ProxyService.builder(backend).poller(poller)
                            .idleSpin(poller == Poller.PLATFORM_THREAD ? PLATFORM_IDLE_SPIN : DEFAULT_IDLE_SPIN).build();
                    try {
                        SemaphoreId sid = Blocking.value(proxy.buildAndAddSemaphore(comm, connection), TIMEOUT, rank,
                                "proxy semaphore");
                        MemoryId dst = proxy.addMemory(remote);
                        MemoryId src = proxy.addMemory(local);
                        PortChannel channel = proxy.portChannel(sid, dst, src);
                        proxy.start();
                        ProxyMetrics loop = JmscclppMetrics.proxies().stream()
                                .filter(m -> m.name().equals(proxy.name())).findFirst().orElse(null);
                        long triggers0 = 0;
                        long handle0 = 0;
                        for (int iters : runs(o.warmup(), o.iters())) {
                            if (loop != null) {
                                triggers0 = loop.triggers();
                                handle0 = loop.handleNanos();
                            }
                            launch(perf, LaunchConfig.of(1, 1), KernelArgs.builder()
                                    .handle(PortChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle)
                                    .i32(rank).i32(iters).pointer(elapsed.address()).build());
                        }
                        if (rank == 0) {
                            say(line(PORT_RTT_US, poller.name(), o.iters(),
                                    readElapsed(elapsed, "portPingPongPerf") / 1e3 / o.iters()));
                            if (loop != null && loop.triggers() > triggers0) {
                                long n = loop.triggers() - triggers0;
                                say(loopLine(poller.name(), n, (double) (loop.handleNanos() - handle0) / n));
                            }
                        }
                        for (int iters : runs(BW_WARMUP, o.bwIters())) {
                            launch(bandwidth, LaunchConfig.of(1, 1), KernelArgs.builder()
                                    .handle(PortChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle)
                                    .i64(bytes).i32(iters).pointer(elapsed.address()).build());
                        }
                        if (rank == 0) {
                            // bytes per nanosecond are GB/s; each rank's kernel moves its own direction
                            say(line(PORT_BW_GBPS, poller.name(), o.bwIters(),
                                    (double) bytes * o.bwIters() / readElapsed(elapsed, "portBandwidth")));
                        }
                        barrier("port channel done (" + poller + ")");
                        Blocking.done(proxy.stop(), TIMEOUT, rank, "proxy stop");
                    } finally {
                        proxy.close();
                    }
                }
            }
        }

        /** The iteration counts of the launches: the warm-up one (when any), then the timed one. */
        private static List<Integer> runs(int warmup, int iters) {
            return warmup > 0 ? List.of(warmup, iters) : List.of(iters);
        }

        /** Both ranks launch together after a barrier; the launch has a deadline. */
        private void launch(Kernel kernel, LaunchConfig config, KernelArgs args) {
            barrier("before " + kernel.name());
            Blocking.done(kernel.run(config, args, KERNEL_TIMEOUT), KERNEL_TIMEOUT.plusSeconds(5), rank,
                    kernel.name());
        }

        private void barrier(String phase) {
            Blocking.done(bs.barrier(TIMEOUT), TIMEOUT.plusSeconds(5), rank, phase);
        }

        private long readElapsed(DeviceBuffer elapsed, String kernel) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment host = arena.allocate(8, 8);
                backend.copyToHost(host, elapsed, 0);
                long ns = host.get(ValueLayout.JAVA_LONG, 0);
                if (ns <= 0) {
                    throw failure(ErrorCode.INTERNAL_ERROR, kernel, "the kernel's timer reads " + ns + " ns");
                }
                return ns;
            }
        }

        private int readInt(DeviceBuffer buffer) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment host = arena.allocate(4, 4);
                backend.copyToHost(host, buffer, 0);
                return host.get(ValueLayout.JAVA_INT, 0);
            }
        }

        private JmscclppException failure(ErrorCode code, String phase, String detail) {
            return JmscclppException.builder(code, detail).rank(rank).peer(peer).phase(phase).build();
        }

        private static void say(String line) {
            System.out.println(line);
            System.out.flush();
        }
    }
}
