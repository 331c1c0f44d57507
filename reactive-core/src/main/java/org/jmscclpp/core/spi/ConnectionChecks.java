package org.jmscclpp.core.spi;

import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;

/**
 * The checks every {@link Connection} makes before it moves a byte, shared by the backends'
 * connections so that a bad range is refused the same way whatever the transport: each throws
 * {@link ErrorCode#INVALID_USAGE} naming this rank, the peer, the tag and the operation. Public for
 * backends in other modules; not an application API.
 */
public final class ConnectionChecks {

    private ConnectionChecks() {
    }

    /**
     * For {@link Connection#write}: both ranges inside their memories, the destination registered
     * for {@code transport} and mapped in this process, the source memory of this process.
     */
    public static void write(ConnectionContext where, Transport transport, RegisteredMemory dst, long dstOffset,
                             RegisteredMemory src, long srcOffset, long size) {
        String phase = "write";
        range(where, dst, dstOffset, size, phase, "destination");
        range(where, src, srcOffset, size, phase, "source");
        destination(where, transport, dst, phase);
        if (!src.isMapped()) {
            throw invalid(where, phase, "the source is not memory of this process: " + src);
        }
    }

    /**
     * For {@link Connection#updateAndSync}: an 8-byte token inside the destination, at an 8-byte
     * aligned offset and address (a 64-bit token must be aligned to be stored atomically), the
     * destination registered for {@code transport} and mapped in this process.
     */
    public static void token(ConnectionContext where, Transport transport, RegisteredMemory dst, long dstOffset) {
        String phase = "updateAndSync";
        range(where, dst, dstOffset, Long.BYTES, phase, "token");
        destination(where, transport, dst, phase);
        if ((dstOffset & (Long.BYTES - 1)) != 0 || ((dst.address() + dstOffset) & (Long.BYTES - 1)) != 0) {
            throw invalid(where, phase, "token offset " + dstOffset + " of " + dst + " is not 8-byte aligned: a 64-bit "
                    + "token must be aligned to be stored atomically");
        }
    }

    /** An {@link ErrorCode#INVALID_USAGE} naming the connection's rank, peer and tag. */
    public static JmscclppException invalid(ConnectionContext where, String phase, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(where.rank()).peer(where.remoteRank())
                .tag(where.tag()).phase(phase).build();
    }

    private static void range(ConnectionContext where, RegisteredMemory memory, long offset, long length, String phase,
                              String which) {
        try {
            memory.checkRange(offset, length, phase);
        } catch (JmscclppException e) {
            throw invalid(where, phase, which + " " + e.detail());
        }
    }

    private static void destination(ConnectionContext where, Transport transport, RegisteredMemory dst, String phase) {
        if (!dst.transports().has(transport)) {
            throw invalid(where, phase, "the destination is not registered for " + transport + " (it has "
                    + dst.transports() + ")");
        }
        if (!dst.isMapped()) {
            throw invalid(where, phase, "the destination is not mapped in this process (memory of another host?): " + dst);
        }
    }
}
