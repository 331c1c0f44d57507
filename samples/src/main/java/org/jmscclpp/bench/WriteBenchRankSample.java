package org.jmscclpp.bench;

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
import org.jmscclpp.core.Mesh;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jmscclpp.samples.Blocking;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Sample;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code bench-write-rank --min B --max B --iters N --warmup N}: one of the two ranks of
 * {@code jmscclpp bench write}. Each rank registers a host-backend buffer of {@code max} bytes
 * with {@code HOST_IPC} and builds a mesh (connection, peer's buffer, semaphore). For every size
 * from {@code min} to {@code max}, times four:
 * <ol>
 *   <li>rank 0 times {@link #itersFor} iterations of {@link Connection#write} of the whole size into
 *       rank 1's buffer plus {@link Connection#flush}, after {@link #warmupFor} untimed ones; before
 *       each (untimed) it stamps the source with the iteration's value at the first, the last and a
 *       random 8-byte word, so the bytes that arrive differ every iteration;</li>
 *   <li>it sends rank 1 over the bootstrap the last iteration's number and a checksum of the source,
 *       signals, and waits for rank 1's signal: rank 1 checks the three stamps of that iteration
 *       and the checksum of the whole size, and answers {@code ok} or what it found;</li>
 *   <li>rank 0 times the same iterations of a plain in-process {@link MemorySegment#copy} between
 *       two buffers of its own backend: this machine's ceiling.</li>
 * </ol>
 * Rank 0 prints a line per size for the parent ({@link WriteBench}) to parse:
 * <pre>
 * WRITE size=1048576 iters=1024 warmup=256 ipc_gbps=9.8765 copy_gbps=10.1234 check=ok
 * </pre>
 * ({@code check=} is followed by {@code ok} or the failure, spaces and all, to the end of the line.)
 */
public final class WriteBenchRankSample implements Sample {

    /** The name the command line registers this rank sample under. */
    public static final String NAME = "bench-write-rank";

    static final Duration OP_TIMEOUT = Duration.ofSeconds(120);
    /** Bytes each size moves in its timed iterations, at most (warm-up: a quarter of it). */
    static final long BUDGET = 1L << 30;
    /** Timed iterations of a size, at least, whatever the budget says. */
    static final int MIN_ITERS = 3;

    private static final int TAG = 0x5752;   // "WR": bootstrap tag of the check messages
    private static final long SEED = 0x6A6D7363636C7070L;

    record Options(long min, long max, int iters, int warmup) {
        /** The sizes measured: min, 4 min, 16 min, ... up to max. */
        List<Long> sizes() {
            List<Long> out = new ArrayList<>();
            for (long s = min; s <= max; s = s > max / 4 ? max + 1 : s * 4) {
                out.add(s);
            }
            return out;
        }
    }

    /** Timed iterations at {@code size}: {@code iters}, fewer where that would move more than {@link #BUDGET}. */
    static int itersFor(long size, int iters) {
        return (int) Math.max(MIN_ITERS, Math.min(iters, BUDGET / size));
    }

    /** Warm-up iterations at {@code size}: {@code warmup}, fewer where that would move more than a quarter budget. */
    static int warmupFor(long size, int warmup) {
        return (int) Math.min(warmup, Math.max(1, BUDGET / 4 / size));
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        Options o = BenchArgs.parseForRank(NAME, args, WriteBenchRankSample::parse);
        BenchArgs.requireRanks(NAME, env, 2);
        int rank = env.rank();
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        try (HostBackend backend = HostBackend.open();
             TcpBootstrap bs = TcpBootstrap.create(rank, 2, options)) {
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            try (DeviceBuffer buffer = backend.allocate(o.max());
                 Communicator comm = Communicator.create(bs, backend);
                 RegisteredMemory memory = comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC))) {
                Mesh mesh = Blocking.value(comm.mesh(memory, EndpointConfig.of(Transport.HOST_IPC)),
                        OP_TIMEOUT.plusSeconds(5), rank, "mesh");
                int peer = 1 - rank;
                Host2HostSemaphore sem = new Host2HostSemaphore(mesh.semaphore(peer));
                if (rank == 0) {
                    fillRandom(buffer.hostSegment());
                    try (DeviceBuffer copyTarget = backend.allocate(o.max())) {
                        for (long size : o.sizes()) {
                            System.out.println(measure(bs, mesh.connection(peer), mesh.remoteMemory(peer), memory,
                                    copyTarget, sem, size, o));
                            System.out.flush();
                        }
                    }
                } else {
                    for (int s = 0; s < o.sizes().size(); s++) {
                        check(bs, buffer.hostSegment(), sem);
                    }
                }
                // nobody unmaps while the peer may still write into or read its mapping
                Blocking.done(bs.barrier(OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), rank, "final barrier");
            }
        }
        return ExitCodes.OK;
    }

    /** Rank 0's part for one size; returns its WRITE line. */
    private static String measure(TcpBootstrap bs, Connection connection, RegisteredMemory remote,
                                  RegisteredMemory local, DeviceBuffer copyTarget, Host2HostSemaphore sem, long size,
                                  Options o) {
        int iters = itersFor(size, o.iters());
        int warmup = warmupFor(size, o.warmup());
        MemorySegment src = local.hostSegment();
        long ipcNanos = 0;
        for (int i = 0; i < warmup + iters; i++) {
            stamp(src, size, i);
            long t = System.nanoTime();
            connection.write(remote, 0, local, 0, size);
            connection.awaitFlush(OP_TIMEOUT);
            long d = System.nanoTime() - t;
            if (i >= warmup) {
                ipcNanos += d;
            }
        }
        int last = warmup + iters - 1;
        byte[] claim = ByteBuffer.allocate(3 * Long.BYTES).putLong(size).putLong(last).putLong(checksum(src, size))
                .array();
        Blocking.done(bs.send(1, TAG, claim, OP_TIMEOUT), OP_TIMEOUT, 0, "send the check of " + size + " B");
        sem.signal();
        Blocking.done(sem.nextSignal(OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), 0, "wait for the check of " + size + " B");
        String verdict = new String(Blocking.value(bs.recv(1, TAG, OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), 0,
                "receive the check of " + size + " B"), StandardCharsets.UTF_8);

        MemorySegment dst = copyTarget.hostSegment();
        long copyNanos = 0;
        for (int i = 0; i < warmup + iters; i++) {
            stamp(src, size, i);
            long t = System.nanoTime();
            MemorySegment.copy(src, 0, dst, 0, size);
            long d = System.nanoTime() - t;
            if (i >= warmup) {
                copyNanos += d;
            }
        }
        if (verdict.equals("ok") && dst.asSlice(0, size).mismatch(src.asSlice(0, size)) >= 0) {
            verdict = "the in-process copy differs from its source";
        }
        double moved = (double) size * iters;
        return String.format(Locale.ROOT, "WRITE size=%d iters=%d warmup=%d ipc_gbps=%.4f copy_gbps=%.4f check=%s",
                size, iters, warmup, moved / ipcNanos, moved / copyNanos, verdict);
    }

    /** Rank 1's part for one size: wait for rank 0's data, check it, answer, signal back. */
    private static void check(TcpBootstrap bs, MemorySegment dst, Host2HostSemaphore sem) {
        ByteBuffer claim = ByteBuffer.wrap(Blocking.value(bs.recv(0, TAG, OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), 1,
                "receive a check"));
        long size = claim.getLong();
        long last = claim.getLong();
        long sum = claim.getLong();
        Blocking.done(sem.nextSignal(OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), 1, "wait for the data of " + size + " B");
        String problem = verify(dst, size, last, sum);
        byte[] verdict = (problem == null ? "ok" : problem).getBytes(StandardCharsets.UTF_8);
        Blocking.done(bs.send(0, TAG, verdict, OP_TIMEOUT), OP_TIMEOUT, 1, "answer the check of " + size + " B");
        sem.signal();
    }

    /**
     * What is wrong with the first {@code size} bytes of {@code dst}, which should hold the source
     * as iteration {@code last} stamped it, with checksum {@code sum}: null when nothing is.
     */
    static @Nullable String verify(MemorySegment dst, long size, long last, long sum) {
        if (size > dst.byteSize()) {
            return "size " + size + " exceeds the buffer of " + dst.byteSize() + " bytes";
        }
        long want = stampValue(size, last);
        long[] offsets = stampOffsets(size, last);
        for (int k = 0; k < offsets.length; k++) {
            long at = offsets[k];
            if (overwrittenLater(offsets, k)) {
                continue;   // a later stamp word overlaps this one: the checksum covers what is left of it
            }
            long got = dst.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
            if (got != want) {
                return String.format(Locale.ROOT, "%d B: the word at %d holds 0x%016x, not iteration %d's stamp 0x%016x",
                        size, at, got, last, want);
            }
        }
        long have = checksum(dst, size);
        if (have != sum) {
            return String.format(Locale.ROOT, "%d B: checksum 0x%016x, the source's is 0x%016x", size, have, sum);
        }
        return null;
    }

    /** Whether a stamp word written after {@code offsets[k]} (in {@link #stamp}'s order) overlaps part of it. */
    static boolean overwrittenLater(long[] offsets, int k) {
        for (int j = k + 1; j < offsets.length; j++) {
            if (offsets[j] != offsets[k] && Math.abs(offsets[j] - offsets[k]) < Long.BYTES) {
                return true;
            }
        }
        return false;
    }

    /** Marks {@code src} with iteration {@code iteration}'s value at its stamp offsets, in order. */
    static void stamp(MemorySegment src, long size, long iteration) {
        long v = stampValue(size, iteration);
        for (long at : stampOffsets(size, iteration)) {
            src.set(ValueLayout.JAVA_LONG_UNALIGNED, at, v);
        }
    }

    /** A value that differs for every (size, iteration) and is never 0. */
    static long stampValue(long size, long iteration) {
        long z = size * 0x9E3779B97F4A7C15L + iteration + 1;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return z == 0 ? 1 : z;
    }

    /** The first word, the last word and a random word of [0, size), which must hold at least 8 bytes. */
    static long[] stampOffsets(long size, long iteration) {
        long random = new SplittableRandom(SEED ^ stampValue(size, iteration)).nextLong(size - Long.BYTES + 1);
        return new long[] {0, size - Long.BYTES, random};
    }

    /**
     * A 64-bit checksum of the first {@code size} bytes: four independent multiply-xor lanes over
     * 8-byte words (so it runs near memory speed), then the tail bytes and the size.
     */
    static long checksum(MemorySegment seg, long size) {
        long a = 0x243F6A8885A308D3L;
        long b = 0x13198A2E03707344L;
        long c = 0xA4093822299F31D0L;
        long d = 0x082EFA98EC4E6C89L;
        final long k = 0x9FB21C651E98DF25L;
        long i = 0;
        for (; i + 32 <= size; i += 32) {
            a = Long.rotateLeft((a ^ seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i)) * k, 29);
            b = Long.rotateLeft((b ^ seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i + 8)) * k, 29);
            c = Long.rotateLeft((c ^ seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i + 16)) * k, 29);
            d = Long.rotateLeft((d ^ seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i + 24)) * k, 29);
        }
        long h = a * 31 + Long.rotateLeft(b, 17) + Long.rotateLeft(c, 37) * 7 + Long.rotateLeft(d, 53) * 13;
        for (; i < size; i++) {
            h = (h ^ seg.get(ValueLayout.JAVA_BYTE, i)) * k;
        }
        return stampValue(h, size);
    }

    private static void fillRandom(MemorySegment seg) {
        SplittableRandom random = new SplittableRandom(SEED);
        long i = 0;
        for (; i + Long.BYTES <= seg.byteSize(); i += Long.BYTES) {
            seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, random.nextLong());
        }
        for (; i < seg.byteSize(); i++) {
            seg.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
        }
    }

    /** The options of {@code jmscclpp bench write} and of its ranks. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false, name = "write",
            description = "HOST_IPC write bandwidth between two processes, beside an in-process copy of the same sizes")
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--min", paramLabel = "S", converter = SampleArgs.Bytes.class,
                description = "the smallest size, K/M/G suffixes (default: 4K)")
        long min = 4 << 10;
        @Option(names = "--max", paramLabel = "S", converter = SampleArgs.Bytes.class,
                description = "the largest size (default: 256M)")
        long max = 256 << 20;
        @Option(names = "--iters", paramLabel = "N", description = "timed writes per size (default: 2000)")
        int iters = 2000;
        @Option(names = "--warmup", paramLabel = "N", description = "untimed writes first (default: 1000)")
        int warmup = 1000;

        @Override
        public void check() {
            SampleArgs.range("--iters", iters, 1, Integer.MAX_VALUE);
            SampleArgs.range("--warmup", warmup, 0, Integer.MAX_VALUE);
            BenchArgs.checkSizeRange(min, max);
        }
    }

    static Options parse(List<String> args) {
        Args a = SampleArgs.parse(new Args(), args);
        return new Options(a.min, a.max, a.iters, a.warmup);
    }

    @Override
    public Object options() {
        return new Args();
    }

    /** The arguments that make a rank run with {@code o}. */
    static List<String> args(Options o) {
        return List.of("--min", Long.toString(o.min()), "--max", Long.toString(o.max()), "--iters",
                Integer.toString(o.iters()), "--warmup", Integer.toString(o.warmup()));
    }
}
