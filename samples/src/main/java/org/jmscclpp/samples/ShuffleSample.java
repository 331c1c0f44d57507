package org.jmscclpp.samples;

import static org.jmscclpp.samples.ShuffleDataSet.RECORD_BYTES;
import static org.jmscclpp.samples.ShuffleDataSet.WORD;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.DataType;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code shuffle [--backend host|cuda] [--records N] [--seed S]}: the exchange at the heart of a
 * distributed sort, join or group-by, on the public collective API ({@link CollectiveComm}). Every
 * rank holds N records of 16 bytes ({@link ShuffleDataSet}: an 8-byte key from a random stream of
 * its own, seeded from S, and an 8-byte value naming the record), hash-partitions them by key
 * across the ranks, and the ranks exchange them so that each ends with exactly the records whose
 * keys hash to it:
 * <ol>
 *   <li>partition: a counting sort of the records by destination rank into the send buffer, one
 *       run per destination, and {@link CollectiveComm#register} of it;</li>
 *   <li>{@link CollectiveComm#allToAll} of the record counts per destination (int64, one per
 *       rank), so that every rank learns how many records come from each rank;</li>
 *   <li>a receive buffer of the total, registered too (peers then copy straight from one
 *       registered buffer into the other, with no staging);</li>
 *   <li>the variable-size exchange (MPI's alltoallv) as one {@link CollectiveComm#group} of a
 *       send to and a receive from every rank, this rank included, the way PyTorch and NCCL users
 *       write it: the sends and receives of a group never deadlock each other, and the send to
 *       itself is matched by the receive from itself in the same group. Empty runs are sent too
 *       (count 0), so every rank issues the same calls whatever the data.</li>
 * </ol>
 * Then every rank checks, record by record, that it received exactly its records: it recomputes
 * every rank's data set from the seed and compares the multisets ({@link ShuffleDataSet#check}),
 * printing the first problems to stderr.
 *
 * <p>Rank 0 prints a table: per rank, the records it generated, kept (its own partition), sent to
 * peers and received in all, the megabytes it received from peers (moved), the time of the
 * exchange (the group, after a barrier) and that rate in GB/s; then the job's totals (the time is
 * the slowest rank's), the time of the counts' allToAll, and the verdict. Every rank exits 0 only
 * if every rank's check passed, 1 otherwise; bad arguments exit 2.
 *
 * <p>Flags: {@code --backend host} (the default: CPU ranks over shared memory) or {@code cuda}
 * (the buffers in GPU memory; records are generated and checked on the host and copied across);
 * {@code --records} per rank, default 1000000 (suffixes K, M, G are powers of 1024); {@code --seed},
 * default 42. For tests, {@code --corrupt R} makes rank R put its record 0 into the run of the
 * next rank after the one its key hashes to: the exchange runs as usual, and both ranks concerned
 * must report it. Every wait has the bootstrap's operation timeout.
 */
public final class ShuffleSample implements Sample {

    public static final String NAME = "shuffle";
    public static final String SYNOPSIS = "[--backend host|cuda] [--records 1000000] [--seed 42]: hash-partition every "
            + "rank's records, exchange them with allToAll (counts) and one group of sends and receives; every rank "
            + "checks it got exactly its keys";

    static final long DEFAULT_RECORDS = 1_000_000;
    static final long DEFAULT_SEED = 42;
    /** 4 GiB of records per rank. */
    static final long MAX_RECORDS = 1L << 28;

    /**
     * The options.
     *
     * @param corrupt the rank that misroutes its record 0, or -1
     */
    record Options(String backend, long records, long seed, int corrupt) {
    }

    /** One rank's result, gathered by every rank. */
    record Outcome(long records, long kept, long sent, long received, long movedBytes, long countsNanos,
                   long exchangeNanos, long expected, long wrong) {
        static final int BYTES = 9 * Long.BYTES;

        boolean ok() {
            return wrong == 0 && expected == received;
        }

        byte[] encode() {
            return ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(records).putLong(kept)
                    .putLong(sent).putLong(received).putLong(movedBytes).putLong(countsNanos).putLong(exchangeNanos)
                    .putLong(expected).putLong(wrong).array();
        }

        static Outcome decode(byte[] all, int rank) {
            ByteBuffer b = ByteBuffer.wrap(all, rank * BYTES, BYTES).order(ByteOrder.LITTLE_ENDIAN);
            return new Outcome(b.getLong(), b.getLong(), b.getLong(), b.getLong(), b.getLong(), b.getLong(),
                    b.getLong(), b.getLong(), b.getLong());
        }
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        Options o = parse(args);
        int rank = env.rank();
        int n = env.worldSize();
        if (o.corrupt() >= 0 && (n < 2 || o.corrupt() >= n)) {
            throw SampleArgs.usage(NAME, "--corrupt needs a rank of a job of at least 2 ranks, got " + o.corrupt()
                    + " of " + n);
        }
        ShuffleDataSet data = new ShuffleDataSet(o.seed(), n, o.records());
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        Duration timeout = options.operationTimeout();
        try (Backend backend = Backends.named(o.backend());
             TcpBootstrap bs = TcpBootstrap.create(rank, n, options)) {
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            Outcome mine;
            // closed in reverse: the collective communicator (and its registrations), the buffers, the communicator
            try (Communicator communicator = Communicator.create(bs, backend);
                 Owned buffers = new Owned();
                 CollectiveComm comm = Blocking.value(CollectiveComm.create(communicator), backstop(timeout), rank,
                         "collective setup")) {
                mine = shuffle(comm, backend, buffers, bs, data, o.corrupt(), timeout);
                // no rank frees a registered buffer while a peer may still copy from it
                Blocking.done(bs.barrier(timeout), backstop(timeout), rank, "barrier after the check");
            }
            byte[] all = Blocking.value(bs.allGather(mine.encode(), timeout), backstop(timeout), rank, "gather results");
            List<Outcome> outcomes = IntStream.range(0, n).mapToObj(r -> Outcome.decode(all, r)).toList();
            if (rank == 0) {
                System.out.print(report(o, n, backend.name(), outcomes));
            }
            System.out.flush();
            return outcomes.stream().allMatch(Outcome::ok) ? ExitCodes.OK : ExitCodes.FAILURE;
        }
    }

    /** One rank's shuffle: partition, counts, receive buffer, exchange, check. */
    static Outcome shuffle(CollectiveComm comm, Backend backend, Owned buffers, TcpBootstrap bs, ShuffleDataSet data,
                           int corrupt, Duration timeout) {
        int rank = comm.rank();
        int n = comm.size();
        long records = data.records();
        boolean misroute = rank == corrupt;

        // 1. partition: a counting sort by destination
        long[] sendCounts = new long[n];
        for (long i = 0; i < records; i++) {
            sendCounts[destination(data, rank, i, misroute)]++;
        }
        long[] sendFirst = firsts(sendCounts);
        DeviceBuffer send = buffers.own(backend.allocate(bufferBytes(records)));
        write(backend, send, records * RECORD_BYTES, segment -> {
            long[] next = sendFirst.clone();
            for (long i = 0; i < records; i++) {
                long at = next[destination(data, rank, i, misroute)]++ * RECORD_BYTES;
                segment.set(WORD, at, data.key(rank, i));
                segment.set(WORD, at + 8, ShuffleDataSet.value(rank, i));
            }
        });
        Blocking.done(comm.register(send), backstop(timeout), rank, "register the send buffer");

        // 2. the counts: record counts per destination, one int64 per rank
        DeviceBuffer countsOut = buffers.own(backend.allocate((long) n * Long.BYTES));
        DeviceBuffer countsIn = buffers.own(backend.allocate((long) n * Long.BYTES));
        write(backend, countsOut, (long) n * Long.BYTES, segment -> {
            for (int p = 0; p < n; p++) {
                segment.set(WORD, (long) p * Long.BYTES, sendCounts[p]);
            }
        });
        Blocking.done(bs.barrier(timeout), backstop(timeout), rank, "barrier before the counts");
        long countsStart = System.nanoTime();
        Blocking.done(comm.allToAll(countsOut, countsIn, 1, DataType.INT64), backstop(timeout), rank,
                "allToAll of the counts");
        long countsNanos = System.nanoTime() - countsStart;
        long[] recvCounts = read(backend, countsIn, (long) n * Long.BYTES, segment -> {
            long[] c = new long[n];
            for (int p = 0; p < n; p++) {
                c[p] = segment.get(WORD, (long) p * Long.BYTES);
            }
            return c;
        });
        for (int p = 0; p < n; p++) {
            if (recvCounts[p] < 0 || recvCounts[p] > records) {
                throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "rank " + p + " announced " + recvCounts[p]
                        + " records for this rank, but holds " + records).rank(rank).peer(p).phase(NAME + " counts")
                        .build();
            }
        }
        long[] recvFirst = firsts(recvCounts);
        long total = recvFirst[n - 1] + recvCounts[n - 1];

        // 3. the receive buffer
        DeviceBuffer recv = buffers.own(backend.allocate(bufferBytes(total)));
        Blocking.done(comm.register(recv), backstop(timeout), rank, "register the receive buffer");

        // 4. the exchange: alltoallv as one group of sends and receives, this rank's own run included
        Blocking.done(bs.barrier(timeout), backstop(timeout), rank, "barrier before the exchange");
        long exchangeStart = System.nanoTime();
        Blocking.done(comm.group(g -> {
            for (int p = 0; p < n; p++) {
                g.send(run(send, sendFirst[p], sendCounts[p]), 2 * sendCounts[p], DataType.INT64, p);
                g.recv(run(recv, recvFirst[p], recvCounts[p]), 2 * recvCounts[p], DataType.INT64, p);
            }
        }), backstop(timeout), rank, "exchange");
        long exchangeNanos = System.nanoTime() - exchangeStart;

        // 5. the check
        ShuffleDataSet.Verdict verdict = read(backend, recv, total * RECORD_BYTES,
                segment -> data.check(segment, total, rank));
        if (!verdict.ok()) {
            System.err.printf(Locale.ROOT, "%s: rank %d: %d wrong records (expected %d records, received %d)%n", NAME,
                    rank, verdict.wrong(), verdict.expected(), verdict.received());
            verdict.problems().forEach(p -> System.err.println(NAME + ": rank " + rank + ": " + p));
        }
        long moved = (total - recvCounts[rank]) * RECORD_BYTES;
        return new Outcome(records, sendCounts[rank], records - sendCounts[rank], total, moved, countsNanos,
                exchangeNanos, verdict.expected(), verdict.wrong());
    }

    /** Where record {@code i} of {@code rank} goes: its key's rank, or the next one for a misrouted record 0. */
    private static int destination(ShuffleDataSet data, int rank, long i, boolean misroute) {
        int p = data.partition(data.key(rank, i));
        return misroute && i == 0 ? (p + 1) % data.ranks() : p;
    }

    /** The first record of each run, for runs of {@code counts} records laid end to end. */
    private static long[] firsts(long[] counts) {
        long[] first = new long[counts.length];
        for (int p = 1; p < counts.length; p++) {
            first[p] = first[p - 1] + counts[p - 1];
        }
        return first;
    }

    /** A buffer holds at least one record: a backend allocates at least one byte. */
    private static long bufferBytes(long records) {
        return Math.max(1, records) * RECORD_BYTES;
    }

    /** The run of {@code count} records from record {@code first}; the whole buffer for an empty run (a slice is never empty). */
    private static DeviceBuffer run(DeviceBuffer buffer, long first, long count) {
        return count == 0 ? buffer : buffer.slice(first * RECORD_BYTES, count * RECORD_BYTES);
    }

    /**
     * Fills the first {@code bytes} of {@code buffer} with {@code fill}: in place where the host
     * reaches the buffer (shared memory), else in host memory then copied over.
     */
    private static void write(Backend backend, DeviceBuffer buffer, long bytes, Consumer<MemorySegment> fill) {
        if (bytes == 0) {
            return;
        }
        if (buffer.hostAccessible()) {
            fill.accept(buffer.hostSegment().asSlice(0, bytes));
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(bytes, 16);
            fill.accept(host);
            backend.copyFromHost(buffer, 0, host);
        }
    }

    /** {@code use} of the first {@code bytes} of {@code buffer}: in place where the host reaches it, else a host copy. */
    private static <T> T read(Backend backend, DeviceBuffer buffer, long bytes, Function<MemorySegment, T> use) {
        if (buffer.hostAccessible()) {
            return use.apply(buffer.hostSegment().asSlice(0, bytes));
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(Math.max(1, bytes), 16).asSlice(0, bytes);
            backend.copyToHost(host, buffer, 0);
            return use.apply(host);
        }
    }

    /** What rank 0 prints: the job, a line per rank, the totals, the counts' time and the verdict. */
    static String report(Options o, int n, String backend, List<Outcome> outcomes) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%s: %d ranks, %d records of %d B per rank (seed %d), %s backend, "
                + "registered buffers%n", NAME, n, o.records(), RECORD_BYTES, o.seed(), backend));
        String row = "%-5s %12s %12s %12s %12s %10s %12s %8s  %s%n";
        b.append(String.format(Locale.ROOT, row, "rank", "records", "kept", "sent", "received", "MB moved",
                "exchange ms", "GB/s", "check"));
        long records = 0;
        long kept = 0;
        long sent = 0;
        long received = 0;
        long moved = 0;
        long slowest = 0;
        long slowestCounts = 0;
        List<Integer> failed = new ArrayList<>();
        long wrong = 0;
        for (int r = 0; r < outcomes.size(); r++) {
            Outcome x = outcomes.get(r);
            b.append(String.format(Locale.ROOT, row, r, x.records(), x.kept(), x.sent(), x.received(),
                    megabytes(x.movedBytes()), millis(x.exchangeNanos()), rate(x.movedBytes(), x.exchangeNanos()),
                    x.ok() ? "OK" : "FAILED"));
            records += x.records();
            kept += x.kept();
            sent += x.sent();
            received += x.received();
            moved += x.movedBytes();
            slowest = Math.max(slowest, x.exchangeNanos());
            slowestCounts = Math.max(slowestCounts, x.countsNanos());
            wrong += x.wrong();
            if (!x.ok()) {
                failed.add(r);
            }
        }
        b.append(String.format(Locale.ROOT, row, "all", records, kept, sent, received, megabytes(moved),
                millis(slowest), rate(moved, slowest), failed.isEmpty() ? "OK" : "FAILED"));
        b.append(String.format(Locale.ROOT, "%s: counts allToAll %.1f µs, exchange %s ms (slowest rank)%n", NAME,
                slowestCounts / 1e3, millis(slowest)));
        b.append(failed.isEmpty()
                ? String.format(Locale.ROOT, "%s: every rank received exactly its keys (%d records checked): OK%n",
                        NAME, received)
                : String.format(Locale.ROOT, "%s: FAILED: %d wrong records on ranks %s%n", NAME, wrong, failed));
        return b.toString();
    }

    private static String megabytes(long bytes) {
        return String.format(Locale.ROOT, "%.2f", bytes / 1e6);
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.2f", nanos / 1e6);
    }

    private static String rate(long bytes, long nanos) {
        return String.format(Locale.ROOT, "%.2f", nanos == 0 ? 0 : (double) bytes / nanos);
    }

    /** A Mono's deadline in a blocking wait: the operation's own timeout fires first. */
    private static Duration backstop(Duration timeout) {
        return timeout.plusSeconds(5);
    }

    /** The options as picocli reads them. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false)
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--backend", paramLabel = "host|cuda", description = "the backend (default: host)")
        String backend = "host";
        @Option(names = "--records", paramLabel = "N", converter = SampleArgs.Count.class,
                description = "records per rank, K/M suffixes (default: 1000000)")
        long records = DEFAULT_RECORDS;
        @Option(names = "--seed", paramLabel = "S", converter = SampleArgs.Word.class,
                description = "the data set's seed, decimal or 0x hexadecimal (default: 42)")
        long seed = DEFAULT_SEED;
        @Option(names = "--corrupt", paramLabel = "R", hidden = true,
                description = "rank R corrupts one record it sends (tests the check)")
        @Nullable Integer corrupt;

        @Override
        public void check() {
            if (!backend.equals("host") && !backend.equals("cuda")) {
                throw new IllegalArgumentException("--backend is one of host, cuda, got '" + backend + "'");
            }
            SampleArgs.range("--records", records, 1, MAX_RECORDS);
            if (corrupt != null) {
                SampleArgs.range("--corrupt", corrupt, 0, Integer.MAX_VALUE);
            }
        }
    }

    static Options parse(List<String> list) {
        Args a = SampleArgs.parse(NAME, new Args(), list);
        Integer corrupt = a.corrupt;
        return new Options(a.backend, a.records, a.seed, corrupt != null ? corrupt : -1);
    }

    @Override
    public Object options() {
        return new Args();
    }
}
