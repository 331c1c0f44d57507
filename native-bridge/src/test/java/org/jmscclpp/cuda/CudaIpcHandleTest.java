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
        CudaIpcHandle back = CudaIpcHandle.decode(CudaIpcHandle.posixFd(4L << 20, 4242, 17).encode());
        assertEquals(CudaIpcHandle.Kind.POSIX_FD, back.kind());
        assertEquals(4L << 20, back.allocationSize());
        assertEquals(4242, back.pid());
        assertEquals(17, back.fd());
    }

    @Test
    void malformedHandlesAreInvalidUsage() {
        byte[] good = CudaIpcHandle.posixFd(2 << 20, 10, 3).encode();
        invalid(new byte[3]);
        invalid(new byte[CudaIpcHandle.HEADER]);
        byte[] version = good.clone();
        version[4] = 2;
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
        byte[][] seeds = {CudaIpcHandle.posixFd(2 << 20, 99, 5).encode(),
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

    private static void invalid(byte[] bytes) {
        JmscclppException e = assertThrows(JmscclppException.class, () -> CudaIpcHandle.decode(bytes));
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e::getMessage);
    }
}
