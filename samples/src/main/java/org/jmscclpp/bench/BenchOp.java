package org.jmscclpp.bench;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.jmscclpp.core.Bootstrap;
import reactor.core.publisher.Mono;

/**
 * The operations {@code jmscclpp bench bootstrap} times, each as one rank's part of one iteration.
 * The keys are shared with the benchmark's {@code BENCH} lines and with {@link MpiBaseline}.
 */
enum BenchOp {
    ALLGATHER_8B("allgather_8B", "allGather 8 B µs", false, true),
    ALLGATHER_64KIB("allgather_64KiB", "allGather 64 KiB/rank µs", false, false),
    BARRIER("barrier", "barrier µs", false, true),
    BROADCAST_1MIB("broadcast_1MiB", "broadcast 1 MiB µs", false, false),
    /** Rank 0 sends 8 B to rank 1, which sends them back. */
    SENDRECV_RTT_8B("sendrecv_rtt_8B", "send/recv RTT 8 B µs", true, true),
    /** Rank 0 sends 1 MiB to rank 1, which acknowledges with 1 byte; reported as GB/s (1e9 B/s). */
    SENDRECV_BW_1MIB("sendrecv_bw_1MiB", "send 1 MiB GB/s", true, false);

    static final int SMALL = 8;
    static final int MEDIUM = 64 << 10;
    static final int LARGE = 1 << 20;

    // Read-only payloads shared by every rank of a JVM: a thousand in-JVM ranks must not each own a MiB.
    private static final byte[] SMALL_PAYLOAD = pattern(SMALL);
    private static final byte[] MEDIUM_PAYLOAD = pattern(MEDIUM);
    private static final byte[] LARGE_PAYLOAD = pattern(LARGE);
    private static final byte[] ACK = {1};
    private static final byte[] NOTHING = {};

    private static final int TAG_PING = 1;
    private static final int TAG_PONG = 2;
    private static final int TAG_DATA = 3;
    private static final int TAG_ACK = 4;

    final String key;
    /** Small-message ops cost microseconds: they get the full warm-up, the bulk ones a tenth. */
    final boolean small;
    final String label;
    private final boolean pairOnly;

    BenchOp(String key, String label, boolean pairOnly, boolean small) {
        this.key = key;
        this.small = small;
        this.label = label;
        this.pairOnly = pairOnly;
    }

    /** The point-to-point operations run between ranks 0 and 1 of a 2-rank job only. */
    boolean appliesTo(int nRanks) {
        return !pairOnly || nRanks == 2;
    }

    /** Whether the table shows a bandwidth (higher is better) rather than a time. */
    boolean isBandwidth() {
        return this == SENDRECV_BW_1MIB;
    }

    /** The value the table shows for a median iteration time: µs, or GB/s for the bandwidth row. */
    double fromNanos(double nanos) {
        return isBandwidth() ? LARGE / nanos : nanos / 1e3;
    }

    /** Name of the value in a {@code BENCH} line. */
    String valueName() {
        return isBandwidth() ? "median_gbps" : "median_us";
    }

    /** Bytes the results of one iteration occupy over all ranks of one JVM (for the in-JVM memory check). */
    long resultBytesInOneJvm(int nRanks) {
        return switch (this) {
            case ALLGATHER_8B -> (long) nRanks * nRanks * SMALL;
            case ALLGATHER_64KIB -> (long) nRanks * nRanks * MEDIUM;
            case BROADCAST_1MIB -> (long) nRanks * LARGE;
            case BARRIER, SENDRECV_RTT_8B -> 0;
            case SENDRECV_BW_1MIB -> LARGE;
        };
    }

    /**
     * Warm-up iterations of this op: {@code warmup} for small messages, a tenth for bulk ones (their
     * per-byte work is in the JDK's copy loops, warm after a few hundred iterations, and a 64 KiB
     * allGather over 16 processes takes milliseconds).
     */
    int warmupOf(int warmup) {
        return small ? warmup : warmup / 10;
    }

    static List<BenchOp> applicable(int nRanks) {
        return Arrays.stream(values()).filter(op -> op.appliesTo(nRanks)).toList();
    }

    /** This rank's part of one iteration; lazy like every bootstrap operation. */
    Mono<Void> on(Bootstrap bs, Duration timeout) {
        int rank = bs.rank();
        return switch (this) {
            case ALLGATHER_8B -> bs.allGather(SMALL_PAYLOAD, timeout).then();
            case ALLGATHER_64KIB -> bs.allGather(MEDIUM_PAYLOAD, timeout).then();
            case BARRIER -> bs.barrier(timeout);
            case BROADCAST_1MIB -> bs.broadcast(0, rank == 0 ? LARGE_PAYLOAD : NOTHING, timeout).then();
            case SENDRECV_RTT_8B -> rank == 0
                    ? bs.send(1, TAG_PING, SMALL_PAYLOAD, timeout).then(bs.recv(1, TAG_PONG, timeout)).then()
                    : bs.recv(0, TAG_PING, timeout).flatMap(m -> bs.send(0, TAG_PONG, m, timeout));
            case SENDRECV_BW_1MIB -> rank == 0
                    ? bs.send(1, TAG_DATA, LARGE_PAYLOAD, timeout).then(bs.recv(1, TAG_ACK, timeout)).then()
                    : bs.recv(0, TAG_DATA, timeout).flatMap(m -> bs.send(0, TAG_ACK, ACK, timeout));
        };
    }

    private static byte[] pattern(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 31 + 7);
        }
        return b;
    }
}
