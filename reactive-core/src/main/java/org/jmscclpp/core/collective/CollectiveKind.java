package org.jmscclpp.core.collective;

import java.util.Arrays;
import java.util.Locale;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * The operations of a {@link CollectiveComm}, with nccl-tests' names ({@link #label()}) and what a
 * call's {@code count} counts, as NCCL defines it:
 * <table>
 *   <caption>count, send and receive sizes per kind (n ranks, count elements)</caption>
 *   <tr><th>kind</th><th>count is</th><th>send elements</th><th>recv elements</th><th>in place when</th></tr>
 *   <tr><td>ALL_REDUCE</td><td>elements</td><td>count</td><td>count</td><td>send = recv</td></tr>
 *   <tr><td>ALL_GATHER</td><td>elements per rank</td><td>count</td><td>n × count</td>
 *       <td>send = recv + rank × count</td></tr>
 *   <tr><td>REDUCE_SCATTER</td><td>elements per rank</td><td>n × count</td><td>count</td>
 *       <td>recv = send + rank × count</td></tr>
 *   <tr><td>BROADCAST</td><td>elements</td><td>count (root only)</td><td>count</td><td>send = recv</td></tr>
 *   <tr><td>REDUCE</td><td>elements</td><td>count</td><td>count (root only)</td><td>send = recv</td></tr>
 *   <tr><td>ALL_TO_ALL</td><td>elements per peer</td><td>n × count</td><td>n × count</td><td>send = recv</td></tr>
 *   <tr><td>SEND</td><td>elements</td><td>count</td><td>—</td><td>—</td></tr>
 *   <tr><td>RECV</td><td>elements</td><td>—</td><td>count</td><td>—</td></tr>
 * </table>
 * {@link #code()} is the value carried in a call's {@link CallDescriptor}.
 */
public enum CollectiveKind {
    ALL_REDUCE(1, "all_reduce", true),
    ALL_GATHER(2, "all_gather", false),
    REDUCE_SCATTER(3, "reduce_scatter", true),
    BROADCAST(4, "broadcast", false),
    REDUCE(5, "reduce", true),
    ALL_TO_ALL(6, "alltoall", false),
    SEND(7, "send", false),
    RECV(8, "recv", false);

    private final int code;
    private final String label;
    private final boolean reduces;

    CollectiveKind(int code, String label, boolean reduces) {
        this.code = code;
        this.label = label;
        this.reduces = reduces;
    }

    /** The kind's byte in a {@link CallDescriptor}. */
    public int code() {
        return code;
    }

    /** nccl-tests' name: {@code all_reduce}, {@code all_gather}, {@code reduce_scatter}, {@code broadcast}, {@code reduce}, {@code alltoall}, {@code send}, {@code recv}. */
    public String label() {
        return label;
    }

    /** Whether calls of this kind take a {@link ReduceOp}. */
    public boolean reduces() {
        return reduces;
    }

    /** Whether the kind has a root rank. */
    public boolean rooted() {
        return this == BROADCAST || this == REDUCE;
    }

    /** Whether the kind is point-to-point (a peer instead of every rank). */
    public boolean pointToPoint() {
        return this == SEND || this == RECV;
    }

    /** Elements of the send buffer a call of {@code count} reads on a job of {@code n} ranks (0 where none). */
    public long sendElements(long count, int n) {
        return switch (this) {
            case REDUCE_SCATTER, ALL_TO_ALL -> count * n;
            case RECV -> 0;
            default -> count;
        };
    }

    /** Elements of the receive buffer a call of {@code count} writes on a job of {@code n} ranks (0 where none). */
    public long recvElements(long count, int n) {
        return switch (this) {
            case ALL_GATHER, ALL_TO_ALL -> count * n;
            case SEND -> 0;
            default -> count;
        };
    }

    /**
     * nccl-tests' bus-bandwidth factor (busbw = algbw × factor) for {@code n} ranks: allreduce
     * 2(n−1)/n; allgather, reducescatter, alltoall (n−1)/n; broadcast, reduce, send/recv 1.
     */
    public double busFactor(int n) {
        return switch (this) {
            case ALL_REDUCE -> 2.0 * (n - 1) / n;
            case ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL -> (double) (n - 1) / n;
            default -> 1.0;
        };
    }

    /** The kind whose {@link #code()} is {@code code}; INVALID_USAGE otherwise. */
    public static CollectiveKind ofCode(int code) {
        for (CollectiveKind k : values()) {
            if (k.code == code) {
                return k;
            }
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no collective has the code " + code)
                .phase("collective kind").build();
    }

    /**
     * The kind named {@code name}: its label, its enum name, or the label without underscores
     * ({@code allreduce}, {@code allgather}, {@code reducescatter}); any case. INVALID_USAGE listing
     * the labels otherwise.
     */
    public static CollectiveKind parse(String name) {
        String n = name.strip().toLowerCase(Locale.ROOT).replace("-", "_");
        for (CollectiveKind k : values()) {
            if (k.label.equals(n) || k.name().toLowerCase(Locale.ROOT).equals(n)
                    || k.label.replace("_", "").equals(n.replace("_", ""))) {
                return k;
            }
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "unknown collective '" + name + "' (one of "
                + String.join(", ", Arrays.stream(values()).map(CollectiveKind::label).toList()) + ")")
                .phase("collective kind").build();
    }

    @Override
    public String toString() {
        return label;
    }
}
