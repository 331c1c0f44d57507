package org.jmscclpp.cuda.collective;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CallOptions;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.Reductions;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaGraph;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.cuda.GpuRankMain;
import org.jmscclpp.testkit.CollectiveReference;

/**
 * The CUDA collective engine's scenarios, one rank each ({@link GpuRankMain}): the public API on
 * real GPUs, every output checked on the host, bit for bit, against {@link Reductions} folding the
 * ranks' inputs in rank order (the kernels' arithmetic, proven equal to it by
 * {@code ReduceHeaderCrossCheckTest}); data moved without reduction compared byte for byte.
 * <ul>
 *   <li>{@code coll-matrix}: reducing kinds over many (type, op) pairs, moving kinds over four
 *       widths, counts {0, 1, 7, n − 1, 1000003}, offsets 0 and 13 bytes, in and out of place,
 *       each with ll16 (where it fits), the direct algorithm on registered buffers and on staged
 *       ones, push and ce (the copy engines) where a kind has them; then every kind at 256 MiB,
 *       registered (push and ce too) and staged; and sends and receives in a ring;</li>
 *   <li>{@code coll-external}: buffers wrapped from raw device pointers ({@link CudaBackend#wrap})
 *       and a stream wrapped from a raw handle ({@link CudaBackend#wrapStream}) with the stream form;</li>
 *   <li>{@code coll-graph}: allreduces (ll16 and rsag), an allgather by the copy engines (ce) and a ce
 *       allreduce of its output, of the stream form captured in a CUDA graph,
 *       replayed 5 times on fresh inputs;</li>
 *   <li>{@code coll-group}: one group mixing a ring of sends and receives, an alltoallv by sends
 *       and receives of uneven sizes, and two collectives;</li>
 *   <li>{@code coll-mismatch}: a ring of sends and receives whose last pair disagrees on the count
 *       (a message that travels inline, then one pulled, each on a collective communicator of its
 *       own) fails both ranks of that pair with INVALID_USAGE naming both counts and no other rank;
 *       ranks calling allreduce with different counts all fail with INVALID_USAGE naming both, and
 *       the communicator refuses later calls;</li>
 *   <li>{@code coll-crossing}: rank 0 sends to rank 1 (then receives from it) where every other
 *       rank calls allreduce (NCCL hangs there): every rank fails with INVALID_USAGE naming both
 *       calls, long before the deadline, each time on a collective communicator of its own;</li>
 *   <li>{@code coll-hosts}: run with the ranks on two pretend hosts ({@code MSCCLPP_HOSTID}), the
 *       hierarchical collectives: every kind, reductions within {@link CollectiveReference}'s bound.</li>
 * </ul>
 */
final class CollectiveScenarios {

    static final Duration LIMIT = Duration.ofSeconds(120);
    static final long LARGE = 1_000_003;
    static final long HUGE_BYTES = 256L << 20;
    static final byte POISON = (byte) 0x5A;

    private final GpuRankMain r;
    private final int rank;
    private final int n;
    private final CudaBackend backend;
    private final Arena arena = Arena.ofShared();
    private int calls;

    /** Reductions checked within the accumulation bound rather than byte for byte (the hierarchical engine's). */
    private boolean bounded;

    private CollectiveScenarios(GpuRankMain r) {
        this.r = r;
        this.rank = r.rank;
        this.n = r.n;
        this.backend = r.backend;
    }

    /** A rank of {@link CudaCollectivesGpuTest}'s jobs. */
    public static void main(String[] args) {
        GpuRankMain.run(args, CollectiveScenarios::run);
    }

    static void run(GpuRankMain r, String scenario, Map<String, String> args) {
        CollectiveScenarios s = new CollectiveScenarios(r);
        try (CollectiveComm comm = CollectiveComm.create(r.comm, CollectiveOptions.defaults().withTimeout(LIMIT))
                .block(LIMIT.plusSeconds(30))) {
            GpuRankMain.say("collective communicator " + comm + " algorithms " + comm.algorithms().stream()
                    .map(a -> a.kind().label() + ":" + a.name()).toList());
            long t0 = System.nanoTime();
            switch (scenario) {
                case "coll-matrix" -> s.matrix(comm);
                case "coll-external" -> {
                    s.external(comm);
                    s.hostMemory(comm);
                }
                case "coll-graph" -> s.graph((CudaCollectiveComm) comm);
                case "coll-group" -> s.group(comm);
                case "coll-mixed" -> s.mixedPlacement(comm);
                case "coll-mismatch" -> s.mismatch(comm);
                case "coll-crossing" -> s.crossing();
                case "coll-hosts" -> s.acrossHosts(comm);
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            }
            GpuRankMain.say(String.format("OK %s: %d calls checked in %.1f s", scenario, s.calls,
                    (System.nanoTime() - t0) / 1e9));
        } finally {
            s.arena.close();
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** The (type, op) pairs of the matrix: every type with sum, every op with float and bfloat16, and a few more. */
    static List<Object[]> reducingPairs() {
        List<Object[]> pairs = new ArrayList<>();
        for (DataType t : DataType.values()) {
            pairs.add(new Object[] {t, ReduceOp.SUM});
        }
        for (ReduceOp op : List.of(ReduceOp.PROD, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.AVG)) {
            pairs.add(new Object[] {DataType.FLOAT32, op});
            pairs.add(new Object[] {DataType.BFLOAT16, op});
        }
        pairs.add(new Object[] {DataType.INT32, ReduceOp.MIN});
        pairs.add(new Object[] {DataType.INT64, ReduceOp.PROD});
        pairs.add(new Object[] {DataType.UINT8, ReduceOp.AVG});
        pairs.add(new Object[] {DataType.FP8_E4M3, ReduceOp.MAX});
        pairs.add(new Object[] {DataType.FP8_E5M2, ReduceOp.AVG});
        pairs.add(new Object[] {DataType.FLOAT64, ReduceOp.MIN});
        pairs.add(new Object[] {DataType.FLOAT16, ReduceOp.MAX});
        return pairs;
    }

    private void matrix(CollectiveComm comm) {
        long maxBytes = Math.max(n * LARGE * 8 + 64, HUGE_BYTES + 64);
        DeviceBuffer sendRoot = backend.allocate(maxBytes);
        DeviceBuffer recvRoot = backend.allocate(maxBytes);
        DeviceBuffer sendStaged = backend.allocate(n * LARGE * 8 + 64);
        DeviceBuffer recvStaged = backend.allocate(n * LARGE * 8 + 64);
        try {
            comm.register(sendRoot).block(LIMIT);
            comm.register(recvRoot).block(LIMIT);
            List<String> failures = new ArrayList<>();
            for (Object[] pair : reducingPairs()) {
                DataType type = (DataType) pair[0];
                ReduceOp op = (ReduceOp) pair[1];
                for (CollectiveKind kind : List.of(CollectiveKind.ALL_REDUCE, CollectiveKind.REDUCE_SCATTER,
                        CollectiveKind.REDUCE)) {
                    cases(comm, kind, type, op, sendRoot, recvRoot, sendStaged, recvStaged, failures);
                }
            }
            for (DataType type : List.of(DataType.INT8, DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64)) {
                for (CollectiveKind kind : List.of(CollectiveKind.ALL_GATHER, CollectiveKind.BROADCAST,
                        CollectiveKind.ALL_TO_ALL, CollectiveKind.SEND)) {
                    cases(comm, kind, type, null, sendRoot, recvRoot, sendStaged, recvStaged, failures);
                }
            }
            GpuRankMain.say("matrix: " + calls + " calls, " + failures.size() + " failures");
            // every kind at 256 MiB (nccl-tests' S), float sum, registered and staged
            for (CollectiveKind kind : List.of(CollectiveKind.ALL_REDUCE, CollectiveKind.REDUCE_SCATTER,
                    CollectiveKind.REDUCE, CollectiveKind.ALL_GATHER, CollectiveKind.BROADCAST,
                    CollectiveKind.ALL_TO_ALL, CollectiveKind.SEND)) {
                long count = kind == CollectiveKind.ALL_GATHER || kind == CollectiveKind.REDUCE_SCATTER
                        || kind == CollectiveKind.ALL_TO_ALL ? HUGE_BYTES / 4 / n : HUGE_BYTES / 4;
                ReduceOp op = kind.reduces() ? ReduceOp.SUM : null;
                long t0 = System.nanoTime();
                check(comm, kind, DataType.FLOAT32, op, count, 0, false, null, sendRoot, recvRoot, failures);
                long t1 = System.nanoTime();
                if (kind != CollectiveKind.SEND) {
                    check(comm, kind, DataType.FLOAT32, op, count, 0, true, null, sendRoot, recvRoot, failures);
                }
                GpuRankMain.say(String.format("256 MiB %s float: %.0f ms with checks, in place %.0f ms",
                        kind.label(), (t1 - t0) / 1e6, (System.nanoTime() - t1) / 1e6));
                if (pushes(kind)) {
                    // several rounds of chunks a block, both parities of the slots reused
                    check(comm, kind, DataType.FLOAT32, op, count, 0, false, "push", sendRoot, recvRoot, failures);
                    check(comm, kind, DataType.FLOAT32, op, count, 0, true, "push", sendRoot, recvRoot, failures);
                }
                if (copiesByEngine(kind)) {
                    check(comm, kind, DataType.FLOAT32, op, count, 0, false, "ce", sendRoot, recvRoot, failures);
                    if (kind != CollectiveKind.SEND) {
                        check(comm, kind, DataType.FLOAT32, op, count, 0, true, "ce", sendRoot, recvRoot, failures);
                    }
                }
            }
            // staged 256 MiB pieces need a larger unregistered buffer: reuse the registered ones after deregistering
            comm.deregister(sendRoot).block(LIMIT);
            comm.deregister(recvRoot).block(LIMIT);
            for (CollectiveKind kind : List.of(CollectiveKind.ALL_REDUCE, CollectiveKind.ALL_GATHER,
                    CollectiveKind.ALL_TO_ALL, CollectiveKind.SEND)) {
                long count = kind == CollectiveKind.ALL_REDUCE || kind == CollectiveKind.SEND ? HUGE_BYTES / 4
                        : HUGE_BYTES / 4 / n;
                check(comm, kind, DataType.FLOAT32, kind.reduces() ? ReduceOp.SUM : null, count, 13, false,
                        null, sendRoot, recvRoot, failures);
            }
            // 256 MiB sends in pieces, from a staged send buffer into a registered receive buffer (pushed
            // piece by piece; from registered to registered, above, the first piece carries the whole message)
            comm.register(recvRoot).block(LIMIT);
            check(comm, CollectiveKind.SEND, DataType.FLOAT32, null, HUGE_BYTES / 4, 0, false, null, sendRoot,
                    recvRoot, failures);
            assertNoFailures(failures);
        } finally {
            recvStaged.close();
            sendStaged.close();
            recvRoot.close();
            sendRoot.close();
        }
    }

    /** Fails with how many checks failed and the first 20 of them, if any did. */
    private static void assertNoFailures(List<String> failures) {
        if (!failures.isEmpty()) {
            throw new AssertionError(failures.size() + " failures, the first: " + String.join("\n",
                    failures.subList(0, Math.min(20, failures.size()))));
        }
    }

    /** Every count, offset, placement and algorithm of one (kind, type, op). */
    private void cases(CollectiveComm comm, CollectiveKind kind, DataType type, ReduceOp op, DeviceBuffer sendRoot,
                       DeviceBuffer recvRoot, DeviceBuffer sendStaged, DeviceBuffer recvStaged, List<String> failures) {
        String direct = switch (kind) {
            case ALL_REDUCE -> "rsag";
            case REDUCE_SCATTER, REDUCE -> "rs";
            case SEND, RECV -> "direct";
            default -> "memory";
        };
        for (long count : new long[] {0, 1, 7, n - 1, LARGE}) {
            for (long offset : new long[] {0, 13}) {
                for (boolean inPlace : kind == CollectiveKind.SEND ? new boolean[] {false} : new boolean[] {false, true}) {
                    boolean llFits = count * type.bytes() <= (1L << 20);
                    if (llFits && kind != CollectiveKind.SEND) {
                        check(comm, kind, type, op, count, offset, inPlace, "ll16", sendStaged, recvStaged, failures);
                    }
                    check(comm, kind, type, op, count, offset, inPlace, direct, sendRoot, recvRoot, failures);
                    check(comm, kind, type, op, count, offset, inPlace, direct, sendStaged, recvStaged, failures);
                    if (pushes(kind)) {
                        check(comm, kind, type, op, count, offset, inPlace, "push", sendRoot, recvRoot, failures);
                        check(comm, kind, type, op, count, offset, inPlace, "push", sendStaged, recvStaged, failures);
                    }
                    if (copiesByEngine(kind)) {
                        check(comm, kind, type, op, count, offset, inPlace, "ce", sendRoot, recvRoot, failures);
                        check(comm, kind, type, op, count, offset, inPlace, "ce", sendStaged, recvStaged, failures);
                    }
                }
            }
        }
    }

    /**
     * Kinds with a ce algorithm (the copy engines; staged calls fall back to the direct one, sends
     * into an unregistered buffer, or below 1 MiB, too; allReduce on more than two ranks runs rsag).
     */
    private static boolean copiesByEngine(CollectiveKind kind) {
        return kind == CollectiveKind.ALL_GATHER || kind == CollectiveKind.ALL_TO_ALL || kind == CollectiveKind.BROADCAST
                || kind == CollectiveKind.SEND || kind == CollectiveKind.ALL_REDUCE;
    }

    /** Kinds with a push algorithm (stores only, in rounds; staged calls fall back to the direct one). */
    private static boolean pushes(CollectiveKind kind) {
        return kind == CollectiveKind.ALL_REDUCE || kind == CollectiveKind.REDUCE || kind == CollectiveKind.BROADCAST;
    }

    /**
     * allReduce with one rank in place and the other out of place (NCCL decides in place per rank),
     * by every algorithm, rank 0 in place and then rank 1: a ce call where a rank is in place runs push,
     * each rank deciding from both ranks' descriptors, so both must decide alike.
     */
    private void mixedPlacement(CollectiveComm comm) {
        long big = (64L << 20) / 4;
        // alltoall up to the scratch's 128 MiB (n x count elements a buffer)
        long a2aMax = (128L << 20) / 4 / n;
        DeviceBuffer sendRoot = backend.allocate(Math.max(big, n * a2aMax) * 4 + 64);
        DeviceBuffer recvRoot = backend.allocate(Math.max(big, n * a2aMax) * 4 + 64);
        try {
            comm.register(sendRoot).block(LIMIT);
            comm.register(recvRoot).block(LIMIT);
            List<String> failures = new ArrayList<>();
            for (String algorithm : new String[] {"ll16", "rsag", "push", "ce", null}) {
                for (long count : new long[] {7, LARGE, big}) {
                    if ("ll16".equals(algorithm) && count * 4 > (1L << 20)) {
                        continue;
                    }
                    for (int inPlaceRank = 0; inPlaceRank < 2; inPlaceRank++) {
                        check(comm, CollectiveKind.ALL_REDUCE, DataType.FLOAT32, ReduceOp.SUM, count, 0,
                                rank == inPlaceRank, 11 + inPlaceRank, " (rank " + inPlaceRank + " in place, the others"
                                        + " not)", algorithm, sendRoot, recvRoot, failures);
                    }
                }
            }
            // alltoall: the rank in place sends from a copy of its data (up to the scratch's 128 MiB), and
            // every rank in place too
            for (String algorithm : new String[] {"ll16", "memory", "ce", null}) {
                for (long count : new long[] {7, LARGE / n, a2aMax}) {
                    if ("ll16".equals(algorithm) && count * 4 > (1L << 20)) {
                        continue;
                    }
                    for (int inPlaceRank = -1; inPlaceRank < n; inPlaceRank++) {
                        boolean mine = inPlaceRank < 0 || rank == inPlaceRank;
                        check(comm, CollectiveKind.ALL_TO_ALL, DataType.FLOAT32, null, count, 0, mine,
                                13 + inPlaceRank, inPlaceRank < 0 ? " (every rank in place)" : " (rank " + inPlaceRank
                                        + " in place, the others not)", algorithm, sendRoot, recvRoot, failures);
                    }
                }
            }
            assertNoFailures(failures);
        } finally {
            recvRoot.close();
            sendRoot.close();
        }
    }

    /**
     * One call on every rank (each rank runs this with the same arguments) and the check of this
     * rank's output; appends a description to {@code failures} when wrong.
     */
    private void check(CollectiveComm comm, CollectiveKind kind, DataType type, ReduceOp op, long count, long offset,
                       boolean inPlace, String algorithm, DeviceBuffer sendRoot, DeviceBuffer recvRoot,
                       List<String> failures) {
        check(comm, kind, type, op, count, offset, inPlace, inPlace ? 7 : 0, "", algorithm, sendRoot, recvRoot,
                failures);
    }

    /** {@link #check}, with the inputs' seed salted by {@code salt} (the same on every rank) and a note for errors. */
    private void check(CollectiveComm comm, CollectiveKind kind, DataType type, ReduceOp op, long count, long offset,
                       boolean inPlace, long salt, String note, String algorithm, DeviceBuffer sendRoot,
                       DeviceBuffer recvRoot, List<String> failures) {
        int w = type.bytes();
        int root = (int) (calls % n);  // every rank in turn (the same on every rank: each runs the same calls)
        boolean ring = kind == CollectiveKind.SEND;
        long sendElements = ring ? count : kind.sendElements(count, n);
        long recvElements = ring ? count : kind.recvElements(count, n);
        long region = inPlace ? Math.max(sendElements, recvElements) * w : recvElements * w;
        long seed = 1000L * type.code() + count + offset + salt;
        String what = kind.label() + " " + type + (op == null ? "" : " " + op) + " count " + count + " offset " + offset
                + (inPlace ? " in place" : "") + note + (kind.rooted() ? " root " + root : "")
                + (algorithm == null ? "" : " " + algorithm) + " on "
                + (comm.isRegistered(sendRoot) ? "registered" : "staged") + " buffers";
        calls++;
        try (Arena local = Arena.ofConfined()) {
            checkIn(local, comm, kind, type, op, count, offset, inPlace, algorithm, sendRoot, recvRoot, failures, what,
                    sendElements, recvElements, region, seed, root, ring);
        }
    }

    private void checkIn(Arena arena, CollectiveComm comm, CollectiveKind kind, DataType type, ReduceOp op, long count,
                         long offset, boolean inPlace, String algorithm, DeviceBuffer sendRoot, DeviceBuffer recvRoot,
                         List<String> failures, String what, long sendElements, long recvElements, long region,
                         long seed, int root, boolean ring) {
        int w = type.bytes();
        // this rank's input, and every rank's for the reference
        long inputElements = Math.max(1, sendElements);
        MemorySegment[] inputs = new MemorySegment[n];
        for (int q = 0; q < n; q++) {
            inputs[q] = arena.allocate(inputElements * w, 8);
            CollectiveReference.fill(type, seed, q, 0, sendElements, inputs[q], 0);
        }
        // poison the receive region with a guard before and after it
        long guard = 16;
        fill(arena, recvRoot, offset, region + 2 * guard);
        long start = offset + guard;
        DeviceBuffer recv = recvRoot.slice(start, Math.max(1, recvElements * w));
        DeviceBuffer send;
        if (inPlace) {
            CollectiveReference.InPlace layout = CollectiveReference.InPlace.of(kind, recvRoot.slice(start,
                    Math.max(1, region)), rank, count, w, sendElements);
            send = layout.send();
            recv = layout.recv();
            if (layout.inputBytes() > 0) {
                backend.copyFromHost(recvRoot, start + layout.inputAt(), inputs[rank].asSlice(0, layout.inputBytes()));
            }
        } else {
            send = sendRoot.slice(offset, Math.max(1, sendElements * w));
            if (sendElements > 0) {
                backend.copyFromHost(sendRoot, offset, inputs[rank].asSlice(0, sendElements * w));
            }
        }
        // a peer's call may write into this rank's buffer as soon as it starts: the poison is in place first
        r.bootstrap.barrier(LIMIT).block(LIMIT);
        CollectiveComm c = algorithm == null ? comm : comm.with(CallOptions.algorithm(algorithm));
        try {
            if (ring) {
                DeviceBuffer s = send;
                DeviceBuffer rv = recv;
                c.group(g -> g.recv(rv, count, type, (rank + n - 1) % n).send(s, count, type, (rank + 1) % n))
                        .block(LIMIT);
            } else {
                c.execute(switch (kind) {
                    case ALL_REDUCE -> CollectiveCall.allReduce(send, recv, count, type, op);
                    case ALL_GATHER -> CollectiveCall.allGather(send, recv, count, type);
                    case REDUCE_SCATTER -> CollectiveCall.reduceScatter(send, recv, count, type, op);
                    case BROADCAST -> CollectiveCall.broadcast(send, recv, count, type, root);
                    case REDUCE -> CollectiveCall.reduce(send, recv, count, type, op, root);
                    case ALL_TO_ALL -> CollectiveCall.allToAll(send, recv, count, type);
                    default -> throw new IllegalArgumentException(kind.toString());
                }).block(LIMIT);
            }
        } catch (RuntimeException e) {
            throw new AssertionError(what + " failed on rank " + rank + ": " + e, e);
        }
        // the output and the guards
        MemorySegment around = arena.allocate(region + 2 * guard, 8);
        backend.copyToHost(around, recvRoot, offset);
        for (long i = 0; i < guard; i++) {
            if (around.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i) != POISON
                    || around.get(java.lang.foreign.ValueLayout.JAVA_BYTE, guard + region + i) != POISON) {
                failures.add(what + ": rank " + rank + " wrote outside its receive range");
                return;
            }
        }
        boolean writes = kind != CollectiveKind.REDUCE || rank == root;
        MemorySegment out = around.asSlice(guard + (inPlace && kind == CollectiveKind.REDUCE_SCATTER
                ? rank * count * w : 0), recvElements * w);
        String why = null;
        if (!writes) {
            if (!inPlace && !allPoison(out)) {
                why = "a non-root's receive buffer of a reduce was written";
            }
        } else if (count > 0) {
            why = switch (kind) {
                case ALL_REDUCE, REDUCE -> reduced(arena, type, op, inputs, 0, out, count);
                case REDUCE_SCATTER -> reduced(arena, type, op, inputs, rank * count * w, out, count);
                case BROADCAST -> same(inputs[root], 0, out, 0, count * w);
                case ALL_GATHER -> {
                    String bad = null;
                    for (int q = 0; q < n && bad == null; q++) {
                        bad = same(inputs[q], 0, out, q * count * w, count * w);
                    }
                    yield bad;
                }
                case ALL_TO_ALL -> {
                    String bad = null;
                    for (int q = 0; q < n && bad == null; q++) {
                        bad = same(inputs[q], rank * count * w, out, q * count * w, count * w);
                    }
                    yield bad;
                }
                default -> same(inputs[(rank + n - 1) % n], 0, out, 0, count * w);
            };
        }
        if (why != null) {
            failures.add(what + ": rank " + rank + ": " + why);
        }
        // nobody poisons the next case before every rank read this one's output
        r.bootstrap.barrier(LIMIT).block(LIMIT);
    }

    private void fill(Arena arena, DeviceBuffer root, long offset, long bytes) {
        MemorySegment poison = arena.allocate(bytes, 8);
        poison.fill(POISON);
        backend.copyFromHost(root, offset, poison);
    }

    private static boolean allPoison(MemorySegment s) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i) != POISON) {
                return false;
            }
        }
        return true;
    }

    private String reduced(Arena arena, DataType type, ReduceOp op, MemorySegment[] inputs, long inputOffset,
                           MemorySegment out, long count) {
        if (bounded) {
            long[] offsets = new long[n];
            java.util.Arrays.fill(offsets, inputOffset);
            return CollectiveReference.checkReduced(type, op, inputs, offsets, out, 0, count);
        }
        MemorySegment expected = arena.allocate(count * type.bytes(), 8);
        long[] offsets = new long[n];
        java.util.Arrays.fill(offsets, inputOffset);
        Reductions.reduce(type, op, inputs, offsets, expected, 0, count);
        return same(expected, 0, out, 0, count * type.bytes());
    }

    private static String same(MemorySegment expected, long expectedOffset, MemorySegment actual, long actualOffset,
                               long bytes) {
        long at = MemorySegment.mismatch(expected, expectedOffset, expectedOffset + bytes, actual, actualOffset,
                actualOffset + bytes);
        return at < 0 ? null : "byte " + at + " differs (expected 0x" + Integer.toHexString(expected.get(
                java.lang.foreign.ValueLayout.JAVA_BYTE, expectedOffset + at) & 0xFF) + ", got 0x"
                + Integer.toHexString(actual.get(java.lang.foreign.ValueLayout.JAVA_BYTE, actualOffset + at) & 0xFF)
                + ")";
    }

    // ---------------------------------------------------------------------------------------------

    /**
     * {@code coll-hosts}: the ranks span (pretend) hosts, so the engine runs the hierarchical
     * collectives; every kind over a spread of (type, op) pairs, counts, offsets and placements, the
     * reductions checked against the exact result within the accumulation bound (the hosts' partial
     * results are folded in another order than one host's), the rest byte for byte.
     */
    private void acrossHosts(CollectiveComm comm) {
        DeviceBuffer probe = backend.allocate(4L * LARGE);
        try {
            String small = comm.algorithmFor(CollectiveCall.allReduce(probe, probe, 1024, DataType.FLOAT32,
                    ReduceOp.SUM)).name();
            String large = comm.algorithmFor(CollectiveCall.allReduce(probe, probe, LARGE, DataType.FLOAT32,
                    ReduceOp.SUM)).name();
            GpuRankMain.say("allReduce runs " + small + " at 4 KiB, " + large + " at " + 4 * LARGE + " bytes");
            if (!large.equals("hier") || !List.of("hier", "flat").contains(small)) {
                throw new AssertionError("ranks that span hosts run the hierarchical allReduce (flat for small calls),"
                        + " not " + small + " at 4 KiB and " + large + " at " + 4 * LARGE + " bytes");
            }
        } finally {
            probe.close();
        }
        bounded = true;
        DeviceBuffer send = backend.allocate(n * LARGE * 8 + 64);
        DeviceBuffer recv = backend.allocate(n * LARGE * 8 + 64);
        try {
            List<String> failures = new ArrayList<>();
            List<Object[]> pairs = List.of(new Object[] {DataType.FLOAT32, ReduceOp.SUM},
                    new Object[] {DataType.BFLOAT16, ReduceOp.SUM}, new Object[] {DataType.FLOAT16, ReduceOp.AVG},
                    new Object[] {DataType.FP8_E4M3, ReduceOp.SUM}, new Object[] {DataType.FP8_E5M2, ReduceOp.PROD},
                    new Object[] {DataType.INT32, ReduceOp.SUM}, new Object[] {DataType.INT64, ReduceOp.PROD},
                    new Object[] {DataType.UINT8, ReduceOp.AVG}, new Object[] {DataType.FLOAT64, ReduceOp.MIN},
                    new Object[] {DataType.BFLOAT16, ReduceOp.MAX}, new Object[] {DataType.FLOAT32, ReduceOp.PROD});
            for (Object[] pair : pairs) {
                for (CollectiveKind kind : List.of(CollectiveKind.ALL_REDUCE, CollectiveKind.REDUCE_SCATTER,
                        CollectiveKind.REDUCE)) {
                    hostCases(comm, kind, (DataType) pair[0], (ReduceOp) pair[1], send, recv, failures);
                }
            }
            for (DataType type : List.of(DataType.INT8, DataType.FLOAT16, DataType.FLOAT32)) {
                for (CollectiveKind kind : List.of(CollectiveKind.ALL_GATHER, CollectiveKind.BROADCAST,
                        CollectiveKind.ALL_TO_ALL, CollectiveKind.SEND)) {
                    hostCases(comm, kind, type, null, send, recv, failures);
                }
            }
            GpuRankMain.say("across hosts: " + calls + " calls, " + failures.size() + " failures");
            assertNoFailures(failures);
        } finally {
            recv.close();
            send.close();
        }
    }

    private void hostCases(CollectiveComm comm, CollectiveKind kind, DataType type, ReduceOp op, DeviceBuffer send,
                           DeviceBuffer recv, List<String> failures) {
        for (long count : new long[] {0, 1, 7, n - 1, LARGE}) {
            // small calls both ways, whatever the table picks: hierarchical and flat (what adjust() gives a
            // flat call beyond its capacity is the table's large case)
            List<String> algorithms = kind == CollectiveKind.SEND ? Collections.singletonList(null)
                    : count == LARGE ? Collections.singletonList(null) : List.of("hier", "flat");
            for (String algorithm : algorithms) {
                for (long offset : new long[] {0, 13}) {
                    for (boolean inPlace : kind == CollectiveKind.SEND ? new boolean[] {false}
                            : new boolean[] {false, true}) {
                        check(comm, kind, type, op, count, offset, inPlace, algorithm, send, recv, failures);
                    }
                }
            }
        }
    }

    private void external(CollectiveComm comm) {
        CudaCollectiveComm cuda = (CudaCollectiveComm) comm;
        long count = 1 << 20;
        DeviceBuffer owner = backend.allocate(count * 4 * n);
        CudaStream own = backend.createStream("the caller's stream");
        try {
            // what a PyTorch tensor's data_ptr() and current stream give
            DeviceBuffer wrapped = backend.wrap(owner.address(), owner.size());
            CudaStream theirs = backend.wrapStream(own.handle(), "a wrapped stream");
            comm.register(wrapped).block(LIMIT);
            DeviceBuffer again = backend.wrap(owner.address() + 4 * count, 4 * count);
            if (!comm.isRegistered(again)) {
                throw new AssertionError("memory wrapped again inside a registered range is not found registered");
            }
            MemorySegment[] inputs = new MemorySegment[n];
            for (int q = 0; q < n; q++) {
                inputs[q] = arena.allocate(count * 4, 8);
                CollectiveReference.fill(DataType.FLOAT32, 77, q, 0, count, inputs[q], 0);
            }
            // the receive buffer a second wrap of the same pointer, as a caller passing data_ptr() twice: in place
            DeviceBuffer sameAgain = backend.wrap(owner.address(), owner.size());
            for (String algorithm : List.of("ll16", "rsag")) {
                long c = algorithm.equals("ll16") ? 1000 : count;
                backend.copyFromHost(wrapped, 0, inputs[rank].asSlice(0, c * 4));
                r.bootstrap.barrier(LIMIT).block(LIMIT);
                cuda.on(theirs, CallOptions.algorithm(algorithm)).allReduce(wrapped, sameAgain, c, DataType.FLOAT32,
                        ReduceOp.SUM);
                theirs.synchronize(LIMIT, "allreduce on a wrapped stream");
                cuda.asyncError().ifPresent(e -> {
                    throw e;
                });
                MemorySegment out = arena.allocate(c * 4, 8);
                backend.copyToHost(out, wrapped, 0);
                String why = reduced(arena, DataType.FLOAT32, ReduceOp.SUM, inputs, 0, out, c);
                if (why != null) {
                    throw new AssertionError(algorithm + " allreduce of " + c + " floats on wrapped memory and a"
                            + " wrapped stream: " + why);
                }
                calls++;
                r.bootstrap.barrier(LIMIT).block(LIMIT);
            }
            try {
                comm.allReduce(wrapped, backend.wrap(owner.address() + 4, 4 * count), count, DataType.FLOAT32,
                        ReduceOp.SUM).block(LIMIT);
                throw new AssertionError("an allreduce whose two wraps of one pointer overlap shifted ran");
            } catch (JmscclppException e) {
                if (e.code() != ErrorCode.INVALID_USAGE || !e.getMessage().contains("of the same memory overlap")) {
                    throw new AssertionError("expected INVALID_USAGE for shifted wraps of one pointer, got " + e, e);
                }
            }
            theirs.close();
            // the wrapped stream's close destroyed nothing: the caller's stream still works
            own.synchronize(LIMIT, "the caller's stream after its wrapper closed");
        } finally {
            own.close();
            owner.close();
        }
    }

    /**
     * Pinned host memory as the buffers of Mono calls ({@code allocateHostVisible}): a kernel that
     * writes into host memory orders its stores before the completion at the system's scope, so
     * each result is read from the host segment as soon as its call completes, with no copy or
     * synchronization between. Many calls, fresh inputs each; an allreduce and an allgather (ll16:
     * the kernel stores the result itself) and a send/recv ring.
     */
    private void hostMemory(CollectiveComm comm) {
        int count = 1000;
        long bytes = count * 4L;
        CollectiveComm ll = comm.with(CallOptions.algorithm("ll16"));
        try (DeviceBuffer send = backend.allocateHostVisible(bytes);
             DeviceBuffer recv = backend.allocateHostVisible(bytes * n)) {
            for (int round = 0; round < 50; round++) {
                MemorySegment[] inputs = new MemorySegment[n];
                for (int q = 0; q < n; q++) {
                    inputs[q] = arena.allocate(bytes, 8);
                    CollectiveReference.fill(DataType.FLOAT32, 300 + round, q, 0, count, inputs[q], 0);
                }
                MemorySegment.copy(inputs[rank], 0, send.hostSegment(), 0, bytes);
                ll.allReduce(send, recv, count, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT);
                String why = reduced(arena, DataType.FLOAT32, ReduceOp.SUM, inputs, 0, recv.hostSegment(), count);
                if (why != null) {
                    throw new AssertionError("round " + round + ": ll16 allreduce into host memory, read at"
                            + " completion: " + why);
                }
                ll.allGather(send, recv, count, DataType.FLOAT32).block(LIMIT);
                for (int q = 0; q < n; q++) {
                    why = same(inputs[q], 0, recv.hostSegment(), q * bytes, bytes);
                    if (why != null) {
                        throw new AssertionError("round " + round + ": ll16 allgather into host memory, read at"
                                + " completion, rank " + q + "'s part: " + why);
                    }
                }
                int next = (rank + 1) % n;
                int previous = (rank + n - 1) % n;
                comm.group(g -> {
                    g.send(send, count, DataType.FLOAT32, next);
                    g.recv(recv, count, DataType.FLOAT32, previous);
                }).block(LIMIT);
                why = same(inputs[previous], 0, recv.hostSegment(), 0, bytes);
                if (why != null) {
                    throw new AssertionError("round " + round + ": a receive into host memory from rank " + previous
                            + ", read at completion: " + why);
                }
                calls += 3;
                // the peers read this rank's send buffer in the ring: none writes its next input before all are done
                r.bootstrap.barrier(LIMIT).block(LIMIT);
            }
        }
    }

    /**
     * Captures an ll16 and an rsag allreduce, a ce allgather and a ce allreduce of what it gathered
     * (whose copies the copy proxy starts when the replayed kernels ask, no host call in between) into
     * a graph and replays it on fresh inputs; each graph
     * is captured anew (its calls are in place, so a second replay would sum sums), which still
     * proves that what one call hands the next (run counters, packet flags, semaphores) lives in
     * device memory: the captures come after calls outside any graph, and after each other.
     */
    private void graph(CudaCollectiveComm comm) {
        long count = 1 << 20;
        DeviceBuffer small = backend.allocate(4096 * 4);
        DeviceBuffer big = backend.allocate(count * 4);
        long slice = count / n;
        DeviceBuffer gatherIn = backend.allocate(slice * 4);
        DeviceBuffer gathered = backend.allocate(slice * 4 * n);
        DeviceBuffer summed = backend.allocate(slice * 4 * n);
        CudaStream stream = backend.createStream("graph capture");
        try {
            comm.register(big).block(LIMIT);
            comm.register(gatherIn).block(LIMIT);
            comm.register(gathered).block(LIMIT);
            comm.register(summed).block(LIMIT);
            MemorySegment[] smallIn = new MemorySegment[n];
            MemorySegment[] bigIn = new MemorySegment[n];
            MemorySegment[] gatherInputs = new MemorySegment[n];
            for (int replay = 0; replay < 5; replay++) {
                for (int q = 0; q < n; q++) {
                    smallIn[q] = arena.allocate(4096 * 4, 8);
                    bigIn[q] = arena.allocate(count * 4, 8);
                    CollectiveReference.fill(DataType.FLOAT32, 100 + replay, q, 0, 4096, smallIn[q], 0);
                    CollectiveReference.fill(DataType.FLOAT32, 200 + replay, q, 0, count, bigIn[q], 0);
                    gatherInputs[q] = arena.allocate(slice * 4, 8);
                    CollectiveReference.fill(DataType.FLOAT32, 300 + replay, q, 0, slice, gatherInputs[q], 0);
                }
                backend.copyFromHost(small, 0, smallIn[rank]);
                backend.copyFromHost(big, 0, bigIn[rank]);
                backend.copyFromHost(gatherIn, 0, gatherInputs[rank]);
                r.bootstrap.barrier(LIMIT).block(LIMIT);
                if (replay == 0) {
                    // one call of each outside the graph first: the kernels are compiled before the capture
                    comm.allReduce(small, small, 0, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT);
                }
                try (CudaGraph g = CudaGraph.capture(stream, () -> {
                    comm.on(stream, CallOptions.algorithm("ll16")).allReduce(small, small, 4096, DataType.FLOAT32,
                            ReduceOp.SUM);
                    comm.on(stream, CallOptions.algorithm("rsag")).allReduce(big, big, count, DataType.FLOAT32,
                            ReduceOp.SUM);
                    comm.on(stream, CallOptions.algorithm("ce")).allGather(gatherIn, gathered, slice, DataType.FLOAT32);
                    comm.on(stream, CallOptions.algorithm("ce")).allReduce(gathered, summed, slice * n,
                            DataType.FLOAT32, ReduceOp.SUM);
                })) {
                    // each replay runs the captured calls on the buffers' current contents
                    g.launch(stream);
                    stream.synchronize(LIMIT, "graph replay " + replay);
                }
                comm.asyncError().ifPresent(e -> {
                    throw e;
                });
                MemorySegment out = arena.allocate(count * 4, 8);
                backend.copyToHost(out.asSlice(0, 4096 * 4), small, 0);
                String why = reduced(arena, DataType.FLOAT32, ReduceOp.SUM, smallIn, 0, out, 4096);
                backend.copyToHost(out, big, 0);
                String whyBig = reduced(arena, DataType.FLOAT32, ReduceOp.SUM, bigIn, 0, out, count);
                if (why != null || whyBig != null) {
                    throw new AssertionError("graph replay " + replay + ": " + why + " / " + whyBig);
                }
                MemorySegment all = arena.allocate(slice * 4 * n, 8);
                backend.copyToHost(all, gathered, 0);
                for (int q = 0; q < n; q++) {
                    long at = all.asSlice(q * slice * 4, slice * 4).mismatch(gatherInputs[q]);
                    if (at >= 0) {
                        throw new AssertionError("graph replay " + replay + ": the ce allgather's slot of rank " + q
                                + " differs at byte " + at);
                    }
                }
                // every rank reduced the same gathered data
                MemorySegment[] gatheredEverywhere = new MemorySegment[n];
                Arrays.fill(gatheredEverywhere, all);
                MemorySegment sums = arena.allocate(slice * 4 * n, 8);
                backend.copyToHost(sums, summed, 0);
                String whySum = reduced(arena, DataType.FLOAT32, ReduceOp.SUM, gatheredEverywhere, 0, sums, slice * n);
                if (whySum != null) {
                    throw new AssertionError("graph replay " + replay + ": the ce allreduce: " + whySum);
                }
                calls += 4;
                r.bootstrap.barrier(LIMIT).block(LIMIT);
            }
        } finally {
            stream.close();
            summed.close();
            gathered.close();
            gatherIn.close();
            big.close();
            small.close();
        }
    }

    private void group(CollectiveComm comm) {
        long count = 300_000;
        DeviceBuffer send = backend.allocate(count * 4 * n);
        DeviceBuffer recv = backend.allocate(count * 4 * n);
        DeviceBuffer reduceIn = backend.allocate(count * 4);
        DeviceBuffer reduceOut = backend.allocate(count * 4);
        DeviceBuffer gathered = backend.allocate(4000L * n);
        try {
            for (boolean registered : new boolean[] {false, true}) {
                if (registered) {
                    comm.register(send).block(LIMIT);
                    comm.register(recv).block(LIMIT);
                }
                MemorySegment[] inputs = new MemorySegment[n];
                for (int q = 0; q < n; q++) {
                    inputs[q] = arena.allocate(count * 4 * n, 8);
                    CollectiveReference.fill(DataType.INT32, 5 + q, q, 0, count * n, inputs[q], 0);
                }
                backend.copyFromHost(send, 0, inputs[rank]);
                backend.copyFromHost(reduceIn, 0, inputs[rank].asSlice(0, count * 4));
                fill(arena, recv, 0, count * 4 * n);
                r.bootstrap.barrier(LIMIT).block(LIMIT);
                // an alltoallv: rank r sends (q + 1) * 1000 + r elements to q, from slot q, into slot r there
                comm.group(g -> {
                    for (int q = 0; q < n; q++) {
                        long c = (q + 1) * 1000L + rank;
                        g.send(send.slice(q * count * 4, c * 4), c, DataType.INT32, q);
                        long back = (rank + 1) * 1000L + q;
                        g.recv(recv.slice(q * count * 4, back * 4), back, DataType.INT32, q);
                    }
                    g.allReduce(reduceIn, reduceOut, count, DataType.INT32, ReduceOp.SUM);
                    g.allGather(reduceIn.slice(0, 4000), gathered, 1000, DataType.INT32);
                }).block(LIMIT);
                MemorySegment out = arena.allocate(count * 4 * n, 8);
                backend.copyToHost(out, recv, 0);
                for (int q = 0; q < n; q++) {
                    long back = (rank + 1) * 1000L + q;
                    String why = same(inputs[q], rank * count * 4, out, q * count * 4, back * 4);
                    if (why != null) {
                        throw new AssertionError("alltoallv by grouped sends and receives, from rank " + q + ": " + why);
                    }
                }
                MemorySegment sums = arena.allocate(count * 4, 8);
                backend.copyToHost(sums, reduceOut, 0);
                String why = reduced(arena, DataType.INT32, ReduceOp.SUM, inputs, 0, sums, count);
                if (why != null) {
                    throw new AssertionError("the allreduce of the group: " + why);
                }
                MemorySegment all = arena.allocate(4000L * n, 8);
                backend.copyToHost(all, gathered, 0);
                for (int q = 0; q < n && why == null; q++) {
                    why = same(inputs[q], 0, all, q * 4000L, 4000);
                }
                if (why != null) {
                    throw new AssertionError("the allgather of the group: " + why);
                }
                calls += 2 * n + 2;
                r.bootstrap.barrier(LIMIT).block(LIMIT);
            }
        } finally {
            gathered.close();
            reduceOut.close();
            reduceIn.close();
            recv.close();
            send.close();
        }
    }

    private void mismatch(CollectiveComm comm) {
        int tag = CollectiveOptions.DEFAULT_TAG;
        for (long count : new long[] {100, 300_000}) {
            pointToPointMismatch(count, ++tag);
        }
        DeviceBuffer b = backend.allocate(4096);
        try {
            long count = rank == 0 ? 100 : 99;
            for (String algorithm : List.of("ll16")) {
                JmscclppException e;
                try {
                    comm.with(CallOptions.algorithm(algorithm)).allReduce(b, b, count, DataType.FLOAT32,
                            ReduceOp.SUM).block(LIMIT);
                    throw new AssertionError("allreduce with counts 100 and 99 succeeded on rank " + rank);
                } catch (JmscclppException x) {
                    e = x;
                }
                GpuRankMain.say("mismatch reported as: " + e.getMessage());
                if (e.code() != ErrorCode.INVALID_USAGE || !e.getMessage().contains("count 99")
                        || !e.getMessage().contains("count 100")) {
                    throw new AssertionError("expected INVALID_USAGE naming both counts, got " + e, e);
                }
            }
            try {
                comm.allReduce(b, b, 1, DataType.FLOAT32, ReduceOp.SUM).block(LIMIT);
                throw new AssertionError("a broken communicator ran another call");
            } catch (JmscclppException e) {
                GpuRankMain.say("later call refused: " + e.getMessage());
            }
            calls += 2;
        } finally {
            b.close();
        }
    }

    /**
     * Rank 0 sends 4 ints to rank 1, then receives 4 from it, where the other ranks call allreduce:
     * every rank fails with INVALID_USAGE naming both calls, within 30 s of a 60 s deadline.
     */
    private void crossing() {
        int tag = CollectiveOptions.DEFAULT_TAG + 10;
        for (boolean send : new boolean[] {true, false}) {
            Duration deadline = Duration.ofSeconds(60);
            try (CollectiveComm comm = CollectiveComm.create(r.comm, CollectiveOptions.defaults().withTimeout(deadline)
                    .withTag(++tag)).block(LIMIT);
                 DeviceBuffer b = backend.allocate(64)) {
                long start = System.nanoTime();
                JmscclppException e;
                try {
                    if (rank == 0) {
                        (send ? comm.send(b, 4, DataType.INT32, 1) : comm.recv(b, 4, DataType.INT32, 1)).block(LIMIT);
                    } else {
                        comm.allReduce(b, b, 4, DataType.INT32, ReduceOp.SUM).block(LIMIT);
                    }
                    throw new AssertionError("rank " + rank + "'s call succeeded though the ranks' calls crossed");
                } catch (JmscclppException x) {
                    e = x;
                }
                Duration took = Duration.ofNanos(System.nanoTime() - start);
                GpuRankMain.say("crossed calls reported after " + took.toMillis() + " ms as: " + e.getMessage());
                String p2p = (send ? "send" : "recv") + "(count 4, int32, peer 1)";
                if (e.code() != ErrorCode.INVALID_USAGE || !e.getMessage().contains(p2p)
                        || !e.getMessage().contains("all_reduce(count 4, int32, sum")) {
                    throw new AssertionError("expected INVALID_USAGE naming " + p2p + " and the allreduce, got " + e, e);
                }
                if (took.compareTo(Duration.ofSeconds(30)) > 0) {
                    throw new AssertionError("the crossed calls failed after " + took + ", not at once");
                }
                calls++;
            }
            r.bootstrap.barrier(LIMIT).block(LIMIT);
        }
    }

    /**
     * Every rank sends {@code count} floats to the next and receives from the previous, rank 0 one
     * more than rank n - 1 sends: that pair fails, both its ranks, naming both counts (within the
     * deadline: the sender must not finish as if the receiver had agreed); the others succeed.
     */
    private void pointToPointMismatch(long count, int tag) {
        int next = (rank + 1) % n;
        int previous = (rank + n - 1) % n;
        long expected = rank == 0 ? count + 1 : count;
        boolean inPair = rank == 0 || rank == n - 1;
        try (CollectiveComm p2p = CollectiveComm.create(r.comm, CollectiveOptions.defaults().withTimeout(LIMIT)
                .withTag(tag)).block(LIMIT.plusSeconds(30));
             DeviceBuffer send = backend.allocate((count + 1) * 4);
             DeviceBuffer recv = backend.allocate((count + 1) * 4)) {
            JmscclppException e = null;
            try {
                p2p.group(g -> g.send(send, count, DataType.FLOAT32, next).recv(recv, expected, DataType.FLOAT32,
                        previous)).block(LIMIT);
            } catch (JmscclppException x) {
                e = x;
            }
            if (!inPair) {
                if (e != null) {
                    throw new AssertionError("rank " + rank + "'s sends and receives agree, yet it failed", e);
                }
                calls++;
                return;
            }
            if (e == null) {
                throw new AssertionError("a send of " + count + " floats received as " + (count + 1)
                        + " succeeded on rank " + rank);
            }
            GpuRankMain.say("send/recv mismatch reported as: " + e.getMessage());
            if (e.code() != ErrorCode.INVALID_USAGE || !e.getMessage().contains("count " + count)
                    || !e.getMessage().contains("count " + (count + 1))) {
                throw new AssertionError("expected INVALID_USAGE naming counts " + count + " and " + (count + 1)
                        + ", got " + e, e);
            }
            calls++;
        }
    }
}
