package org.jmscclpp.core.host;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * What a peer needs to map a host-backend buffer: the name of its shared-memory file (relative to
 * the backend's directory, which every rank of a host shares) and the file's size. This is the
 * {@code HOST_IPC} handle that {@link HostBackend#exportMemory} returns and
 * {@link HostBackend#importMemory} reads; it travels inside a serialized
 * {@link org.jmscclpp.core.RegisteredMemory}.
 *
 * <p>Wire form, little-endian:
 * <pre>
 *  offset  width  field
 *       0      1  version, 2
 *       1      1  reserved, 0
 *       2      2  N = length of the name in bytes, 1..{@value #MAX_NAME}
 *       4      N  file name, US-ASCII, matching {@code jmscclpp-<pid>-<start>-<pidns>-<16 hex digits>-<counter>}
 *     4+N      8  file size in bytes, at least 1 (signed, so at most 2^63 - 1)
 * </pre>
 *
 * <p>The bytes come from a peer and are not trusted: {@link #decode} rejects, with
 * {@link ErrorCode#INVALID_USAGE}, any other version, a non-zero reserved byte, a truncated or
 * over-long handle, and every name that is not exactly one of the names {@link #fileName} makes:
 * no separator, no {@code ..}, no absolute path and no file other than a host-backend buffer can
 * be named.
 *
 * @param name     the file's name inside the backend's directory
 * @param fileSize the file's size in bytes
 */
record SharedMemoryHandle(String name, long fileSize) {

    /** 2 since the names carry their owner's start time (version 1 names had only the pid). */
    static final int VERSION = 2;
    /** Longest name accepted; the names {@link #fileName} makes are at most 105 characters. */
    static final int MAX_NAME = 128;
    private static final int HEADER = 4;
    private static final int TRAILER = 8;
    private static final Pattern NAME = Pattern.compile(
            "jmscclpp-([0-9]{1,19})-([0-9]{1,19})-([0-9]{1,19})-[0-9a-f]{16}-[0-9]{1,19}");

    /**
     * The process that created a file: its pid and its {@linkplain ProcessStart start time}, which
     * together tell it apart from any later process that reuses the pid, and its pid namespace
     * ({@link ProcessStart#pidNamespace()}; 0 when unknown), which says whose pids they are.
     */
    record Owner(long pid, long start, long pidNamespace) {
    }

    SharedMemoryHandle {
        if (!isValidName(name)) {
            throw malformed("file name \"" + printable(name) + "\" is not a host-backend buffer's");
        }
        if (fileSize < 1) {
            throw malformed("file size " + fileSize + " is not positive");
        }
    }

    /**
     * The file name of buffer number {@code counter} of the backend instance {@code nonce} (16
     * lower-case hex digits) in process {@code pid} of the pid namespace {@code pidNamespace} that started at {@code start}
     * ({@link ProcessStart#current()}): unique across the processes and jobs that share a
     * directory, the only form {@link #decode} accepts, and what {@link #owner} reads back.
     */
    static String fileName(long pid, long start, long pidNamespace, String nonce, long counter) {
        return "jmscclpp-" + pid + "-" + start + "-" + pidNamespace + "-" + nonce + "-" + counter;
    }

    /** Whether {@code name} is a name {@link #fileName} could have made. */
    static boolean isValidName(String name) {
        return owner(name).isPresent();
    }

    /** The owner a name {@link #fileName} made names; empty for every other name. */
    static Optional<Owner> owner(String name) {
        if (name.length() > MAX_NAME) {
            return Optional.empty();
        }
        Matcher m = NAME.matcher(name);
        if (!m.matches()) {
            return Optional.empty();
        }
        try {
            return Optional.of(new Owner(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)),
                    Long.parseLong(m.group(3))));
        } catch (NumberFormatException e) {
            // 19 digits above Long.MAX_VALUE: no process has such a pid or start time
            return Optional.empty();
        }
    }

    /** The wire form described in the class comment. */
    byte[] encode() {
        byte[] n = name.getBytes(StandardCharsets.US_ASCII);
        return ByteBuffer.allocate(HEADER + n.length + TRAILER).order(ByteOrder.LITTLE_ENDIAN)
                .put((byte) VERSION).put((byte) 0).putShort((short) n.length).put(n).putLong(fileSize)
                .array();
    }

    /** Parses the wire form; anything else is {@link ErrorCode#INVALID_USAGE} saying what is wrong. */
    static SharedMemoryHandle decode(byte[] bytes) {
        if (bytes.length < HEADER + 1 + TRAILER) {
            throw malformed(bytes.length + " bytes are too few (at least " + (HEADER + 1 + TRAILER) + ")");
        }
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        try {
            int version = in.get() & 0xFF;
            if (version != VERSION) {
                throw malformed("unknown version " + version + " (this build reads " + VERSION + ")");
            }
            int reserved = in.get() & 0xFF;
            if (reserved != 0) {
                throw malformed("reserved byte is " + reserved + ", not 0");
            }
            int length = in.getShort() & 0xFFFF;
            if (length < 1 || length > MAX_NAME) {
                throw malformed("name length " + length + " is outside [1, " + MAX_NAME + "]");
            }
            if (bytes.length != HEADER + length + TRAILER) {
                throw malformed(bytes.length + " bytes, but a name of " + length + " bytes makes a handle of "
                        + (HEADER + length + TRAILER));
            }
            byte[] n = new byte[length];
            in.get(n);
            for (byte b : n) {
                if (b < 0x21 || b > 0x7E) {
                    throw malformed("the name holds byte 0x" + Integer.toHexString(b & 0xFF)
                            + ", which is not printable ASCII");
                }
            }
            long size = in.getLong();
            return new SharedMemoryHandle(new String(n, StandardCharsets.US_ASCII), size);
        } catch (BufferUnderflowException e) {
            // Unreachable after the length checks above; kept so no input can escape as another exception.
            throw malformed("truncated at offset " + in.position());
        }
    }

    private static String printable(String s) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < s.length() && i < MAX_NAME; i++) {
            char c = s.charAt(i);
            sb.append(c >= 0x20 && c < 0x7F ? c : '?');
        }
        return sb.toString();
    }

    private static JmscclppException malformed(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "malformed HOST_IPC memory handle: " + detail)
                .phase("importMemory").build();
    }
}
