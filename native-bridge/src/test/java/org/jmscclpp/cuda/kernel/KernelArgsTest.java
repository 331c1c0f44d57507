package org.jmscclpp.cuda.kernel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.nio.ByteOrder;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;

class KernelArgsTest {

    /** Where parameter {@code i}'s slot in the pointer array points. */
    private static long slot(KernelArgs args, int i) {
        return Pointer.nativeValue(args.params().getPointer((long) i * Native.POINTER_SIZE));
    }

    @Test
    void valuesSitAtTheirAlignmentAndTheArrayPointsAtEach() {
        byte[] struct = new byte[16];
        for (int i = 0; i < struct.length; i++) {
            struct[i] = (byte) (i + 1);
        }
        KernelArgs args = KernelArgs.builder()
                .i32(7)                              // 0..4
                .pointer(0x7f00_1234_5678L)          // 8..16 (padded from 4)
                .f32(1.5f)                           // 16..20
                .bytes(struct, 16)                   // 32..48 (padded from 20)
                .f64(-2.25)                          // 48..56
                .i64(Long.MIN_VALUE + 3)             // 56..64
                .bytes(new byte[] {9, 8, 7}, 1)      // 64..67
                .build();

        assertEquals(7, args.count());
        long[] expected = {0, 8, 16, 32, 48, 56, 64};
        int[] sizes = {4, 8, 4, 16, 8, 8, 3};
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], args.offset(i), "offset of parameter " + i);
            assertEquals(sizes[i], args.size(i), "size of parameter " + i);
        }
        assertEquals(72, args.arrayOffset(), "the pointer array starts 8-aligned after the last value");

        long base = Pointer.nativeValue(args.values());
        assertEquals(0, base % 16, "the block start is aligned to the largest alignment");
        assertEquals(base + args.arrayOffset(), Pointer.nativeValue(args.params()));
        for (int i = 0; i < expected.length; i++) {
            assertEquals(base + expected[i], slot(args, i), "slot " + i + " points at its value");
        }

        Pointer values = args.values();
        assertEquals(7, values.getInt(0));
        assertEquals(0x7f00_1234_5678L, values.getLong(8));
        assertEquals(1.5f, values.getFloat(16));
        assertArrayEquals(struct, values.getByteArray(32, 16));
        assertEquals(-2.25, values.getDouble(48));
        assertEquals(Long.MIN_VALUE + 3, values.getLong(56));
        assertArrayEquals(new byte[] {9, 8, 7}, values.getByteArray(64, 3));
        assertEquals("(i32 7, ptr 0x7f0012345678, f32 1.5, 16 bytes, f64 -2.25, i64 -9223372036854775805, 3 bytes)",
                args.toString());
    }

    @Test
    void paddingIsZeroed() {
        KernelArgs args = KernelArgs.builder().i32(-1).i64(-1).build();
        assertEquals(0, args.values().getInt(4), "the 4 bytes between an int and a long are zero");
    }

    @Test
    void largeAlignmentsHoldWhateverMallocReturns() {
        for (int round = 0; round < 32; round++) {
            KernelArgs args = KernelArgs.builder().i32(round).bytes(new byte[128], 128).build();
            assertEquals(128, args.offset(1));
            assertEquals(0, slot(args, 1) % 128, "a 128-aligned struct lies on a 128-byte boundary");
        }
    }

    @Test
    void handleTakesExactlyWhatTheEncoderWritesLittleEndian() {
        KernelArgs args = KernelArgs.builder()
                .i32(1)
                .handle(16, out -> {
                    assertEquals(ByteOrder.LITTLE_ENDIAN, out.order());
                    assertEquals(16, out.remaining());
                    out.putLong(0x0102030405060708L).putInt(42).putInt(0);
                })
                .build();
        assertEquals(8, args.offset(1), "a handle is 8-aligned");
        Pointer handle = args.values().share(8);
        assertEquals(0x08, handle.getByte(0), "little-endian: low byte first");
        assertEquals(0x0102030405060708L, handle.getLong(0));
        assertEquals(42, handle.getInt(8));
    }

    @Test
    void whatTheEncoderThrowsReachesTheCaller() {
        // core's encoders refuse a closed object this way
        JmscclppException refused = JmscclppException.builder(ErrorCode.INVALID_USAGE, "the fifo is closed").build();
        assertEquals(refused, assertThrows(JmscclppException.class, () -> KernelArgs.builder().handle(40, out -> {
            throw refused;
        })));
    }

    @Test
    void handleThatWritesTooLittleOrTooMuchIsInvalidUsage() {
        JmscclppException shortWrite = assertThrows(JmscclppException.class,
                () -> KernelArgs.builder().handle(16, out -> out.putLong(1)));
        assertEquals(ErrorCode.INVALID_USAGE, shortWrite.code());
        assertTrue(shortWrite.getMessage().contains("wrote 8 bytes, not 16"), shortWrite.getMessage());

        JmscclppException longWrite = assertThrows(JmscclppException.class,
                () -> KernelArgs.builder().handle(8, out -> out.putLong(1).putLong(2)));
        assertEquals(ErrorCode.INVALID_USAGE, longWrite.code());
        assertTrue(longWrite.getMessage().contains("more than 8 bytes"), longWrite.getMessage());

        assertEquals(ErrorCode.INVALID_USAGE, assertThrows(JmscclppException.class,
                () -> KernelArgs.builder().handle(12, out -> out.put(new byte[12]))).code());
    }

    @Test
    void badStructsAreInvalidUsage() {
        KernelArgs.Builder builder = KernelArgs.builder();
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> builder.bytes(new byte[8], 3)).code());
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> builder.bytes(new byte[8], 512)).code());
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> builder.bytes(new byte[0], 1)).code());
        assertEquals(ErrorCode.INVALID_USAGE,
                assertThrows(JmscclppException.class, () -> builder.bytes(new byte[12], 8)).code());
        assertEquals(0, builder.build().count(), "refused parameters are not added");
    }

    @Test
    void structBytesAreCopied() {
        byte[] struct = {1, 2, 3, 4};
        KernelArgs.Builder builder = KernelArgs.builder().bytes(struct, 4);
        struct[0] = 99;
        assertEquals(1, builder.build().values().getByte(0));
    }

    @Test
    void noParametersStillGiveAPointerArray() {
        KernelArgs none = KernelArgs.none();
        assertEquals(0, none.count());
        assertTrue(Pointer.nativeValue(none.params()) != 0);
        assertEquals("()", none.toString());
    }
}
