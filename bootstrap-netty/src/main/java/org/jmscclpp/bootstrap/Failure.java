package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.jmscclpp.bootstrap.wire.Frame;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * Payload of a {@link Frame#FAILURE} frame: an error raised on one rank (or the root) that another
 * rank must report. The frame's channel holds the {@link ErrorCode} ordinal.
 *
 * <pre>
 * offset  width  meaning (integers little-endian)
 *      0      4  rank that raised it (or NONE)
 *      4      4  peer it names (or NONE)
 *      8      4  tag (or NONE)
 *     12      2  phase length p, then p bytes UTF-8
 *   14+p      4  detail length d, then d bytes UTF-8
 * </pre>
 * A malformed payload decodes to a REMOTE_ERROR saying so; it never throws.
 */
final class Failure {

    private static final int MAX_TEXT = 8192;

    private Failure() {
    }

    static ByteBuf encode(JmscclppException e) {
        byte[] phase = truncate(e.phase());
        byte[] detail = truncate(e.detail());
        ByteBuf buf = Unpooled.buffer(18 + phase.length + detail.length);
        buf.writeIntLE(e.rank());
        buf.writeIntLE(e.peer());
        buf.writeIntLE(e.tag());
        buf.writeShortLE(phase.length);
        buf.writeBytes(phase);
        buf.writeIntLE(detail.length);
        buf.writeBytes(detail);
        return buf;
    }

    static JmscclppException decode(long codeOrdinal, ByteBuf in) {
        ErrorCode[] codes = ErrorCode.values();
        if (codeOrdinal < 0 || codeOrdinal >= codes.length || in.readableBytes() < 18) {
            return malformed();
        }
        int rank = in.readIntLE();
        int peer = in.readIntLE();
        int tag = in.readIntLE();
        int phaseLen = in.readUnsignedShortLE();
        if (phaseLen > MAX_TEXT || in.readableBytes() < phaseLen + 4) {
            return malformed();
        }
        String phase = in.readCharSequence(phaseLen, StandardCharsets.UTF_8).toString();
        long detailLen = in.readUnsignedIntLE();
        if (detailLen > MAX_TEXT || in.readableBytes() < detailLen) {
            return malformed();
        }
        String detail = in.readCharSequence((int) detailLen, StandardCharsets.UTF_8).toString();
        return JmscclppException.builder(codes[(int) codeOrdinal], detail)
                .rank(rank).peer(peer).tag(tag).phase(phase).build();
    }

    private static JmscclppException malformed() {
        return JmscclppException.builder(ErrorCode.REMOTE_ERROR, "a peer sent a malformed failure report")
                .phase("failure report").build();
    }

    private static byte[] truncate(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length <= MAX_TEXT) {
            return b;
        }
        return java.util.Arrays.copyOf(b, MAX_TEXT);
    }
}
