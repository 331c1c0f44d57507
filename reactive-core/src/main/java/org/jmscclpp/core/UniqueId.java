package org.jmscclpp.core;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * The 128 bytes that identify one job, created once and given to every rank (the same size as
 * NCCL's {@code ncclUniqueId} and MSCCL++'s {@code UniqueId}, so it travels through the same
 * broadcast channels: MPI, a key-value store, an environment variable).
 *
 * <p>The layout of the bytes belongs to the {@link Bootstrap} implementation that created the id
 * (for {@code TcpBootstrap}: root address, secret and protocol version); to everything else the
 * id is opaque. {@link #toString()} and {@link #parse(String)} give a 256-character hex form that
 * fits an environment variable.
 */
public final class UniqueId {

    /** Size of every unique id, in bytes. */
    public static final int BYTES = 128;

    private static final HexFormat HEX = HexFormat.of();

    private final byte[] bytes;

    private UniqueId(byte[] bytes) {
        this.bytes = bytes;
    }

    /** Wraps a copy of exactly {@link #BYTES} bytes; any other length is {@link ErrorCode#INVALID_USAGE}. */
    public static UniqueId fromBytes(byte[] bytes) {
        if (bytes.length != BYTES) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "a unique id has " + BYTES + " bytes, got " + bytes.length).phase("unique id").build();
        }
        return new UniqueId(bytes.clone());
    }

    /** Parses the hex form written by {@link #toString()}. */
    public static UniqueId parse(String hex) {
        String s = hex.strip();
        if (s.length() != 2 * BYTES) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "a unique id is " + 2 * BYTES + " hex digits, got " + s.length()).phase("unique id").build();
        }
        try {
            return new UniqueId(HEX.parseHex(s));
        } catch (IllegalArgumentException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a unique id is hex digits only")
                    .phase("unique id").cause(e).build();
        }
    }

    /** A copy of the 128 bytes. */
    public byte[] toBytes() {
        return bytes.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof UniqueId other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** The id as 256 lowercase hex digits. */
    @Override
    public String toString() {
        return HEX.formatHex(bytes);
    }
}
