package org.jmscclpp.core;

import org.jspecify.annotations.Nullable;

/**
 * How a connection moves bytes between two ranks: MSCCL++'s transports plus {@link #HOST_IPC}.
 *
 * <p>The {@link #ordinal()} is the transport's bit in {@link TransportFlags} and its number on the
 * wire ({@link RegisteredMemory#serialize()}), so constants are only ever appended.
 */
public enum Transport {
    /** GPU memory of another process on the same host, mapped through CUDA IPC or cuMem handles. */
    CUDA_IPC,
    IB0, IB1, IB2, IB3, IB4, IB5, IB6, IB7,
    /** A TCP stream to the peer; works between any two hosts. */
    ETHERNET,
    /** Shared-memory files mapped by processes of one host: the host backend's CUDA_IPC. */
    HOST_IPC;

    private static final Transport[] VALUES = values();

    /** Whether this is one of {@code IB0..IB7}. */
    public boolean isIb() {
        return this.compareTo(IB0) >= 0 && this.compareTo(IB7) <= 0;
    }

    /** {@code IB<index>} for an index in [0, 8), else {@link ErrorCode#INVALID_USAGE}. */
    public static Transport ib(int index) {
        if (index < 0 || index > 7) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "InfiniBand transports are IB0..IB7, got index " + index).phase("transport").build();
        }
        return VALUES[IB0.ordinal() + index];
    }

    /** The transport numbered {@code ordinal} on the wire, or null if no such transport exists. */
    public static @Nullable Transport ofOrdinalOrNull(int ordinal) {
        return ordinal >= 0 && ordinal < VALUES.length ? VALUES[ordinal] : null;
    }

    static int count() {
        return VALUES.length;
    }
}
