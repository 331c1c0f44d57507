package org.jmscclpp.core;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * An immutable set of {@link Transport}s with MSCCL++'s {@code TransportFlags} algebra: union
 * ({@link #or}), intersection ({@link #and}), symmetric difference ({@link #xor}) and complement
 * within the known transports ({@link #not}); {@link #has}, {@link #any}, {@link #none},
 * {@link #all} and {@link #count} as in C++.
 *
 * <p>Bit {@code t.ordinal()} of {@link #bits()} stands for transport {@code t}; that is also the
 * form {@link RegisteredMemory#serialize()} writes.
 */
public final class TransportFlags {

    private static final int ALL_BITS = (1 << Transport.count()) - 1;

    /** No transport: memory registered with it is only usable inside this process. */
    public static final TransportFlags NONE = new TransportFlags(0);
    /** Every known transport. */
    public static final TransportFlags ALL = new TransportFlags(ALL_BITS);
    /** {@code IB0 | ... | IB7}. */
    public static final TransportFlags ALL_IB = new TransportFlags(((1 << 8) - 1) << Transport.IB0.ordinal());

    private final int bits;

    private TransportFlags(int bits) {
        this.bits = bits;
    }

    /** The set of the given transports. */
    public static TransportFlags of(Transport... transports) {
        int b = 0;
        for (Transport t : transports) {
            b |= bit(t);
        }
        return new TransportFlags(b);
    }

    /** The set whose bits are {@code bits}; a bit with no transport is {@link ErrorCode#INVALID_USAGE}. */
    public static TransportFlags fromBits(int bits) {
        if ((bits & ~ALL_BITS) != 0) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "transport bits 0x"
                    + Integer.toHexString(bits) + " name no known transport (known: 0x"
                    + Integer.toHexString(ALL_BITS) + ")").phase("transport flags").build();
        }
        return new TransportFlags(bits);
    }

    static boolean validBits(int bits) {
        return (bits & ~ALL_BITS) == 0;
    }

    private static int bit(Transport t) {
        return 1 << t.ordinal();
    }

    public int bits() {
        return bits;
    }

    public boolean has(Transport t) {
        return (bits & bit(t)) != 0;
    }

    /** Whether no transport is in the set. */
    public boolean none() {
        return bits == 0;
    }

    /** Whether at least one transport is in the set. */
    public boolean any() {
        return bits != 0;
    }

    /** Whether every known transport is in the set. */
    public boolean all() {
        return bits == ALL_BITS;
    }

    public int count() {
        return Integer.bitCount(bits);
    }

    public TransportFlags or(TransportFlags other) {
        return new TransportFlags(bits | other.bits);
    }

    public TransportFlags or(Transport t) {
        return new TransportFlags(bits | bit(t));
    }

    public TransportFlags and(TransportFlags other) {
        return new TransportFlags(bits & other.bits);
    }

    public TransportFlags and(Transport t) {
        return new TransportFlags(bits & bit(t));
    }

    public TransportFlags xor(TransportFlags other) {
        return new TransportFlags(bits ^ other.bits);
    }

    public TransportFlags xor(Transport t) {
        return new TransportFlags(bits ^ bit(t));
    }

    /** Every known transport not in this set. */
    public TransportFlags not() {
        return new TransportFlags(~bits & ALL_BITS);
    }

    /** The transports of the set, in ordinal order. */
    public Set<Transport> toSet() {
        Set<Transport> set = EnumSet.noneOf(Transport.class);
        for (Transport t : Transport.values()) {
            if (has(t)) {
                set.add(t);
            }
        }
        return set;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TransportFlags other && other.bits == bits;
    }

    @Override
    public int hashCode() {
        return bits;
    }

    /** For example {@code [HOST_IPC, IB0]}, or {@code []}. */
    @Override
    public String toString() {
        List<String> names = new ArrayList<>();
        for (Transport t : toSet()) {
            names.add(t.name());
        }
        return names.toString();
    }
}
