package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.Host2HostSemaphore;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Mesh;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code allgather [--backend host] [--bytes PER_RANK] [--iters K] [--warmup W] [--seed S]}: every
 * rank owns slice {@code rank} of one buffer of {@code N * PER_RANK} bytes, registered with
 * {@code HOST_IPC}, and writes it into the same slice of every peer's buffer, so that afterwards
 * every rank holds every slice.
 *
 * <p>Setup: a {@link TcpBootstrap} from the environment, a backend from {@link Backends#named},
 * one {@link Communicator#mesh} (a connection, the peer's buffer and a semaphore per peer). Rank 0
 * draws the seed of the run (or takes {@code --seed}) and broadcasts it; slice {@code r} holds
 * random bytes drawn from (seed, r), so every rank knows what every slice must hold.
 *
 * <p>Each iteration: poison the other slices (a byte that changes every iteration); signal every
 * peer and wait for every peer's signal (everyone's buffer is poisoned and ready); then, timed:
 * write my slice into every peer, flush, signal every peer, wait for every peer's signal (its slice
 * is here); then, untimed, check every byte of the whole buffer. Two signals per iteration keep a
 * fast peer from writing the next iteration's data into a buffer that is still being checked, and
 * the first one lines the ranks up so that the time is the exchange's, not a late peer's.
 *
 * <p>At the end every rank's times and failure count travel to every rank in one allGather; rank 0
 * prints a table (mean and median over iterations of the slowest rank's time, and algbw = all
 * output bytes / mean time). Every rank exits 0 only if every check on every rank passed, else 1.
 */
final class AllGatherSample implements Sample {

    static final String NAME = "allgather";
    static final String SYNOPSIS = "[--backend host] [--bytes 1M] [--iters 20] [--warmup 5] [--seed S]: HOST_IPC"
            + " allgather, every byte checked";

    static final Duration OP_TIMEOUT = Duration.ofSeconds(60);
    private static final long DEFAULT_BYTES = 1 << 20;

    record Options(String backend, long bytes, int iters, int warmup, @Nullable Long seed) {
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        Options o = parse(args);
        int rank = env.rank();
        int n = env.worldSize();
        if (o.bytes() > Long.MAX_VALUE / n) {
            throw usage("--bytes " + o.bytes() + " times " + n + " ranks overflows");
        }
        try (Backend backend = Backends.named(o.backend())) {
            if (!backend.connectionTransports().has(Transport.HOST_IPC)
                    || !backend.ipcTransports().has(Transport.HOST_IPC)) {
                throw usage("the " + backend.name() + " backend cannot connect and share memory over HOST_IPC (it "
                        + "connects over " + backend.connectionTransports() + "); use --backend host");
            }
            BootstrapOptions options = BootstrapOptions.fromEnvironment();
            try (TcpBootstrap bs = TcpBootstrap.create(rank, n, options)) {
                Blocking.done(bs.initialize(env.rootAddress()), options.initTimeout().plusSeconds(5), rank,
                        "initialize");
                long seed = agreeOnSeed(bs, o.seed());
                if (rank == 0) {
                    System.out.printf(Locale.ROOT, "allgather: %d ranks, %s per rank, %d iterations after %d warm-up,"
                            + " %s backend, seed 0x%016x%n", n, ByteSizes.label(o.bytes()), o.iters(), o.warmup(),
                            backend.name(), seed);
                }
                Outcome mine = runRank(bs, backend, o, seed);
                byte[] all = Blocking.value(bs.allGather(mine.encode(), OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), rank,
                        "gather results");
                List<Outcome> outcomes = Outcome.decodeAll(all, n, o.iters());
                List<Integer> failed = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    if (outcomes.get(r).failures() > 0) {
                        failed.add(r);
                    }
                }
                if (rank == 0) {
                    System.out.print(table(n, o.bytes(), o.iters(), outcomes));
                    System.out.println(failed.isEmpty()
                            ? "allgather: every byte of every slice checked on every rank in every iteration: OK"
                            : "allgather: FAILED: wrong bytes on ranks " + failed);
                }
                System.out.flush();
                return failed.isEmpty() ? Main.OK : Main.FAILURE;
            }
        }
    }

    /** Rank 0's seed (its {@code --seed}, else a random one) on every rank. */
    private static long agreeOnSeed(TcpBootstrap bs, @Nullable Long requested) {
        long seed = requested != null ? requested : new SecureRandom().nextLong();
        byte[] mine = ByteBuffer.allocate(Long.BYTES).putLong(seed).array();
        byte[] root = Blocking.value(bs.broadcast(0, mine, OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), bs.rank(), "seed");
        return ByteBuffer.wrap(root).getLong();
    }

    /** This rank's part: setup, iterations, checks. Closes what it made. */
    private static Outcome runRank(TcpBootstrap bs, Backend backend, Options o, long seed) {
        int rank = bs.rank();
        int n = bs.size();
        long bytes = o.bytes();
        long total = bytes * n;
        long[] times = new long[o.iters()];
        int failures = 0;
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer buffer = backend.allocate(total);
             Communicator comm = Communicator.create(bs, backend)) {
            MemorySegment expected = arena.allocate(total);
            for (int r = 0; r < n; r++) {
                fillSlice(expected.asSlice(r * bytes, bytes), seed, r);
            }
            MemorySegment readBack = arena.allocate(total);
            MemorySegment poison = arena.allocate(bytes);
            backend.copyFromHost(buffer, rank * bytes, expected.asSlice(rank * bytes, bytes));
            try (RegisteredMemory memory = comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC))) {
                Mesh mesh = Blocking.value(comm.mesh(memory, EndpointConfig.of(Transport.HOST_IPC)),
                        OP_TIMEOUT.multipliedBy(2).plusSeconds(5), rank, "mesh");
                List<Host2HostSemaphore> sems = new ArrayList<>();
                for (int p : mesh.peers()) {
                    sems.add(new Host2HostSemaphore(mesh.semaphore(p)));
                }
                for (int i = 0; i < o.warmup() + o.iters(); i++) {
                    poison.fill((byte) (0xA5 ^ i));
                    for (int p : mesh.peers()) {
                        backend.copyFromHost(buffer, p * bytes, poison);
                    }
                    // the ready round works as a barrier: the timed part starts on every rank together
                    signalAndWait(sems, rank, "ready " + i);
                    long t0 = System.nanoTime();
                    for (int p : mesh.peers()) {
                        mesh.connection(p).write(mesh.remoteMemory(p), rank * bytes, memory, rank * bytes, bytes);
                    }
                    Blocking.done(Flux.fromIterable(mesh.peers()).map(mesh::connection)
                            .concatMap(c -> c.flush(OP_TIMEOUT)).then(), OP_TIMEOUT.plusSeconds(5), rank, "flush " + i);
                    signalAndWait(sems, rank, "data " + i);
                    long elapsed = System.nanoTime() - t0;
                    if (i >= o.warmup()) {
                        times[i - o.warmup()] = elapsed;
                    }
                    backend.copyToHost(readBack, buffer, 0);
                    String wrong = firstMismatch(readBack, expected, bytes);
                    if (wrong != null) {
                        failures++;
                        if (failures <= 3) {
                            System.out.printf("allgather: rank %d, iteration %d: %s%n", rank, i, wrong);
                        }
                    }
                }
                // nobody closes its buffer (and its peers' mappings) while a peer may still check or write
                Blocking.done(bs.barrier(OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), rank, "final barrier");
            }
        }
        return new Outcome(times, failures);
    }

    private static void signalAndWait(List<Host2HostSemaphore> sems, int rank, String phase) {
        sems.forEach(Host2HostSemaphore::signal);
        Blocking.done(Mono.when(sems.stream().map(s -> s.wait(OP_TIMEOUT)).toList()), OP_TIMEOUT.plusSeconds(5), rank,
                "wait for peers (" + phase + ")");
    }

    /** Fills {@code slice} with the random bytes of rank {@code owner} in the run of {@code seed}. */
    static void fillSlice(MemorySegment slice, long seed, int owner) {
        SplittableRandom random = new SplittableRandom(seed ^ (0x9E3779B97F4A7C15L * (owner + 1)));
        long size = slice.byteSize();
        long i = 0;
        for (; i + Long.BYTES <= size; i += Long.BYTES) {
            slice.set(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong());
        }
        for (; i < size; i++) {
            slice.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
        }
    }

    /** Where {@code actual} first differs from {@code expected}: slice, offset and both bytes; null when equal. */
    static @Nullable String firstMismatch(MemorySegment actual, MemorySegment expected, long sliceBytes) {
        long at = actual.mismatch(expected);
        if (at < 0) {
            return null;
        }
        if (at >= actual.byteSize() || at >= expected.byteSize()) {
            return "the buffer holds " + actual.byteSize() + " bytes, expected " + expected.byteSize();
        }
        return String.format(Locale.ROOT, "slice of rank %d, byte %d: expected 0x%02x, found 0x%02x", at / sliceBytes,
                at % sliceBytes, expected.get(ValueLayout.JAVA_BYTE, at), actual.get(ValueLayout.JAVA_BYTE, at));
    }

    /**
     * The table rank 0 prints: per iteration the slowest rank's time, then their mean (and median),
     * and algbw = all output bytes ({@code n * bytes}) over the mean time.
     */
    static String table(int n, long bytes, int iters, List<Outcome> outcomes) {
        long[] slowest = new long[iters];
        double sum = 0;
        for (int i = 0; i < iters; i++) {
            for (Outcome o : outcomes) {
                slowest[i] = Math.max(slowest[i], o.times()[i]);
            }
            sum += slowest[i];
        }
        double meanNanos = sum / iters;
        double algbw = n * (double) bytes / meanNanos;   // bytes per ns = GB/s
        String[] header = {"ranks", "bytes per rank", "iterations", "mean µs", "median µs", "algbw GB/s"};
        String[] row = {Integer.toString(n), Long.toString(bytes), Integer.toString(iters),
            String.format(Locale.ROOT, "%.1f", meanNanos / 1e3),
            String.format(Locale.ROOT, "%.1f", BenchStats.median(slowest) / 1e3),
            String.format(Locale.ROOT, "%.3f", algbw)};
        StringBuilder head = new StringBuilder("|");
        StringBuilder rule = new StringBuilder("|");
        StringBuilder values = new StringBuilder("|");
        for (int c = 0; c < header.length; c++) {
            int w = Math.max(header[c].length(), row[c].length());
            head.append(' ').append(" ".repeat(w - header[c].length())).append(header[c]).append(" |");
            rule.append("-".repeat(w + 1)).append(":|");
            values.append(' ').append(" ".repeat(w - row[c].length())).append(row[c]).append(" |");
        }
        return head.append('\n').append(rule).append('\n').append(values).append('\n').toString();
    }

    /** One rank's result: its timed iterations (ns) and how many iterations had a wrong byte. */
    record Outcome(long[] times, int failures) {
        byte[] encode() {
            long[] all = new long[times.length + 1];
            all[0] = failures;
            System.arraycopy(times, 0, all, 1, times.length);
            return BenchStats.toBytes(all);
        }

        static List<Outcome> decodeAll(byte[] gathered, int n, int iters) {
            List<Outcome> out = new ArrayList<>(n);
            for (long[] r : BenchStats.split(gathered, n)) {
                if (r.length != iters + 1) {
                    throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "a rank sent " + (r.length - 1)
                            + " times, expected " + iters).phase("gather results").build();
                }
                long[] times = new long[iters];
                System.arraycopy(r, 1, times, 0, iters);
                out.add(new Outcome(times, (int) r[0]));
            }
            return out;
        }
    }

    static Options parse(List<String> args) {
        String backend = "host";
        long bytes = DEFAULT_BYTES;
        int iters = 20;
        int warmup = 5;
        Long seed = null;
        for (int i = 0; i < args.size(); i += 2) {
            String opt = args.get(i);
            if (i + 1 >= args.size()) {
                throw usage(opt + " needs a value");
            }
            String v = args.get(i + 1);
            try {
                switch (opt) {
                    case "--backend" -> backend = v;
                    case "--bytes" -> bytes = ByteSizes.parse(opt, v);
                    case "--iters" -> iters = Integer.parseInt(v);
                    case "--warmup" -> warmup = Integer.parseInt(v);
                    case "--seed" -> seed = Long.decode(v);
                    default -> throw usage("unknown option " + opt);
                }
            } catch (NumberFormatException e) {
                throw usage(opt + " needs an integer, got '" + v + "'");
            } catch (IllegalArgumentException e) {
                throw usage(e.getMessage());
            }
        }
        if (bytes < 1 || iters < 1 || warmup < 0) {
            throw usage("--bytes and --iters must be at least 1, --warmup at least 0");
        }
        return new Options(backend, bytes, iters, warmup, seed);
    }

    private static JmscclppException usage(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, NAME + ": " + detail).phase("sample arguments")
                .build();
    }
}
