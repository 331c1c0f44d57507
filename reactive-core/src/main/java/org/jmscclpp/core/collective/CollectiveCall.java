package org.jmscclpp.core.collective;

import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.DeviceBufferSlice;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * One call of a {@link CollectiveComm} as the caller made it: what engines execute. The static
 * factories mirror NCCL's functions; {@link #validate} checks everything that can be checked
 * locally before anything moves.
 *
 * @param kind  the operation
 * @param send  the buffer read (null for RECV, and where nothing is read: non-root ranks of a
 *              broadcast, calls of count 0)
 * @param recv  the buffer written (null for SEND, non-root ranks of a reduce, calls of count 0)
 * @param count elements, in {@link CollectiveKind}'s sense
 * @param type  the element type
 * @param op    the reduction of reducing kinds, else null
 * @param root  the root rank of BROADCAST and REDUCE, else -1
 * @param peer  the peer of SEND and RECV, else -1
 */
public record CollectiveCall(CollectiveKind kind, @Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count,
                             DataType type, @Nullable ReduceOp op, int root, int peer) {

    /** INVALID_USAGE where the kind or the element type is missing (a call of no type moves no bytes). */
    public CollectiveCall {
        if (kind == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a collective call needs a kind")
                    .phase("collective").build();
        }
        if (type == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a collective call needs an element type"
                    + " (DataType): " + kind.label() + " with a null type").phase(kind.label()).build();
        }
    }

    public static CollectiveCall allReduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type, ReduceOp op) {
        return new CollectiveCall(CollectiveKind.ALL_REDUCE, send, recv, count, type, op, -1, -1);
    }

    public static CollectiveCall allGather(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long sendCount, DataType type) {
        return new CollectiveCall(CollectiveKind.ALL_GATHER, send, recv, sendCount, type, null, -1, -1);
    }

    public static CollectiveCall reduceScatter(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long recvCount, DataType type,
                                               ReduceOp op) {
        return new CollectiveCall(CollectiveKind.REDUCE_SCATTER, send, recv, recvCount, type, op, -1, -1);
    }

    public static CollectiveCall broadcast(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type,
                                           int root) {
        return new CollectiveCall(CollectiveKind.BROADCAST, send, recv, count, type, null, root, -1);
    }

    public static CollectiveCall reduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type,
                                        ReduceOp op, int root) {
        return new CollectiveCall(CollectiveKind.REDUCE, send, recv, count, type, op, root, -1);
    }

    public static CollectiveCall allToAll(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long countPerPeer, DataType type) {
        return new CollectiveCall(CollectiveKind.ALL_TO_ALL, send, recv, countPerPeer, type, null, -1, -1);
    }

    public static CollectiveCall send(@Nullable DeviceBuffer send, long count, DataType type, int peer) {
        return new CollectiveCall(CollectiveKind.SEND, send, null, count, type, null, -1, peer);
    }

    public static CollectiveCall recv(@Nullable DeviceBuffer recv, long count, DataType type, int peer) {
        return new CollectiveCall(CollectiveKind.RECV, null, recv, count, type, null, -1, peer);
    }

    /** Whether this rank reads its send buffer: not a non-root of a broadcast, not a RECV. */
    public boolean readsSend(int rank) {
        return kind != CollectiveKind.RECV && (kind != CollectiveKind.BROADCAST || rank == root);
    }

    /** Whether this rank writes its receive buffer: not a non-root of a reduce, not a SEND. */
    public boolean writesRecv(int rank) {
        return kind != CollectiveKind.SEND && (kind != CollectiveKind.REDUCE || rank == root);
    }

    /** Bytes of {@code count} elements: a send's or receive's message, one rank's slot of a slotted buffer. */
    public long countBytes() {
        return count * type.bytes();
    }

    /** Bytes of the send buffer this rank reads on {@code n} ranks. */
    public long sendBytes(int rank, int n) {
        return readsSend(rank) ? kind.sendElements(count, n) * type.bytes() : 0;
    }

    /** Bytes of the receive buffer this rank writes on {@code n} ranks. */
    public long recvBytes(int rank, int n) {
        return writesRecv(rank) ? kind.recvElements(count, n) * type.bytes() : 0;
    }

    /** nccl-tests' S: the larger of the send and receive bytes of a rank that does both, the same on every rank. */
    public long size(int n) {
        return Math.max(kind.sendElements(count, n), kind.recvElements(count, n)) * type.bytes();
    }

    /**
     * Whether this is NCCL's in-place form: send and receive in one memory, laid out as
     * {@link CollectiveKind} says (allgather: send = recv + rank × count; reducescatter:
     * recv = send + rank × count; the others: send = recv). One memory is one buffer, or two
     * buffers over the same addresses (two wraps of one device pointer, as NCCL compares pointers).
     */
    public boolean inPlace(int rank) {
        long[] at = starts(send, recv);
        if (at == null) {
            return false;
        }
        long s = at[0];
        long r = at[1];
        long slot = rank * countBytes();
        return switch (kind) {
            case ALL_GATHER -> s == r + slot;
            case REDUCE_SCATTER -> r == s + slot;
            case SEND, RECV -> false;
            default -> s == r;
        };
    }

    /**
     * Checks the call on {@code rank} of {@code n} ranks before anything moves.
     *
     * @throws JmscclppException INVALID_USAGE naming the rank, the call and the value: a negative
     *         count, a count whose bytes overflow, a missing reduction, a root or peer out of range,
     *         a missing, closed or too small buffer, send and receive ranges that overlap other than
     *         in NCCL's in-place form
     */
    public void validate(int rank, int n) {
        if (count < 0) {
            throw invalid(rank, "a count of " + count + " elements");
        }
        long maxElements = Long.MAX_VALUE / type.bytes() / Math.max(1, n);
        if (count > maxElements) {
            throw invalid(rank, "a count of " + count + " elements of " + type + " overflows 2^63 bytes on " + n
                    + " ranks");
        }
        if (kind.reduces() && op == null) {
            throw invalid(rank, "no reduction op");
        }
        if (kind.rooted() && (root < 0 || root >= n)) {
            throw invalid(rank, "root " + root + " is not a rank of the job (0 to " + (n - 1) + ")");
        }
        if (kind.pointToPoint() && (peer < 0 || peer >= n)) {
            throw invalid(rank, "peer " + peer + " is not a rank of the job (0 to " + (n - 1) + ")");
        }
        long sendBytes = sendBytes(rank, n);
        long recvBytes = recvBytes(rank, n);
        checkBuffer(rank, "send", send, sendBytes);
        checkBuffer(rank, "recv", recv, recvBytes);
        long[] at = sendBytes > 0 && recvBytes > 0 ? starts(send, recv) : null;
        if (at != null && at[0] < at[1] + recvBytes && at[1] < at[0] + sendBytes && !inPlace(rank)) {
            boolean oneBuffer = DeviceBufferSlice.root(send) == DeviceBufferSlice.root(recv);
            throw invalid(rank, "the send range [" + where(at[0], oneBuffer) + ", +" + sendBytes
                    + ") and the recv range [" + where(at[1], oneBuffer) + ", +" + recvBytes + ") of "
                    + (oneBuffer ? "one buffer" : "the same memory") + " overlap, but not in " + kind.label()
                    + "'s in-place layout");
        }
    }

    private void checkBuffer(int rank, String which, @Nullable DeviceBuffer buffer, long bytes) {
        if (bytes == 0) {
            return;
        }
        if (buffer == null) {
            throw invalid(rank, "no " + which + " buffer for " + bytes + " bytes");
        }
        if (buffer.isClosed()) {
            throw invalid(rank, "the " + which + " buffer is closed: " + buffer);
        }
        if (buffer.size() < bytes) {
            throw invalid(rank, "the " + which + " buffer holds " + buffer.size() + " bytes, the call needs " + bytes
                    + " (" + count + " × " + type + (bytes > countBytes() ? " per rank" : "") + ")");
        }
    }

    /**
     * Where {@code a} and {@code b} start in one frame, or null where they cannot share memory: their
     * offsets when both are ranges of one buffer; their offsets in the array when both wrap ranges of
     * one Java array (heap segments have no address, and a slice's address is then its offset alone);
     * their addresses when they are different buffers with addresses (two wraps of one device pointer,
     * a wrap of a backend buffer's segment: one address space per process).
     */
    private static long @Nullable [] starts(@Nullable DeviceBuffer a, @Nullable DeviceBuffer b) {
        if (a == null || b == null) {
            return null;
        }
        if (DeviceBufferSlice.root(a) == DeviceBufferSlice.root(b)) {
            return new long[] {DeviceBufferSlice.offsetInRoot(a), DeviceBufferSlice.offsetInRoot(b)};
        }
        Object arrayA = heapArray(a);
        Object arrayB = heapArray(b);
        if (arrayA != null || arrayB != null) {
            return arrayA == arrayB ? new long[] {a.hostSegment().address(), b.hostSegment().address()} : null;
        }
        long x = a.address();
        long y = b.address();
        return x != 0 && y != 0 ? new long[] {x, y} : null;
    }

    /** The Java array {@code buffer} wraps a range of, or null for memory with an address. */
    private static @Nullable Object heapArray(DeviceBuffer buffer) {
        DeviceBuffer root = DeviceBufferSlice.root(buffer);
        return root.address() == 0 && root.hostAccessible() ? root.hostSegment().heapBase().orElse(null) : null;
    }

    private static String where(long at, boolean offset) {
        return offset ? Long.toString(at) : "0x" + Long.toHexString(at);
    }

    private JmscclppException invalid(int rank, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, describe() + ": " + detail).rank(rank)
                .phase(kind.label()).build();
    }

    /** {@code allReduce(count 1000, float, sum)}, {@code send(count 8, int32, peer 1)}: how errors name the call. */
    public String describe() {
        StringBuilder b = new StringBuilder(name()).append("(count ").append(count).append(", ").append(type);
        if (op != null) {
            b.append(", ").append(op);
        }
        if (root >= 0) {
            b.append(", root ").append(root);
        }
        if (peer >= 0) {
            b.append(", peer ").append(peer);
        }
        return b.append(')').toString();
    }

    /** The API method's name: {@code allReduce}, {@code allGather}, {@code reduceScatter}, ... */
    public String name() {
        return switch (kind) {
            case ALL_REDUCE -> "allReduce";
            case ALL_GATHER -> "allGather";
            case REDUCE_SCATTER -> "reduceScatter";
            case BROADCAST -> "broadcast";
            case REDUCE -> "reduce";
            case ALL_TO_ALL -> "allToAll";
            case SEND -> "send";
            case RECV -> "recv";
        };
    }
}
