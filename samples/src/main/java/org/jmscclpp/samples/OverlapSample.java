package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.Mesh;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code overlap [--backend host|cuda] [--tiles K] [--tile-bytes B] [--passes P] [--iters I]}:
 * overlap of compute and communication on a ring. Every rank computes K tiles of B bytes of floats
 * (element i of tile k starts at {@link #startValue}, then P fused multiply-adds
 * {@code x = fma(x, 0.75, 0.25)}) into its send buffer, and sends tile k to the next rank with
 * {@code putWithSignal} as soon as it is done, while it computes tile k + 1; it receives the
 * previous rank's tiles (one signal each) and checks every element.
 *
 * <p>On the cuda backend one kernel ({@code overlap.cu}) does it: its block 0 pushes the triggers
 * to the rank's {@link ProxyService} as the other blocks finish tiles. On the host backend the
 * calling thread computes and pushes, and the proxy's thread copies over {@code HOST_IPC}.
 *
 * <p>Three phases, each an untimed warm-up run and I timed runs, with a barrier before every run:
 * compute only, communication only (of the tiles computed before), and both overlapped. Rank 0 prints the mean time of each (the
 * slowest rank's) and overlapped / max(compute, comm), which is 1 for a perfect overlap and 2 for
 * none (balanced). The receive buffer is poisoned before every run that communicates and checked
 * after it; exit 0 only if every element of every run on every rank was right.
 */
public final class OverlapSample implements Sample {

    public static final String NAME = "overlap";
    public static final String SYNOPSIS = "[--backend host|cuda] [--tiles 8] [--tile-bytes 1M] [--passes 64] [--iters 5]: "
            + "compute tile k+1 while tile k travels to the next rank by putWithSignal; prints compute-only, "
            + "comm-only and overlapped times";

    static final int MODE_COMPUTE = 1;
    static final int MODE_COMMUNICATE = 2;
    static final float A = 0.75f;
    static final float B = 0.25f;
    static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** The receive buffer's bytes before every run that communicates: a NaN no tile holds. */
    static final byte POISON = (byte) 0xFF;
    /** A trigger's offsets and sizes have 32 bits; the buffers stay below 2 GiB. */
    static final long MAX_BUFFER = 1L << 31;
    private static final int THREADS = 512;
    private static final int MAX_COMPUTE_BLOCKS = 128;

    record Options(String backend, int tiles, long tileBytes, int passes, int iters) {
        long tileElements() {
            return tileBytes / Float.BYTES;
        }

        long bufferBytes() {
            return tiles * tileBytes;
        }
    }

    /** Per-rank result: mean nanoseconds of each phase and the wrong elements seen. */
    record Outcome(long computeNs, long commNs, long overlappedNs, long wrong) {
        static final int BYTES = 4 * Long.BYTES;

        byte[] encode() {
            return ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(computeNs).putLong(commNs)
                    .putLong(overlappedNs).putLong(wrong).array();
        }

        static Outcome decode(byte[] all, int rank) {
            ByteBuffer b = ByteBuffer.wrap(all, rank * BYTES, BYTES).order(ByteOrder.LITTLE_ENDIAN);
            return new Outcome(b.getLong(), b.getLong(), b.getLong(), b.getLong());
        }

        /** The slowest rank's time per phase, the wrong elements of all. */
        static Outcome worst(List<Outcome> all) {
            return new Outcome(all.stream().mapToLong(Outcome::computeNs).max().orElse(0),
                    all.stream().mapToLong(Outcome::commNs).max().orElse(0),
                    all.stream().mapToLong(Outcome::overlappedNs).max().orElse(0),
                    all.stream().mapToLong(Outcome::wrong).sum());
        }

        /** overlapped / max(compute, comm). */
        double ratio() {
            return (double) overlappedNs / Math.max(1, Math.max(computeNs, commNs));
        }
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        Options o = parse(args);
        int rank = env.rank();
        int n = env.worldSize();
        if (n < 2) {
            throw usage("runs on a ring of at least 2 ranks, not " + n);
        }
        try (Backend backend = Backends.named(o.backend())) {
            Transport transport = backend instanceof CudaBackend ? Transport.CUDA_IPC : Transport.HOST_IPC;
            if (!backend.ipcTransports().has(transport)) {
                throw usage("the " + backend.name() + " backend cannot connect and share memory over " + transport);
            }
            BootstrapOptions options = BootstrapOptions.fromEnvironment();
            try (TcpBootstrap bs = TcpBootstrap.create(rank, n, options)) {
                Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank,
                        "initialize");
                if (rank == 0) {
                    System.out.printf(Locale.ROOT, "overlap: %d ranks, %d tiles of %s, %d FMA passes, %d iterations, "
                            + "%s backend%n", n, o.tiles(), ByteSizes.label(o.tileBytes()), o.passes(), o.iters(),
                            backend.name());
                }
                Outcome mine;
                try (Communicator comm = Communicator.create(bs, backend);
                     Ring ring = new Ring(bs, comm, backend, transport, o)) {
                    mine = ring.measure();
                    // nobody unmaps or stops its proxy while a peer may still use them
                    barrier(bs, rank, "done");
                }
                byte[] all = Blocking.value(bs.allGather(mine.encode(), TIMEOUT), TIMEOUT.plusSeconds(5), rank,
                        "gather results");
                List<Outcome> outcomes = java.util.stream.IntStream.range(0, n).mapToObj(r -> Outcome.decode(all, r))
                        .toList();
                Outcome worst = Outcome.worst(outcomes);
                if (rank == 0) {
                    System.out.printf(Locale.ROOT, "overlap: compute-only %.1f µs, comm-only %.1f µs, overlapped %.1f "
                            + "µs%n", worst.computeNs() / 1e3, worst.commNs() / 1e3, worst.overlappedNs() / 1e3);
                    System.out.printf(Locale.ROOT, "overlap: overlapped / max(compute, comm) = %.3f (target <= 1.10)%n",
                            worst.ratio());
                    System.out.println(worst.wrong() == 0
                            ? "overlap: every element of every tile checked on every rank in every run: OK"
                            : "overlap: FAILED: " + worst.wrong() + " wrong elements");
                }
                System.out.flush();
                return worst.wrong() == 0 ? ExitCodes.OK : ExitCodes.FAILURE;
            }
        }
    }

    private static void barrier(TcpBootstrap bs, int rank, String phase) {
        Blocking.done(bs.barrier(TIMEOUT), TIMEOUT.plusSeconds(5), rank, "barrier " + phase);
    }

    /** The value element {@code i} of tile {@code tile} starts from on {@code rank} (overlap.cu's tileValue). */
    static float startValue(int rank, int tile, long i) {
        long bits = ((long) rank * 131 + (long) tile * 31 + i) & 1023;
        return 1.0f + bits / 1024.0f;
    }

    /** {@code passes} fused multiply-adds from {@code x}, as the kernel's fmaf. */
    static float compute(float x, int passes) {
        for (int p = 0; p < passes; p++) {
            x = Math.fma(x, A, B);
        }
        return x;
    }

    /** The host "kernel" of one tile: computes every element into {@code send} at the tile's place. */
    static void computeTile(MemorySegment send, int rank, int tile, long elements, int passes) {
        long base = tile * elements;
        for (long i = 0; i < elements; i++) {
            send.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, base + i, compute(startValue(rank, tile, i), passes));
        }
    }

    /**
     * Counts the elements of {@code received} (all tiles of {@code from}) that differ, bit for bit,
     * from what {@code from} computes. The start value takes 1024 values, so their results are
     * computed once.
     */
    static long countWrong(MemorySegment received, int from, int tiles, long elements, int passes) {
        int[] expected = new int[1024];
        for (int v = 0; v < 1024; v++) {
            expected[v] = Float.floatToRawIntBits(compute(1.0f + v / 1024.0f, passes));
        }
        long wrong = 0;
        for (int k = 0; k < tiles; k++) {
            long base = k * elements;
            for (long i = 0; i < elements; i++) {
                int v = (int) (((long) from * 131 + (long) k * 31 + i) & 1023);
                if (received.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, base + i) != expected[v]) {
                    wrong++;
                }
            }
        }
        return wrong;
    }

    /** The options as picocli reads them. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false)
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--backend", paramLabel = "host|cuda", description = "the backend (default: host)")
        String backend = "host";
        @Option(names = "--tiles", paramLabel = "T", description = "tiles per rank (default: 8)")
        int tiles = 8;
        @Option(names = "--tile-bytes", paramLabel = "S", converter = SampleArgs.Bytes.class,
                description = "bytes per tile, K/M suffixes (default: 1M)")
        long tileBytes = 1 << 20;
        @Option(names = "--passes", paramLabel = "P", description = "FMA passes of the compute per tile (default: 64)")
        int passes = 64;
        @Option(names = "--iters", paramLabel = "I", description = "timed runs (default: 5)")
        int iters = 5;

        @Override
        public void check() {
            SampleArgs.range("--tiles", tiles, 1, 1024);
            SampleArgs.range("--passes", passes, 0, Integer.MAX_VALUE);
            SampleArgs.range("--iters", iters, 1, Integer.MAX_VALUE);
            if (tileBytes < Float.BYTES || tileBytes % Float.BYTES != 0) {
                throw new IllegalArgumentException("--tile-bytes must be a positive multiple of 4 (tiles hold floats),"
                        + " not " + tileBytes);
            }
            if (tiles * tileBytes >= MAX_BUFFER) {
                throw new IllegalArgumentException("--tiles times --tile-bytes must stay below 2 GiB, not "
                        + tiles * tileBytes);
            }
        }
    }

    static Options parse(List<String> args) {
        Args a = SampleArgs.parse(NAME, new Args(), args);
        return new Options(a.backend, a.tiles, a.tileBytes, a.passes, a.iters);
    }

    @Override
    public Object options() {
        return new Args();
    }

    private static JmscclppException usage(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, NAME + ": " + detail).phase("sample arguments")
                .build();
    }

    /**
     * One rank's ring: send and receive buffers registered for the transport, a mesh that
     * exchanged the receive buffers, a proxy with a channel to the next rank (src: send buffer,
     * dst: its receive buffer) and one from the previous rank (waited on). With two ranks they
     * are the same channel.
     */
    private static final class Ring implements AutoCloseable {
        private final TcpBootstrap bs;
        private final Backend backend;
        private final Options o;
        private final int rank;
        private final int previous;
        private final DeviceBuffer send;
        private final DeviceBuffer recv;
        private final ProxyService proxy;
        private final PortChannel toNext;
        private final PortChannel fromPrevious;
        private final Owned owned = new Owned();
        private final Device device;

        Ring(TcpBootstrap bs, Communicator comm, Backend backend, Transport transport, Options o) {
            this.bs = bs;
            this.backend = backend;
            this.o = o;
            this.rank = bs.rank();
            int n = bs.size();
            int next = (rank + 1) % n;
            this.previous = (rank + n - 1) % n;
            TransportFlags flags = TransportFlags.of(transport);
            try {
                send = own(backend.allocate(o.bufferBytes()));
                recv = own(backend.allocate(o.bufferBytes()));
                RegisteredMemory sendMemory = own(comm.registerMemory(send, flags));
                RegisteredMemory recvMemory = own(comm.registerMemory(recv, flags));
                Mesh mesh = Blocking.value(comm.mesh(recvMemory, p -> EndpointConfig.of(transport), 0, TIMEOUT),
                        TIMEOUT.plusSeconds(5), rank, "mesh");
                proxy = own(ProxyService.builder(backend).build());
                MemoryId src = proxy.addMemory(sendMemory);
                MemoryId dst = proxy.addMemory(mesh.remoteMemory(next));
                SemaphoreId nextSemaphore = proxy.addSemaphore(own(new Host2DeviceSemaphore(mesh.semaphore(next),
                        backend)));
                toNext = proxy.portChannel(nextSemaphore, dst, src);
                if (previous == next) {
                    fromPrevious = toNext;
                } else {
                    SemaphoreId previousSemaphore = proxy.addSemaphore(own(new Host2DeviceSemaphore(
                            mesh.semaphore(previous), backend)));
                    fromPrevious = proxy.portChannel(previousSemaphore, proxy.addMemory(mesh.remoteMemory(previous)),
                            src);
                }
                device = backend instanceof CudaBackend cuda ? new GpuDevice(cuda) : new HostDevice();
                proxy.start();
            } catch (RuntimeException e) {
                try {
                    close();
                } catch (RuntimeException c) {
                    e.addSuppressed(c);
                }
                throw e;
            }
        }

        private <T extends AutoCloseable> T own(T resource) {
            return owned.own(resource);
        }

        Outcome measure() {
            long compute = phase(MODE_COMPUTE);
            long[] wrong = new long[1];
            long comm = phase(MODE_COMMUNICATE, wrong);
            long both = phase(MODE_COMPUTE | MODE_COMMUNICATE, wrong);
            return new Outcome(compute, comm, both, wrong[0]);
        }

        private long phase(int mode) {
            return phase(mode, new long[1]);
        }

        /**
         * One untimed warm-up run of {@code mode} (the first launch of a mode pays for cold caches
         * and the proxy's first wake-up: the first GPU run counted it and showed an overlapped time
         * below the compute-only one), then I timed runs, a barrier before each; the mean nanoseconds
         * of the timed ones; wrong elements of every run added to {@code wrong[0]}.
         */
        private long phase(int mode, long[] wrong) {
            boolean communicate = (mode & MODE_COMMUNICATE) != 0;
            long total = 0;
            for (int it = -1; it < o.iters(); it++) {
                if (communicate) {
                    device.poison();
                }
                // the previous rank writes into recv only after this barrier: the poison is in place
                barrier(bs, rank, "before run " + it + " of mode " + mode);
                long start = System.nanoTime();
                device.run(mode);
                if (it >= 0) {
                    total += System.nanoTime() - start;
                }
                if (communicate) {
                    wrong[0] += countWrong(device.received(), previous, o.tiles(), o.tileElements(), o.passes());
                }
            }
            return total / o.iters();
        }

        @Override
        public void close() {
            RuntimeException first = null;
            if (proxy != null) {
                try {
                    Blocking.done(proxy.stop(), TIMEOUT, rank, "proxy stop");
                } catch (RuntimeException e) {
                    first = e;
                }
            }
            first = owned.closeAfter(first);
            if (first != null) {
                throw first;
            }
        }

        /** Where the tiles are computed and pushed. */
        private interface Device {
            void run(int mode);

            void poison();

            /** The receive buffer as host memory, read after a run. */
            MemorySegment received();
        }

        /** The host backend: the calling thread computes and pushes; the proxy's thread copies. */
        private final class HostDevice implements Device {
            @Override
            public void run(int mode) {
                MemorySegment out = send.hostSegment();
                long elements = o.tileElements();
                for (int k = 0; k < o.tiles(); k++) {
                    if ((mode & MODE_COMPUTE) != 0) {
                        computeTile(out, rank, k, elements, o.passes());
                    }
                    if ((mode & MODE_COMMUNICATE) != 0) {
                        toNext.putWithSignal(k * o.tileBytes(), k * o.tileBytes(), o.tileBytes());
                    }
                }
                if ((mode & MODE_COMMUNICATE) != 0) {
                    for (int k = 0; k < o.tiles(); k++) {
                        fromPrevious.await(TIMEOUT);
                    }
                    toNext.flush(TIMEOUT);
                }
            }

            @Override
            public void poison() {
                recv.hostSegment().fill(POISON);
            }

            @Override
            public MemorySegment received() {
                return recv.hostSegment();
            }
        }

        /** The cuda backend: overlap.cu's kernel on a stream of the rank's GPU. */
        private final class GpuDevice implements Device {
            private final CudaBackend cuda;
            private final CudaStream stream;
            private final Kernel kernel;
            private final DeviceBuffer channels;
            private final DeviceBuffer computed;
            private final Arena arena = Arena.ofShared();
            private final MemorySegment host;
            private final MemorySegment poison;
            private final LaunchConfig grid;

            GpuDevice(CudaBackend cuda) {
                this.cuda = cuda;
                stream = own(cuda.createStream(NAME));
                kernel = SampleKernels.load(cuda, NAME).function("overlapTiles");
                computed = own(cuda.allocate(Long.BYTES));
                channels = own(cuda.allocate(2L * PortChannel.DEVICE_HANDLE_BYTES));
                own(arena);
                MemorySegment handles = arena.allocate(2L * PortChannel.DEVICE_HANDLE_BYTES, 16);
                toNext.encodeDeviceHandle(handles.asSlice(0, PortChannel.DEVICE_HANDLE_BYTES).asByteBuffer()
                        .order(ByteOrder.LITTLE_ENDIAN));
                fromPrevious.encodeDeviceHandle(handles.asSlice(PortChannel.DEVICE_HANDLE_BYTES,
                        PortChannel.DEVICE_HANDLE_BYTES).asByteBuffer().order(ByteOrder.LITTLE_ENDIAN));
                cuda.copyFromHost(channels, 0, handles);
                host = arena.allocate(o.bufferBytes(), 16);
                poison = arena.allocate(o.bufferBytes(), 16).fill(POISON);
                long blocks = Math.clamp((o.tileElements() + THREADS - 1) / THREADS, 1, MAX_COMPUTE_BLOCKS);
                grid = LaunchConfig.of((int) blocks + 1, THREADS);
            }

            @Override
            public void run(int mode) {
                stream.launch(kernel, grid, KernelArgs.builder().pointer(channels.address())
                        .pointer(channels.address() + PortChannel.DEVICE_HANDLE_BYTES).pointer(send.address())
                        .i32(o.tiles()).i64(o.tileElements()).i32(o.passes()).i32(rank).i32(mode)
                        .pointer(computed.address()).build());
                stream.synchronize(TIMEOUT, "overlapTiles");
            }

            @Override
            public void poison() {
                cuda.copyFromHost(recv, 0, poison);
            }

            @Override
            public MemorySegment received() {
                cuda.copyToHost(host, recv, 0);
                return host;
            }
        }
    }
}
