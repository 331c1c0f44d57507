package org.jmscclpp.cuda;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.CudaDriver;

/**
 * What {@link CudaBackend#exportMemory} sends so that another process of the host can map a GPU
 * buffer over {@code CUDA_IPC}: the bytes inside a {@code RegisteredMemory}'s CUDA_IPC entry.
 * Two kinds, as the buffer was allocated:
 * <ul>
 *   <li>{@link Kind#RUNTIME}: a {@code cuMemAlloc} buffer, by its {@code CUipcMemHandle} (which
 *       names the whole allocation) and the buffer's offset inside that allocation; the peer
 *       opens it with {@code cuIpcOpenMemHandle}.</li>
 *   <li>{@link Kind#POSIX_FD}: a {@code cuMemCreate} (VMM) buffer, by the file descriptor
 *       {@code cuMemExportToShareableHandle} gave it: the peer asks the exporter's
 *       {@link DescriptorServer} (its abstract socket name) for a copy with the buffer's token and
 *       gets it over {@code SCM_RIGHTS}; where that server cannot be reached it falls back to
 *       {@code pidfd_getfd} with the exporter's pid and descriptor number. It imports the
 *       descriptor and maps the allocation.</li>
 * </ul>
 * Little-endian:
 * <pre>
 *  offset  width  field
 *       0      4  magic 0x48434D4A ("JMCH")
 *       4      1  version, 2
 *       5      1  kind: 1 RUNTIME, 2 POSIX_FD
 *       6      2  zero
 *       8      8  offset of the buffer in its allocation
 *      16      8  bytes of the allocation (RUNTIME: as the exporter's driver reports it;
 *                 POSIX_FD: the size the allocation was created with, a multiple of its granularity)
 *   RUNTIME:
 *      24     64  CUipcMemHandle
 *   POSIX_FD:
 *      24      4  pid of the exporting process
 *      28      4  its file descriptor number
 *      32     32  the buffer's token at the exporter's descriptor server
 *      64      1  length L of the server's abstract socket name, 1 to 100
 *      65      L  the name, printable ASCII, without the leading NUL
 * </pre>
 * {@link #decode} trusts nothing: a wrong length, magic, version or kind, non-zero padding, a
 * non-positive allocation size or an offset outside it, a malformed socket name is
 * {@link ErrorCode#INVALID_USAGE}.
 */
record CudaIpcHandle(Kind kind, long offset, long allocationSize, byte[] ipcHandle, int pid, int fd,
                     byte[] token, String serverName) {

    static final int MAGIC = 0x48434D4A;
    static final int VERSION = 2;
    static final int HEADER = 24;
    static final int RUNTIME_BYTES = HEADER + CudaDriver.IPC_HANDLE_BYTES;
    /** Bytes of a POSIX_FD handle before its socket name. */
    static final int POSIX_FD_FIXED = HEADER + 8 + DescriptorServer.TOKEN_BYTES + 1;

    enum Kind {
        RUNTIME(1), POSIX_FD(2);

        final int wire;

        Kind(int wire) {
            this.wire = wire;
        }
    }

    static CudaIpcHandle runtime(long offset, long allocationSize, byte[] ipcHandle) {
        return new CudaIpcHandle(Kind.RUNTIME, offset, allocationSize, ipcHandle.clone(), 0, -1, new byte[0], "");
    }

    static CudaIpcHandle posixFd(long allocationSize, int pid, int fd, byte[] token, String serverName) {
        if (token.length != DescriptorServer.TOKEN_BYTES || !validName(serverName)) {
            throw new IllegalArgumentException("a token of " + token.length + " bytes or a bad server name");
        }
        return new CudaIpcHandle(Kind.POSIX_FD, 0, allocationSize, new byte[0], pid, fd, token.clone(), serverName);
    }

    byte[] encode() {
        byte[] name = serverName.getBytes(StandardCharsets.US_ASCII);
        ByteBuffer out = ByteBuffer.allocate(kind == Kind.RUNTIME ? RUNTIME_BYTES : POSIX_FD_FIXED + name.length)
                .order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(MAGIC).put((byte) VERSION).put((byte) kind.wire).putShort((short) 0).putLong(offset)
                .putLong(allocationSize);
        if (kind == Kind.RUNTIME) {
            out.put(ipcHandle);
        } else {
            out.putInt(pid).putInt(fd).put(token).put((byte) name.length).put(name);
        }
        return out.array();
    }

    /** 1 to {@value DescriptorServer#MAX_NAME_BYTES} printable ASCII characters. */
    private static boolean validName(String name) {
        if (name.isEmpty() || name.length() > DescriptorServer.MAX_NAME_BYTES) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c <= 0x20 || c >= 0x7F) {
                return false;
            }
        }
        return true;
    }

    static CudaIpcHandle decode(byte[] bytes) {
        if (bytes.length < HEADER) {
            throw invalid("a CUDA IPC handle has at least " + HEADER + " bytes, got " + bytes.length);
        }
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int magic = in.getInt();
        if (magic != MAGIC) {
            throw invalid("not a CUDA IPC handle: magic 0x" + Integer.toHexString(magic));
        }
        int version = in.get();
        if (version != VERSION) {
            throw invalid("CUDA IPC handle version " + version + ", this build reads " + VERSION);
        }
        int kindByte = in.get();
        short padding = in.getShort();
        long offset = in.getLong();
        long allocationSize = in.getLong();
        if (padding != 0) {
            throw invalid("a CUDA IPC handle's padding is not zero");
        }
        if (allocationSize <= 0 || offset < 0 || offset >= allocationSize) {
            throw invalid("a CUDA IPC handle names offset " + offset + " of an allocation of " + allocationSize + " bytes");
        }
        if (kindByte == Kind.RUNTIME.wire) {
            if (bytes.length != RUNTIME_BYTES) {
                throw invalid("a CUDA IPC runtime handle has " + RUNTIME_BYTES + " bytes, got " + bytes.length);
            }
            byte[] handle = new byte[CudaDriver.IPC_HANDLE_BYTES];
            in.get(handle);
            return new CudaIpcHandle(Kind.RUNTIME, offset, allocationSize, handle, 0, -1, new byte[0], "");
        }
        if (kindByte == Kind.POSIX_FD.wire) {
            int nameLength = bytes.length > POSIX_FD_FIXED - 1 ? bytes[POSIX_FD_FIXED - 1] & 0xFF : -1;
            if (nameLength < 1 || bytes.length != POSIX_FD_FIXED + nameLength) {
                throw invalid("a CUDA IPC file-descriptor handle has " + POSIX_FD_FIXED + " bytes and a socket name of"
                        + " 1 to " + DescriptorServer.MAX_NAME_BYTES + " bytes, got " + bytes.length + " bytes");
            }
            if (offset != 0) {
                throw invalid("a CUDA IPC file-descriptor handle names the whole allocation, offset " + offset);
            }
            int pid = in.getInt();
            int fd = in.getInt();
            if (pid <= 0 || fd < 0) {
                throw invalid("a CUDA IPC file-descriptor handle names pid " + pid + ", descriptor " + fd);
            }
            byte[] token = new byte[DescriptorServer.TOKEN_BYTES];
            in.get(token);
            in.get();
            byte[] name = new byte[nameLength];
            in.get(name);
            String serverName = new String(name, StandardCharsets.ISO_8859_1);
            if (!validName(serverName)) {
                throw invalid("a CUDA IPC file-descriptor handle names a descriptor server that is not 1 to "
                        + DescriptorServer.MAX_NAME_BYTES + " printable ASCII characters");
            }
            return new CudaIpcHandle(Kind.POSIX_FD, 0, allocationSize, new byte[0], pid, fd, token, serverName);
        }
        throw invalid("unknown CUDA IPC handle kind " + kindByte);
    }

    private static JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("importMemory").build();
    }
}
