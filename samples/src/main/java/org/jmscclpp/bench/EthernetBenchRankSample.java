package org.jmscclpp.bench;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Mesh;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.samples.Blocking;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Sample;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code bench-ethernet-rank --min B --max B --iters N --warmup N --turns N --jit-warmup N --jit-settle S}:
 * one of the two ranks
 * of {@code jmscclpp bench ethernet}. Each rank registers a host-backend buffer of {@code max}
 * bytes for {@code ETHERNET}, builds a mesh over it (connection, peer's buffer, semaphore) and
 * opens a {@link RawTcpLink} beside it. Then:
 * <ol>
 *   <li>JIT warm-up: untimed write + flush of {@link #JIT_WARMUP_BYTES} over ETHERNET and as many
 *       transfers over the raw socket: at least {@code jit-warmup} each, then on until the JIT has
 *       settled on both ranks or {@code jit-settle} seconds passed (see {@link JitSettle}). The
 *       ETHERNET path runs through more Java code (Netty's pipeline, the receiver's checks,
 *       Reactor) than the raw socket's few methods, and the JIT compiles it fully only after some
 *       ten thousand frames: measured on the 2-core CI machine, a 1 KiB write + flush took 200 to
 *       300 µs after 200 warm-up round trips and 87 µs after 20000, and the compiler threads still
 *       held a quarter of the cores after 20000. Without it the first sizes measure the compiler;</li>
 *   <li>for every size from {@code min} to {@code max} (×4 steps), rank 0 times iterations of
 *       {@link Connection#write} of the whole size into rank 1's buffer plus
 *       {@link Connection#flush} (stamping the source before each, untimed, as {@code bench write}
 *       does), and the same iterations over the raw socket, rank 1 reading each transfer into a
 *       buffer beside it and acking it. The timed iterations run in blocks of at most
 *       {@link #BLOCK}, a block of each transport in turn (which goes first alternating, so that a
 *       noisy host's slow spells meet both), each block after one untimed transfer (which meets
 *       what the other transport left running); each transport reports its median block. With
 *       {@code --tcp-vs-tcp} raw TCP takes ETHERNET's blocks too, and how far that ratio strays
 *       from 1 is the host's own noise. Then rank 0 tells rank 1
 *       over the bootstrap the last ETHERNET iteration and a checksum, and rank 1 checks its buffer
 *       and answers;</li>
 *   <li>ping-pong of one int: round trips of write 4 bytes + {@code signal} (an
 *       {@code updateAndSync}) / wait for the peer's signal on the calling thread, of
 *       {@code writeAndSignal} / wait, and over the raw socket: {@code turns} untimed of each (and
 *       more until the JIT settled, as above), then
 *       {@code turns} timed of each in {@link #ROUNDS} rounds that alternate the three; each
 *       reports its median round. Every turn's int is checked by its receiver.</li>
 * </ol>
 * Rank 0 prints, for the parent ({@link EthernetBench}) to parse:
 * <pre>
 * ETH-JIT iterations=31000 seconds=4.2 last_compile_ms=2,0 settled=true
 * ETH-PING-JIT iterations=9000 seconds=2.0 last_compile_ms=1,3 settled=true
 * ETH size=1048576 iters=100 warmup=10 eth_gbps=1.2345 tcp_gbps=1.4567 check=ok
 * ETH-PINGPONG turns=1000 eth_us=41.20 tcp_us=20.10
 * </pre>
 */
public final class EthernetBenchRankSample implements Sample {

    /** The name the command line registers this rank sample under. */
    public static final String NAME = "bench-ethernet-rank";

    static final Duration OP_TIMEOUT = Duration.ofSeconds(120);
    /** Bytes each size moves in its timed iterations, at most, per transport (warm-up: a quarter of it). */
    static final long BUDGET = 512L << 20;
    static final int MIN_ITERS = 3;
    /** Timed rounds of the ping-pong, alternating its forms; each reports its median round. */
    static final int ROUNDS = 5;
    /**
     * Transfer size of the JIT warm-up that comes before every measurement: 64 KiB frames take
     * every step of the receiving path (header read into a pooled buffer, body read into place).
     */
    static final long JIT_WARMUP_BYTES = 64 << 10;

    private static final int TAG = 0x4554;   // "ET": bootstrap tag of the check messages
    private static final int JIT_TAG = 0x454A;   // "EJ": bootstrap tag of the JIT warm-ups' steps
    private static final long SEED = 0x6A6D7363636C7070L;

    record Options(long min, long max, int iters, int warmup, int turns, int jitWarmup, int jitSettle,
                   boolean tcpVsTcp) {
        /** The sizes measured: min, 4 min, 16 min, ... up to max. */
        List<Long> sizes() {
            List<Long> out = new ArrayList<>();
            for (long s = min; s <= max; s = s > max / 4 ? max + 1 : s * 4) {
                out.add(s);
            }
            return out;
        }

        /**
         * Untimed turns before the timed ones: as many. The ETHERNET path runs through Netty and
         * Reactor code that the JIT compiles only after thousands of round trips (a cold run
         * measured 5 to 10 times slower); the raw socket's few methods warm at once.
         */
        int warmupTurns() {
            return turns;
        }

        /** The size of the JIT warm-up's transfers: {@link #JIT_WARMUP_BYTES}, or max when smaller. */
        long jitWarmupBytes() {
            return Math.min(JIT_WARMUP_BYTES, max);
        }
    }

    /**
     * Timed transfers per block, at most. Five blocks per size (20 transfers with {@code --iters 100})
     * let a slow spell of the 2-core CI machine decide a size's ratio (0.60–1.59 over runs of the
     * same build); blocks of one transfer of each in turn let the ETHERNET receiver's polls, still
     * running when the raw transfer began, slow raw TCP by about a third at 256 KiB there. Blocks of
     * 10 after an untimed transfer measure each transport undisturbed by the other: there, raw TCP
     * against itself stays within 0.97–1.03 of 1, so what spread remains is ETHERNET's own.
     */
    static final int BLOCK = 10;

    /** The blocks (rounds) of {@code iters} timed transfers per transport. */
    static int blocksOf(int iters) {
        return Math.max(1, Math.min(iters, (iters + BLOCK - 1) / BLOCK));
    }

    static int itersFor(long size, int iters) {
        return (int) Math.max(MIN_ITERS, Math.min(iters, BUDGET / size));
    }

    static int warmupFor(long size, int warmup) {
        return (int) Math.min(warmup, Math.max(1, BUDGET / 4 / size));
    }

    @Override
    public int run(RankEnvironment env, List<String> args) throws IOException {
        Options o = BenchArgs.parseForRank(NAME, args, EthernetBenchRankSample::parse);
        BenchArgs.requireRanks(NAME, env, 2);
        int rank = env.rank();
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        try (HostBackend backend = HostBackend.open();
             TcpBootstrap bs = TcpBootstrap.create(rank, 2, options)) {
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            try (DeviceBuffer buffer = backend.allocate(o.max());
                 Communicator comm = Communicator.create(bs, backend);
                 RegisteredMemory memory = comm.registerMemory(buffer, TransportFlags.of(Transport.ETHERNET))) {
                Mesh mesh = Blocking.value(comm.mesh(memory, EndpointConfig.of(Transport.ETHERNET)),
                        OP_TIMEOUT.plusSeconds(5), rank, "mesh");
                int peer = 1 - rank;
                Connection connection = mesh.connection(peer);
                RegisteredMemory remote = mesh.remoteMemory(peer);
                Host2HostSemaphore sem = new Host2HostSemaphore(mesh.semaphore(peer));
                try (RawTcpLink raw = RawTcpLink.open(bs, rank, env.rootAddress().orElse("127.0.0.1:1"), OP_TIMEOUT)) {
                    Duration settle = Duration.ofSeconds(o.jitSettle());
                    if (rank == 0) {
                        fillRandom(buffer.hostSegment());
                        JitSettle.Outcome jit = JitSettle.lead(bs, JIT_TAG, o.jitWarmup(), settle, OP_TIMEOUT, n -> {
                            for (int i = 0; i < n; i++) {
                                connection.write(remote, 0, memory, 0, o.jitWarmupBytes());
                                connection.awaitFlush(OP_TIMEOUT);
                            }
                            for (int i = 0; i < n; i++) {
                                raw.send(buffer.hostSegment(), o.jitWarmupBytes());
                            }
                        });
                        System.out.println(jitLine("ETH-JIT", jit));
                        System.out.flush();
                        for (long size : o.sizes()) {
                            System.out.println(measure(bs, connection, remote, memory, raw, size, o));
                            System.out.flush();
                        }
                    } else {
                        // the ETHERNET transfers need nothing of this thread
                        JitSettle.follow(bs, JIT_TAG, OP_TIMEOUT, n -> {
                            for (int i = 0; i < n; i++) {
                                raw.receive(buffer.hostSegment());
                            }
                        });
                        // raw TCP lands in memory of the same kind beside the ETHERNET buffer, which
                        // holds what rank 1 checks
                        try (DeviceBuffer rawLanding = backend.allocate(o.max())) {
                            for (long size : o.sizes()) {
                                int iters = itersFor(size, o.iters());
                                int transfers = warmupFor(size, o.warmup())
                                        + (iters + blocksOf(iters)) * (o.tcpVsTcp() ? 2 : 1);
                                for (int i = 0; i < transfers; i++) {
                                    raw.receive(rawLanding.hostSegment());
                                }
                                check(bs, buffer.hostSegment());
                            }
                        }
                    }
                    // untimed turns of each form first, until the JIT settled (the ETHERNET path's waits run
                    // code the transfers above never ran), then rounds that alternate the three, so that each
                    // sees the same moments of a noisy host
                    JitSettle.Step turns = n -> {
                        pingPong(rank, n, connection, remote, memory, sem, false);
                        pingPong(rank, n, connection, remote, memory, sem, true);
                        pingPong(rank, n, raw);
                    };
                    if (rank == 0) {
                        System.out.println(jitLine("ETH-PING-JIT", JitSettle.lead(bs, JIT_TAG, o.warmupTurns(), settle,
                                OP_TIMEOUT, turns)));
                        System.out.flush();
                    } else {
                        JitSettle.follow(bs, JIT_TAG, OP_TIMEOUT, turns);
                    }
                    int rounds = Math.min(ROUNDS, o.turns());
                    double[] eth = new double[rounds];
                    double[] put = new double[rounds];
                    double[] tcp = new double[rounds];
                    for (int r = 0; r < rounds; r++) {
                        int n = o.turns() / rounds + (r < o.turns() % rounds ? 1 : 0);
                        eth[r] = pingPong(rank, n, connection, remote, memory, sem, false) / 1e3 / n;
                        put[r] = pingPong(rank, n, connection, remote, memory, sem, true) / 1e3 / n;
                        tcp[r] = pingPong(rank, n, raw) / 1e3 / n;
                    }
                    if (rank == 0) {
                        System.out.printf(Locale.ROOT, "ETH-PINGPONG turns=%d eth_us=%.2f put_us=%.2f tcp_us=%.2f%n",
                                o.turns(), BenchStats.median(eth), BenchStats.median(put), BenchStats.median(tcp));
                        System.out.flush();
                    }
                }
                // nobody unmaps or closes while the peer may still write here
                Blocking.done(bs.barrier(OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), rank, "final barrier");
            }
        }
        return ExitCodes.OK;
    }

    /** The line that tells the parent how a JIT warm-up went. */
    static String jitLine(String key, JitSettle.Outcome o) {
        return String.format(Locale.ROOT, "%s iterations=%d seconds=%.1f last_compile_ms=%d,%d settled=%b", key,
                o.iterations(), o.seconds(), o.rank0Millis(), o.rank1Millis(), o.settled());
    }

    /**
     * Rank 0's part for one size: the warm-up iterations on each transport, then the timed ones in
     * rounds of one block of each transport ({@link #blocksOf}), then rank 1's check of the last
     * ETHERNET iteration; returns its ETH line with each transport's median block.
     */
    private static String measure(TcpBootstrap bs, Connection connection, RegisteredMemory remote,
                                  RegisteredMemory local, RawTcpLink raw, long size, Options o) throws IOException {
        int iters = itersFor(size, o.iters());
        int warmup = warmupFor(size, o.warmup());
        MemorySegment src = local.hostSegment();
        int eth = 0;
        for (; eth < warmup; eth++) {
            ethernetTransfer(connection, remote, local, size, eth);
        }
        for (int i = 0; i < warmup; i++) {
            rawTransfer(raw, src, size, i);
        }
        long claimed = 0;
        int rounds = blocksOf(iters);
        double[] ethGbps = new double[rounds];
        double[] tcpGbps = new double[rounds];
        for (int r = 0, tcp = warmup; r < rounds; r++) {
            int n = iters / rounds + (r < iters % rounds ? 1 : 0);
            long ethNanos = 0;
            long tcpNanos = 0;
            // a block of each transport, which goes first alternating; each block's first transfer is
            // untimed: it meets what the other transport's block left behind (its threads still polling
            // for a moment after their last frame, which on a host of 2 cores slows whatever runs next)
            for (int half = 0; half < 2; half++) {
                boolean ethHalf = (half == 0) == (r % 2 == 0);
                boolean ethernet = ethHalf && !o.tcpVsTcp();
                long nanos = 0;
                for (int i = -1; i < n; i++) {
                    long t = ethernet ? ethernetTransfer(connection, remote, local, size, eth++)
                            : rawTransfer(raw, src, size, tcp++);
                    nanos += i >= 0 ? t : 0;
                }
                if (ethHalf) {
                    ethNanos = nanos;
                } else {
                    tcpNanos = nanos;
                }
                if (ethernet && r == rounds - 1) {
                    // rank 1 checks the last ETHERNET transfer: the source holds it until raw TCP stamps it
                    claimed = WriteBenchRankSample.checksum(src, size);
                }
            }
            ethGbps[r] = (double) size * n / ethNanos;
            tcpGbps[r] = (double) size * n / tcpNanos;
        }
        if (o.tcpVsTcp()) {
            ethernetTransfer(connection, remote, local, size, eth++);   // one, untimed, for rank 1 to check
            claimed = WriteBenchRankSample.checksum(src, size);
        }
        byte[] claim = ByteBuffer.allocate(3 * Long.BYTES).putLong(size).putLong(eth - 1).putLong(claimed).array();
        Blocking.done(bs.send(1, TAG, claim, OP_TIMEOUT), OP_TIMEOUT, 0, "send the check of " + size + " B");
        String verdict = new String(Blocking.value(bs.recv(1, TAG, OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), 0,
                "receive the check of " + size + " B"), StandardCharsets.UTF_8);
        return String.format(Locale.ROOT, "ETH size=%d iters=%d warmup=%d eth_gbps=%.4f tcp_gbps=%.4f check=%s",
                size, iters, warmup, BenchStats.median(ethGbps), BenchStats.median(tcpGbps), verdict);
    }

    /** One ETHERNET iteration: stamp the source (untimed), write + flush; returns its nanoseconds. */
    private static long ethernetTransfer(Connection connection, RegisteredMemory remote, RegisteredMemory local,
                                         long size, int iteration) {
        WriteBenchRankSample.stamp(local.hostSegment(), size, iteration);
        long t = System.nanoTime();
        connection.write(remote, 0, local, 0, size);
        connection.awaitFlush(OP_TIMEOUT);
        return System.nanoTime() - t;
    }

    /** The same over the raw socket. */
    private static long rawTransfer(RawTcpLink raw, MemorySegment src, long size, int iteration) throws IOException {
        WriteBenchRankSample.stamp(src, size, iteration);
        long t = System.nanoTime();
        raw.send(src, size);
        return System.nanoTime() - t;
    }

    /** Rank 1's check of one size's ETHERNET transfers. */
    private static void check(TcpBootstrap bs, MemorySegment dst) {
        ByteBuffer claim = ByteBuffer.wrap(Blocking.value(bs.recv(0, TAG, OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), 1,
                "receive a check"));
        long size = claim.getLong();
        long last = claim.getLong();
        long sum = claim.getLong();
        String problem = WriteBenchRankSample.verify(dst, size, last, sum);
        byte[] verdict = (problem == null ? "ok" : problem).getBytes(StandardCharsets.UTF_8);
        Blocking.done(bs.send(0, TAG, verdict, OP_TIMEOUT), OP_TIMEOUT, 1, "answer the check of " + size + " B");
    }

    /**
     * ETHERNET ping-pong of one int: rank 0 writes, signals, waits; rank 1 waits, checks, answers.
     * Returns the nanoseconds of the {@code turns} (rank 0's figure is the one reported).
     */
    private static long pingPong(int rank, int turns, Connection connection, RegisteredMemory remote,
                                 RegisteredMemory local, Host2HostSemaphore sem, boolean oneCall) {
        MemorySegment mine = local.hostSegment();
        long t0 = System.nanoTime();
        for (int i = 0; i < turns; i++) {
            if (rank == 0) {
                // the int goes out from offset 4 and lands at the peer's offset 0, so the
                // peer's reply, landing here at 0, never meets the source
                mine.set(ValueLayout.JAVA_INT, 4, 2 * i);
                send(connection, remote, local, sem, oneCall);
                awaitSignal(sem, rank, i);
                expect(mine, 2 * i + 1, i);
            } else {
                awaitSignal(sem, rank, i);
                expect(mine, 2 * i, i);
                mine.set(ValueLayout.JAVA_INT, 4, 2 * i + 1);
                send(connection, remote, local, sem, oneCall);
            }
        }
        return System.nanoTime() - t0;
    }

    /** The int at offset 4 to the peer's offset 0, then a signal: two calls, or one {@code writeAndSignal}. */
    private static void send(Connection connection, RegisteredMemory remote, RegisteredMemory local,
                             Host2HostSemaphore sem, boolean oneCall) {
        if (oneCall) {
            sem.writeAndSignal(remote, 0, local, 4, Integer.BYTES);
        } else {
            connection.write(remote, 0, local, 4, Integer.BYTES);
            sem.signal();
        }
    }

    /**
     * Waits on this thread for the peer's signal ({@link Waiting#await}: a short spin, then parks that
     * the ETHERNET receiver cuts short), at most {@link #OP_TIMEOUT}: the raw socket's reader also
     * waits on its own thread, so the two columns compare transports rather than thread hand-offs.
     */
    private static void awaitSignal(Host2HostSemaphore sem, int rank, int turn) {
        if (!Waiting.await(sem::poll, Waiting.deadline(OP_TIMEOUT))) {
            throw JmscclppException.builder(ErrorCode.TIMEOUT, "no signal for ping-pong turn " + turn + " within "
                    + OP_TIMEOUT.toSeconds() + " s").rank(rank).peer(1 - rank).phase("ping-pong").build();
        }
    }

    /** The same ping-pong over the raw socket. */
    private static long pingPong(int rank, int turns, RawTcpLink raw) throws IOException {
        long t0 = System.nanoTime();
        for (int i = 0; i < turns; i++) {
            if (rank == 0) {
                raw.sendInt(2 * i);
                checkTurn(raw.readInt(), 2 * i + 1, i);
            } else {
                checkTurn(raw.readInt(), 2 * i, i);
                raw.sendInt(2 * i + 1);
            }
        }
        return System.nanoTime() - t0;
    }

    private static void expect(MemorySegment mine, int want, int turn) {
        checkTurn(mine.get(ValueLayout.JAVA_INT, 0), want, turn);
    }

    private static void checkTurn(int got, int want, int turn) {
        if (got != want) {
            throw new IllegalStateException("ping-pong turn " + turn + ": got " + got + ", expected " + want);
        }
    }

    private static void fillRandom(MemorySegment seg) {
        SplittableRandom random = new SplittableRandom(SEED);
        for (long i = 0; i + Long.BYTES <= seg.byteSize(); i += Long.BYTES) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong());
        }
    }

    /** The options of {@code jmscclpp bench ethernet} and of its ranks. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false, name = "ethernet",
            description = "ETHERNET write bandwidth and 1-int ping-pong between two processes, beside a raw TCP socket"
                    + " pair")
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--min", paramLabel = "S", converter = SampleArgs.Bytes.class,
                description = "the smallest size, K/M/G suffixes (default: 1K)")
        long min = 1 << 10;
        @Option(names = "--max", paramLabel = "S", converter = SampleArgs.Bytes.class,
                description = "the largest size, at most 2 GiB - 1 (default: 64M)")
        long max = 64 << 20;
        @Option(names = "--iters", paramLabel = "N", description = "timed transfers per size (default: 1000)")
        int iters = 1000;
        @Option(names = "--warmup", paramLabel = "N", description = "untimed transfers first (default: 200)")
        int warmup = 200;
        @Option(names = "--turns", paramLabel = "N", description = "ping-pong round trips (default: 5000)")
        int turns = 5000;
        @Option(names = "--jit-warmup", paramLabel = "N",
                description = "untimed 64 KiB transfers per transport before anything is timed, at least "
                        + "(default: 20000; 0: none)")
        int jitWarmup = 20_000;
        @Option(names = "--jit-settle", paramLabel = "S",
                description = "then more, in steps of " + JitSettle.STEP + ", until " + JitSettle.QUIET_STEPS
                        + " steps in a row in which neither rank's JIT compiled for over " + JitSettle.QUIET_MILLIS
                        + " ms, up to S seconds of warm-up in all; the same for the ping-pong's --turns untimed turns "
                        + "(default: 60; 0: no more)")
        int jitSettle = 60;
        @Option(names = "--tcp-vs-tcp", description = "time raw TCP in ETHERNET's place too (a second transfer over "
                + "the same socket): the ratio's spread is then this host's own noise, the floor under the ETHERNET "
                + "ratio's")
        boolean tcpVsTcp;

        @Override
        public void check() {
            SampleArgs.range("--iters", iters, 1, Integer.MAX_VALUE);
            SampleArgs.range("--warmup", warmup, 0, Integer.MAX_VALUE);
            SampleArgs.range("--turns", turns, 1, Integer.MAX_VALUE);
            SampleArgs.range("--jit-warmup", jitWarmup, 0, Integer.MAX_VALUE);
            SampleArgs.range("--jit-settle", jitSettle, 0, 3600);
            BenchArgs.checkSizeRange(min, max);
            if (max > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("--max is at most 2 GiB - 1 (one socket transfer), got " + max);
            }
        }
    }

    static Options parse(List<String> args) {
        Args a = SampleArgs.parse(new Args(), args);
        return new Options(a.min, a.max, a.iters, a.warmup, a.turns, a.jitWarmup, a.jitSettle, a.tcpVsTcp);
    }

    @Override
    public Object options() {
        return new Args();
    }

    static List<String> args(Options o) {
        List<String> args = new ArrayList<>(List.of("--min", Long.toString(o.min()), "--max", Long.toString(o.max()),
                "--iters", Integer.toString(o.iters()), "--warmup", Integer.toString(o.warmup()), "--turns",
                Integer.toString(o.turns()), "--jit-warmup", Integer.toString(o.jitWarmup()), "--jit-settle",
                Integer.toString(o.jitSettle())));
        if (o.tcpVsTcp()) {
            args.add("--tcp-vs-tcp");
        }
        return args;
    }
}
