package org.jmscclpp.core.collective;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.IntFunction;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * What each rank tells its peers about a call before any data of it moves, so that ranks that
 * disagree fail together instead of hanging or corrupting memory: four little-endian 64-bit words,
 * written by both the host engine (into the peers' mailboxes) and the CUDA kernels (as packets).
 * <pre>
 * word  bits    meaning
 *  0    0-7     kind ({@link CollectiveKind#code()})
 *       8-15    type ({@link DataType#code()})
 *       16-23   reduction ({@link ReduceOp#code()}), 0xFF for kinds without one
 *       24-31   algorithm id ({@link Algorithm#id()})
 *       32-39   flags: bit 0 {@link #DIRECT} (the call runs on registered buffers, not staged), bit 1
 *               {@link #INLINE} (a SEND whose data travels with its descriptor), bit 2
 *               {@link #STAGED_IN_PLACE} (an allToAll in place on registered buffers, staged)
 *       40-63   root (BROADCAST, REDUCE) or peer (SEND: the destination; RECV: the source) + 1; 0 for none
 *  1    0-63    count
 *  2    0-63    where this rank's send data is ({@link #location}), 0 when staged or unused
 *  3    0-63    where this rank's receive buffer is, 0 when staged or unused
 * </pre>
 * Words 0 and 1 must be equal on every rank of a collective call; for point-to-point calls the
 * SEND of rank a to b and the RECV of b from a must agree on type, count and algorithm. Words 2 and
 * 3 are addresses, not compared: a location is bit 63 set, the registration index in bits 48-62
 * and the byte offset into the registered buffer in bits 0-47.
 */
public record CallDescriptor(CollectiveKind kind, DataType type, @Nullable ReduceOp op, int algorithm, int flags,
                             int rootOrPeer, long count, long sendLocation, long recvLocation) {

    /** Bytes of the encoded form. */
    public static final int BYTES = 32;
    /** Flag: the call runs on registered buffers that peers access directly. */
    public static final int DIRECT = 1;
    /**
     * Flag: a point-to-point SEND whose data travels as packets right behind its descriptor (the
     * CUDA engine's small messages), so the receiver reads nothing of the sender's memory.
     */
    public static final int INLINE = 2;
    /**
     * Flag: an allToAll in place on registered buffers that this rank's engine stages all the same
     * (AbstractCollectiveComm#stagesInPlaceAllToAll: the CUDA engine's, beyond its staging areas), so
     * that a peer running the call out of place is told why the ranks differ.
     */
    public static final int STAGED_IN_PLACE = 4;
    /** Largest registration index a location can carry. */
    public static final int MAX_REGISTRATIONS = (1 << 15) - 1;
    /** Largest offset a location can carry. */
    public static final long MAX_OFFSET = (1L << 48) - 1;

    /** The descriptor of {@code call} on a rank, with the algorithm's id, flags and locations. */
    public static CallDescriptor of(CollectiveCall call, int algorithm, int flags, long sendLocation, long recvLocation) {
        int rootOrPeer = call.kind().rooted() ? call.root() : call.kind().pointToPoint() ? call.peer() : -1;
        return new CallDescriptor(call.kind(), call.type(), call.op(), algorithm, flags, rootOrPeer, call.count(),
                sendLocation, recvLocation);
    }

    /** A location: registration {@code index} (0 to {@value #MAX_REGISTRATIONS}), {@code offset} bytes into it. */
    public static long location(int index, long offset) {
        if (index < 0 || index > MAX_REGISTRATIONS || offset < 0 || offset > MAX_OFFSET) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "registration " + index + " offset " + offset
                    + " does not fit a descriptor").phase("descriptor").build();
        }
        return Long.MIN_VALUE | ((long) index << 48) | offset;
    }

    public static boolean isLocation(long location) {
        return location < 0;
    }

    public static int locationIndex(long location) {
        return (int) ((location >>> 48) & MAX_REGISTRATIONS);
    }

    public static long locationOffset(long location) {
        return location & MAX_OFFSET;
    }

    public boolean direct() {
        return (flags & DIRECT) != 0;
    }

    /** This descriptor with {@code flag} ({@link #DIRECT}, {@link #INLINE}) set as well. */
    public CallDescriptor with(int flag) {
        return new CallDescriptor(kind, type, op, algorithm, flags | flag, rootOrPeer, count, sendLocation,
                recvLocation);
    }

    /** Whether the {@link #STAGED_IN_PLACE} flag is set. */
    public boolean stagedInPlace() {
        return (flags & STAGED_IN_PLACE) != 0;
    }

    /** Whether the {@link #INLINE} flag is set. */
    public boolean inline() {
        return (flags & INLINE) != 0;
    }

    /** Word 0 of the encoded form. */
    public long word0() {
        long opCode = op == null ? 0xFF : op.code();
        return (kind.code() & 0xFFL) | (type.code() & 0xFFL) << 8 | opCode << 16 | (algorithm & 0xFFL) << 24
                | (flags & 0xFFL) << 32 | ((rootOrPeer + 1L) & 0xFFFFFFL) << 40;
    }

    /** The four words of the encoded form. */
    public long[] words() {
        return new long[] {word0(), count, sendLocation, recvLocation};
    }

    /**
     * Decodes the four words; {@code from} names the rank that sent them in errors.
     *
     * @throws JmscclppException INVALID_USAGE when a code is not a kind, type or reduction
     */
    public static CallDescriptor decode(long[] words, int from) {
        long w = words[0];
        try {
            int opCode = (int) ((w >>> 16) & 0xFF);
            return new CallDescriptor(CollectiveKind.ofCode((int) (w & 0xFF)), DataType.ofCode((int) ((w >>> 8) & 0xFF)),
                    opCode == 0xFF ? null : ReduceOp.ofCode(opCode), (int) ((w >>> 24) & 0xFF), (int) ((w >>> 32) & 0xFF),
                    (int) ((w >>> 40) & 0xFFFFFF) - 1, words[1], words[2], words[3]);
        } catch (JmscclppException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "rank " + from + " sent a call descriptor that"
                    + " does not decode (" + e.detail() + "): 0x" + Long.toHexString(w)).peer(from).phase("descriptor")
                    .build();
        }
    }

    /**
     * Why a collective call's descriptors disagree, or empty when they agree: every rank's
     * descriptor by rank, compared with rank 0's (the same text on every rank that has them all).
     * {@code algorithmName} names algorithm ids.
     */
    public static Optional<String> mismatch(List<CallDescriptor> byRank, IntFunction<String> algorithmName) {
        CallDescriptor first = byRank.get(0);
        List<String> differ = new ArrayList<>();
        for (int r = 1; r < byRank.size(); r++) {
            CallDescriptor d = byRank.get(r);
            if (d.word0() != first.word0() || d.count != first.count) {
                differ.add("rank " + r + " " + d.differences(first, algorithmName));
            }
        }
        if (differ.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of("the ranks called different collectives: rank 0 " + first.describe(algorithmName) + ", "
                + String.join(", ", differ));
    }

    /**
     * Why a SEND and the RECV that should match it disagree (kinds, type, count or algorithm), or
     * empty when they agree.
     */
    public static Optional<String> pointToPointMismatch(int sender, CallDescriptor send, int receiver,
                                                        CallDescriptor recv, IntFunction<String> algorithmName) {
        boolean ok = send.kind == CollectiveKind.SEND && recv.kind == CollectiveKind.RECV && send.type == recv.type
                && send.count == recv.count && send.algorithm == recv.algorithm && send.rootOrPeer == receiver
                && recv.rootOrPeer == sender;
        if (ok) {
            return Optional.empty();
        }
        return Optional.of("rank " + sender + " " + send.describe(algorithmName) + " does not match rank " + receiver
                + " " + recv.describe(algorithmName));
    }

    /**
     * Why a rank's call and a peer's differ in kind, one a send or receive and the other a
     * collective (their descriptions given): the message of both engines' crossed-calls error.
     */
    public static String crossedCalls(int peer, String theirs, String mine) {
        return "rank " + peer + " called " + theirs + " where this rank calls " + mine + ": the ranks' calls differ"
                + " in kind (every rank makes the same collectives in the same order, and each send its receive)";
    }

    /** {@code allReduce(count 1000, float, sum) by rsag on registered buffers}. */
    public String describe(IntFunction<String> algorithmName) {
        StringBuilder b = new StringBuilder(kind.label()).append("(count ").append(count).append(", ").append(type);
        if (op != null) {
            b.append(", ").append(op);
        }
        if (rootOrPeer >= 0) {
            b.append(kind.pointToPoint() ? ", peer " : ", root ").append(rootOrPeer);
        }
        return b.append(") by ").append(algorithmName.apply(algorithm))
                .append(direct() ? " on registered buffers" : inline() ? " inline" : stagedInPlace()
                        ? " in place, staged (larger than the staging areas)" : " staged").toString();
    }

    private String differences(CallDescriptor base, IntFunction<String> algorithmName) {
        if (kind != base.kind && (kind.pointToPoint() || base.kind.pointToPoint())) {
            // a send or receive where the other calls a collective: the two calls, whole
            return "calls " + describe(algorithmName);
        }
        List<String> d = new ArrayList<>();
        if (kind != base.kind) {
            d.add("calls " + kind.label());
        }
        if (count != base.count) {
            d.add("count " + count);
        }
        if (type != base.type) {
            d.add("type " + type);
        }
        if (op != base.op) {
            d.add("op " + (op == null ? "none" : op));
        }
        if (rootOrPeer != base.rootOrPeer) {
            d.add((kind.pointToPoint() ? "peer " : "root ") + rootOrPeer);
        }
        if (algorithm != base.algorithm) {
            d.add("algorithm " + algorithmName.apply(algorithm));
        }
        if (flags != base.flags) {
            d.add(direct() ? "registered buffers" : stagedInPlace() ? "the call in place on registered buffers larger"
                    + " than the staging areas, staged (run it in place on every rank or on none, or give the"
                    + " communicator more scratch: CollectiveOptions.scratchBytes)" : "unregistered (staged) buffers");
        }
        return "has " + String.join(", ", d);
    }
}
