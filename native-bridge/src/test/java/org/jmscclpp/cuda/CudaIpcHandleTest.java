package org.jmscclpp.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Random;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

class CudaIpcHandleTest {

    @Test
    void runtimeHandleRoundTrips() {
        byte[] ipc = new byte[64];
        for (int i = 0; i < ipc.length; i++) {
            ipc[i] = (byte) (i * 7 + 1);
        }
        CudaIpcHandle h = CudaIpcHandle.runtime(512, 2 << 20, ipc);
        byte[] wire = h.encode();
        assertEquals(CudaIpcHandle.RUNTIME_BYTES, wire.length);
        CudaIpcHandle back = CudaIpcHandle.decode(wire);
        assertEquals(CudaIpcHandle.Kind.RUNTIME, back.kind());
        assertEquals(512, back.offset());
        assertEquals(2 << 20, back.allocationSize());
        assertArrayEquals(ipc, back.ipcHandle());
        assertEquals(0x4A, wire[0], "little-endian magic");
    }

    @Test
    void fileDescriptorHandleRoundTrips() {
        byte[] wire = fd(4L << 20, 4242, 17).encode();
        assertEquals(CudaIpcHandle.POSIX_FD_FIXED + SERVER.length(), wire.length);
        CudaIpcHandle back = CudaIpcHandle.decode(wire);
        assertEquals(CudaIpcHandle.Kind.POSIX_FD, back.kind());
        assertEquals(4L << 20, back.allocationSize());
        assertEquals(4242, back.pid());
        assertEquals(17, back.fd());
        assertArrayEquals(token(), back.token());
        assertEquals(SERVER, back.serverName());
    }

    @Test
    void aFileDescriptorHandleWithABadServerNameIsInvalidUsage() {
        byte[] good = fd(2 << 20, 10, 3).encode();
        int lengthAt = CudaIpcHandle.POSIX_FD_FIXED - 1;
        byte[] empty = java.util.Arrays.copyOf(good, CudaIpcHandle.POSIX_FD_FIXED);
        empty[lengthAt] = 0;
        invalid(empty);
        byte[] shorter = good.clone();
        shorter[lengthAt]--;   // one byte left over
        invalid(shorter);
        byte[] nul = good.clone();
        nul[lengthAt + 1] = 0;   // a NUL inside the name
        invalid(nul);
        byte[] space = good.clone();
        space[good.length - 1] = ' ';
        invalid(space);
        byte[] high = good.clone();
        high[good.length - 1] = (byte) 0xE9;
        invalid(high);
        byte[] tooLong = new byte[CudaIpcHandle.POSIX_FD_FIXED + DescriptorServer.MAX_NAME_BYTES + 1];
        System.arraycopy(good, 0, tooLong, 0, CudaIpcHandle.POSIX_FD_FIXED);
        tooLong[lengthAt] = (byte) (DescriptorServer.MAX_NAME_BYTES + 1);
        java.util.Arrays.fill(tooLong, CudaIpcHandle.POSIX_FD_FIXED, tooLong.length, (byte) 'a');
        invalid(tooLong);
    }

    @Test
    void malformedHandlesAreInvalidUsage() {
        byte[] good = fd(2 << 20, 10, 3).encode();
        invalid(new byte[3]);
        invalid(new byte[CudaIpcHandle.HEADER]);
        byte[] version = good.clone();
        version[4] = 1;   // the handle of pid and descriptor only, which needed pidfd_getfd
        invalid(version);
        byte[] kind = good.clone();
        kind[5] = 9;
        invalid(kind);
        byte[] padding = good.clone();
        padding[6] = 1;
        invalid(padding);
        byte[] longer = java.util.Arrays.copyOf(good, good.length + 1);
        invalid(longer);
        byte[] offset = good.clone();
        offset[8] = 1;    // a descriptor handle names the whole allocation
        invalid(offset);
        byte[] pid = good.clone();
        pid[24] = pid[25] = pid[26] = pid[27] = 0;
        invalid(pid);
        byte[] runtime = CudaIpcHandle.runtime(0, 1 << 20, new byte[64]).encode();
        runtime[8 + 2] = 0x10;   // offset 1 MiB: past the allocation's end
        invalid(runtime);
    }

    @Test
    void randomBytesAndMutationsOnlyEverGiveInvalidUsage() {
        Random random = new Random(20261121);
        byte[][] seeds = {fd(2 << 20, 99, 5).encode(),
                CudaIpcHandle.runtime(64, 2 << 20, new byte[64]).encode()};
        for (int i = 0; i < 50_000; i++) {
            byte[] input;
            if (i % 3 == 0) {
                input = new byte[random.nextInt(120)];
                random.nextBytes(input);
            } else {
                input = seeds[i % 2].clone();
                int flips = 1 + random.nextInt(4);
                for (int f = 0; f < flips; f++) {
                    input[random.nextInt(input.length)] ^= (byte) (1 << random.nextInt(8));
                }
            }
            try {
                CudaIpcHandle h = CudaIpcHandle.decode(input);
                // what decodes is self-consistent
                assertArrayEquals(h.encode(), CudaIpcHandle.decode(h.encode()).encode());
            } catch (JmscclppException e) {
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), e::getMessage);
            }
        }
    }

    private static final String SERVER = "jmscclpp-fd-4242-0123456789abcdef";

    private static byte[] token() {
        byte[] token = new byte[DescriptorServer.TOKEN_BYTES];
        for (int i = 0; i < token.length; i++) {
            token[i] = (byte) (i * 11 + 3);
        }
        return token;
    }

    private static CudaIpcHandle fd(long allocationSize, int pid, int fd) {
        return CudaIpcHandle.posixFd(allocationSize, pid, fd, token(), SERVER);
    }

    private static void invalid(byte[] bytes) {
        JmscclppException e = assertThrows(JmscclppException.class, () -> CudaIpcHandle.decode(bytes));
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e::getMessage);
    }
}
