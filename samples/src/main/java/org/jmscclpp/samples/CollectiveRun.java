package org.jmscclpp.samples;

import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jspecify.annotations.Nullable;

/**
 * One collective call as every rank of a job issues it, in the terms of nccl-tests: what the
 * collective samples and {@code jmscclpp bench coll} run, check and time. {@link CollectiveKind#SEND}
 * stands for nccl-tests' {@code sendrecv}: one group on every rank that sends {@code count} elements
 * to rank + 1 and receives {@code count} from rank − 1 (a ring); {@link CollectiveKind#RECV} is not
 * a run of its own.
 *
 * <p>Sizes follow nccl-tests: S ({@link #size()}) is the larger of a rank's send and receive bytes
 * (allgather: the whole output; reducescatter and alltoall: the whole input), and
 * {@link #countFor} turns an S into the call's count (per rank for allgather and reducescatter, per
 * peer for alltoall, rounded down to 16-byte chunks as nccl-tests does).
 *
 * @param kind    the operation
 * @param type    the element type
 * @param op      the reduction of reducing kinds, else null
 * @param root    the root of broadcast and reduce (nccl-tests' default: 0), else -1
 * @param n       ranks
 * @param count   the call's count, in {@link CollectiveKind}'s sense
 * @param inPlace NCCL's in-place form ({@link CollectiveKind} says which buffer layout)
 */
public record CollectiveRun(CollectiveKind kind, DataType type, @Nullable ReduceOp op, int root, int n, long count,
                            boolean inPlace) {

    public CollectiveRun {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(type, "type");
        if (kind == CollectiveKind.RECV) {
            throw invalid("a run is a sendrecv (SEND), never a RECV alone");
        }
        if (kind.reduces() != (op != null)) {
            throw invalid(kind.reduces() ? kind.label() + " needs a reduction" : kind.label() + " takes no reduction");
        }
        if (n < 1 || count < 0) {
            throw invalid("a run needs 1 rank or more and a count of 0 or more, not " + n + " and " + count);
        }
        if (kind.rooted() != (root >= 0) || root >= n) {
            throw invalid(kind.rooted() ? "root " + root + " is not a rank of " + n : kind.label() + " has no root");
        }
        if (inPlace && !hasInPlace(kind)) {
            throw invalid(label(kind) + " has no in-place form");
        }
    }

    /** The run of {@code kind} with the count that S = {@code sizeBytes} gives (see {@link #countFor}), out of place. */
    public static CollectiveRun of(CollectiveKind kind, DataType type, @Nullable ReduceOp op, int n, long sizeBytes) {
        return new CollectiveRun(kind, type, kind.reduces() ? op : null, kind.rooted() ? 0 : -1, n,
                countFor(kind, type, n, sizeBytes), false);
    }

    /** This run in place ({@code true}) or out of place. */
    public CollectiveRun placed(boolean inPlaceForm) {
        return new CollectiveRun(kind, type, op, root, n, count, inPlaceForm);
    }

    /** nccl-tests' name of the kind: {@code all_reduce}, ..., {@code sendrecv} for {@link CollectiveKind#SEND}. */
    public static String label(CollectiveKind kind) {
        return kind == CollectiveKind.SEND ? "sendrecv" : kind.label();
    }

    /** The kind's name as the samples and {@code --op} spell it: {@code allreduce}, {@code reducescatter}, {@code sendrecv}. */
    public static String sampleName(CollectiveKind kind) {
        return label(kind).replace("_", "").toLowerCase(Locale.ROOT);
    }

    /**
     * The kind named {@code name}: the sample names ({@code allreduce}, {@code sendrecv}), nccl-tests'
     * labels with or without {@code _perf} ({@code all_reduce_perf}), or the enum's names; any case.
     *
     * @throws IllegalArgumentException for any other name, listing the sample names
     */
    public static CollectiveKind parseKind(String name) {
        String v = name.strip().toLowerCase(Locale.ROOT);
        if (v.endsWith("_perf")) {
            v = v.substring(0, v.length() - "_perf".length());
        }
        for (CollectiveKind k : CollectiveKind.values()) {
            if (k == CollectiveKind.RECV) {
                continue;
            }
            boolean named = k == CollectiveKind.SEND ? v.equals("sendrecv")
                    : v.equals(k.label()) || v.equals(sampleName(k)) || v.equals(k.name().toLowerCase(Locale.ROOT));
            if (named) {
                return k;
            }
        }
        throw new IllegalArgumentException("unknown collective '" + name + "' (one of " + String.join(", ",
                Arrays.stream(CollectiveKind.values()).filter(k -> k != CollectiveKind.RECV)
                        .map(CollectiveRun::sampleName).toList()) + ")");
    }

    /** Whether the kind has NCCL's in-place form here (every kind but sendrecv). */
    public static boolean hasInPlace(CollectiveKind kind) {
        return kind != CollectiveKind.SEND && kind != CollectiveKind.RECV;
    }

    /**
     * The count nccl-tests runs for S = {@code sizeBytes}: S / element for allreduce, broadcast,
     * reduce and sendrecv; (S / element / n) rounded down to whole 16-byte chunks for allgather,
     * reducescatter and alltoall.
     */
    public static long countFor(CollectiveKind kind, DataType type, int n, long sizeBytes) {
        long elements = sizeBytes / type.bytes();
        return switch (kind) {
            case ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL -> (elements / n) & ~(16L / type.bytes() - 1);
            default -> elements;
        };
    }

    /** Elements of the send buffer a rank reads. */
    public long sendElements() {
        return kind.sendElements(count, n);
    }

    /** Elements of the receive buffer a rank writes (sendrecv: the count it receives). */
    public long recvElements() {
        return kind == CollectiveKind.SEND ? count : kind.recvElements(count, n);
    }

    /** nccl-tests' S in bytes: the larger of the send and receive bytes. */
    public long size() {
        return Math.max(sendElements(), recvElements()) * type.bytes();
    }

    /** Whether {@code rank} reads its input: every rank but the non-roots of a broadcast. */
    public boolean readsSend(int rank) {
        return kind != CollectiveKind.BROADCAST || rank == root;
    }

    /** Whether {@code rank} gets an output: every rank but the non-roots of a reduce. */
    public boolean writesRecv(int rank) {
        return kind != CollectiveKind.REDUCE || rank == root;
    }

    /** The peer {@code rank} sends to in a sendrecv: rank + 1. */
    public int next(int rank) {
        return (rank + 1) % n;
    }

    /** The peer {@code rank} receives from in a sendrecv: rank − 1. */
    public int previous(int rank) {
        return (rank + n - 1) % n;
    }

    /** {@code all_reduce 256 x float sum}, {@code broadcast 1024 x half root 0}, with {@code in place} where so. */
    public String describe() {
        return label(kind) + " " + count + " x " + type + (op != null ? " " + op : "") + (root >= 0 ? " root " + root
                : "") + (inPlace ? " in place" : "");
    }

    private static JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("collective run").build();
    }
}
