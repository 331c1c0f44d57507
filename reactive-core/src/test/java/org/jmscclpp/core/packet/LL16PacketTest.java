package org.jmscclpp.core.packet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.HexFormat;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.testkit.FifoTesting;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The LL16 packet: byte layout, copies to and from packets, waiting for both flags, atomic halves, checks. */
class LL16PacketTest {

    private static final Duration LONG_WAIT = Duration.ofSeconds(20);
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Test
    void layoutIsData1Flag1Data2Flag2LittleEndian() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment packets = arena.allocate(64, 16);
            LL16Packet.write(packets, 16, 0x11223344, 0x55667788, 0x01020304);
            assertEquals("44332211" + "04030201" + "88776655" + "04030201",
                    HexFormat.of().formatHex(packets.asSlice(16, 16).toArray(ValueLayout.JAVA_BYTE)));
            LL16Packet.write(packets, 32, 0x8877665544332211L, 7);
            assertEquals("11223344" + "07000000" + "55667788" + "07000000",
                    HexFormat.of().formatHex(packets.asSlice(32, 16).toArray(ValueLayout.JAVA_BYTE)));
            assertEquals(0x8877665544332211L, LL16Packet.read(packets, 32, 7, Duration.ZERO));
            assertEquals(0x5566778811223344L, LL16Packet.read(packets, 16, 0x01020304, Duration.ZERO));
            assertEquals(0, packets.get(ValueLayout.JAVA_LONG, 0), "the packet before is untouched");
            assertEquals(0, packets.get(ValueLayout.JAVA_LONG, 56), "the packet after is untouched");
            assertEquals(2048, LL16Packet.bufferBytes(1024));
        }
    }

    @Test
    void copyToAndFromPacketsRoundTripsUnalignedData() {
        SplittableRandom random = new SplittableRandom(16);
        try (Arena arena = Arena.ofConfined()) {
            int payload = 8 * 1000;
            MemorySegment data = arena.allocate(payload + 3);
            for (long i = 0; i < data.byteSize(); i++) {
                data.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
            }
            MemorySegment packets = arena.allocate(32 + 2L * payload + 16, 16);
            LL16Packet.copyToPackets(packets, 32, data, 3, payload, 42);
            for (int i = 0; i < payload / 8; i++) {
                long p = 32 + 16L * i;
                assertEquals(42, packets.get(ValueLayout.JAVA_INT, p + 4), "flag1 of packet " + i);
                assertEquals(42, packets.get(ValueLayout.JAVA_INT, p + 12), "flag2 of packet " + i);
                assertEquals(data.get(ValueLayout.JAVA_INT_UNALIGNED, 3 + 8L * i), packets.get(ValueLayout.JAVA_INT, p));
                assertEquals(data.get(ValueLayout.JAVA_INT_UNALIGNED, 7 + 8L * i), packets.get(ValueLayout.JAVA_INT, p + 8));
            }
            MemorySegment back = arena.allocate(payload + 10);
            back.fill((byte) 0x5A);
            LL16Packet.copyFromPackets(back, 5, packets, 32, payload, 42, Duration.ZERO);
            assertArrayEquals(data.asSlice(3, payload).toArray(ValueLayout.JAVA_BYTE),
                    back.asSlice(5, payload).toArray(ValueLayout.JAVA_BYTE));
            for (long i : new long[] {0, 4, payload + 5, payload + 9}) {
                assertEquals(0x5A, back.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " outside the range");
            }
        }
    }

    /** One half with the new flag is not a packet: the reader needs both. */
    @Test
    void aReaderWaitsForBothHalves() throws Exception {
        try (Arena arena = Arena.ofShared(); FifoTesting.Workers workers = new FifoTesting.Workers()) {
            MemorySegment packets = arena.allocate(16, 16);
            packets.set(LE_LONG, 0, Packets.word(0x1234, 5));
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> LL16Packet.read(packets, 0, 5, Duration.ofMillis(30)));
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertTrue(e.getMessage().contains("(5, 0)"), e.getMessage());

            AtomicLong got = new AtomicLong();
            workers.start("reader", () -> got.set(LL16Packet.read(packets, 0, 5, LONG_WAIT)));
            Packets.WORD.setRelease(packets, 8L, Packets.word(0x5678, 5));
            workers.join(LONG_WAIT);
            assertEquals(0x0000_5678_0000_1234L, got.get());
        }
    }

    /** A stale flag blocks; copyFromPackets stops at the first missing packet, having unpacked those before. */
    @Test
    void copyFromPacketsStopsAtTheFirstPacketWithAnotherFlag() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(32);
            for (int i = 0; i < 4; i++) {
                data.set(ValueLayout.JAVA_LONG_UNALIGNED, 8L * i, 100 + i);
            }
            MemorySegment packets = arena.allocate(64, 16);
            LL16Packet.copyToPackets(packets, 0, data, 0, 16, 2);
            LL16Packet.copyToPackets(packets, 32, data, 16, 16, 1);
            MemorySegment out = arena.allocate(32);
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> LL16Packet.copyFromPackets(out, 0, packets, 0, 32, 2, Duration.ofMillis(20)));
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertTrue(e.getMessage().contains("packet 2 (offset 32"), e.getMessage());
            assertTrue(e.getMessage().contains("(1, 1), expected 2"), e.getMessage());
            assertEquals(100, out.get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
            assertEquals(101, out.get(ValueLayout.JAVA_LONG_UNALIGNED, 8));
            assertEquals(0, out.get(ValueLayout.JAVA_LONG_UNALIGNED, 16));
            LL16Packet.clear(packets, 16, 32);
            for (long at = 0; at < 64; at += 8) {
                boolean cleared = at >= 16 && at < 48;
                assertEquals(cleared, packets.get(LE_LONG, at) == 0, "word at " + at);
            }
        }
    }

    /**
     * A writer rewrites one packet with rising flags while a reader loads its two words: every
     * word's data always belongs to its own flag (64-bit atomicity of each half), and flags never
     * go back. Two 32-bit stores per half would show a new flag beside old data.
     */
    @Test
    void eachHalfIsAtomicUnderConcurrentRewrites() throws Exception {
        int rounds = 200_000;
        try (Arena arena = Arena.ofShared(); FifoTesting.Workers workers = new FifoTesting.Workers()) {
            MemorySegment packets = arena.allocate(16, 16);
            workers.start("writer", () -> {
                for (int f = 1; f <= rounds; f++) {
                    LL16Packet.write(packets, 0, f * 3, ~f, f);
                }
            });
            int last1 = 0;
            int last2 = 0;
            long deadline = System.nanoTime() + LONG_WAIT.toNanos();
            long seen = 0;
            while (last1 != rounds || last2 != rounds) {
                // the second half first: the writer stores it after the first, so the first is at least as new
                long w2 = (long) Packets.WORD.getAcquire(packets, 8L);
                long w1 = (long) Packets.WORD.getAcquire(packets, 0L);
                int f1 = Packets.flagOf(w1);
                int f2 = Packets.flagOf(w2);
                if (f1 != 0 && (int) w1 != f1 * 3) {
                    throw new AssertionError("torn first half: flag " + f1 + ", data " + (int) w1);
                }
                if (f2 != 0 && (int) w2 != ~f2) {
                    throw new AssertionError("torn second half: flag " + f2 + ", data " + (int) w2);
                }
                assertTrue(f1 >= last1 && f2 >= last2, "flags went back");
                assertTrue(f2 <= f1, "the second half was visible before the first: " + f2 + " > " + f1);
                last1 = f1;
                last2 = f2;
                seen++;
                if (System.nanoTime() - deadline > 0) {
                    workers.check();
                    throw new AssertionError("the writer did not finish: flags " + f1 + ", " + f2);
                }
            }
            workers.join(LONG_WAIT);
            assertTrue(seen > 0);
        }
    }

    @Test
    void invalidCallsAreRejectedAndChangeNothing() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment packets = arena.allocate(64, 16);
            MemorySegment data = arena.allocate(32);
            for (int i = 0; i < 8; i++) {
                packets.set(ValueLayout.JAVA_LONG, 8L * i, 0x0101_0101_0101_0101L * (i + 1));
                data.set(ValueLayout.JAVA_INT, 4L * i, i + 1);
            }
            byte[] packetsBefore = packets.toArray(ValueLayout.JAVA_BYTE);
            byte[] dataBefore = data.toArray(ValueLayout.JAVA_BYTE);
            MemorySegment heap = MemorySegment.ofArray(new byte[64]);
            Executable[] calls = {
                () -> LL16Packet.write(packets, 0, 1, 2, 0),                      // flag 0
                () -> LL16Packet.write(packets, 8, 1, 2, 1),                      // misaligned
                () -> LL16Packet.write(packets, 64, 1, 2, 1),                     // past the end
                () -> LL16Packet.write(packets, -16, 1, 2, 1),
                () -> LL16Packet.write(heap, 0, 1, 2, 1),                         // not native memory
                () -> LL16Packet.copyToPackets(packets, 0, data, 0, 12, 1),      // not a multiple of 8
                () -> LL16Packet.copyToPackets(packets, 16, data, 0, 32, 1),     // 64 bytes of packets at 16
                () -> LL16Packet.copyToPackets(packets, 0, data, 8, 32, 1),      // data range
                () -> LL16Packet.copyToPackets(packets, 0, data, 0, -8, 1),
                () -> LL16Packet.copyToPackets(packets, 0, data, 0, Long.MAX_VALUE - 7, 1),
                () -> LL16Packet.copyFromPackets(data, 0, packets, 0, 32, 0, Duration.ZERO),
                () -> LL16Packet.copyFromPackets(data, 4, packets, 0, 32, 1, Duration.ZERO),
                () -> LL16Packet.read(packets, 4, 1, Duration.ZERO),
                () -> LL16Packet.clear(packets, 0, 24),
                () -> LL16Packet.clear(packets, 16, 64),
                () -> LL16Packet.bufferBytes(12),
                () -> LL16Packet.bufferBytes(-8),
            };
            for (int i = 0; i < calls.length; i++) {
                JmscclppException e = assertThrows(JmscclppException.class, calls[i], "call " + i);
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), "call " + i + ": " + e.getMessage());
            }
            assertArrayEquals(packetsBefore, packets.toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(dataBefore, data.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void memoryClosedMeanwhileIsInvalidUsage() {
        Arena arena = Arena.ofShared();
        MemorySegment packets = arena.allocate(32, 16);
        arena.close();
        assertEquals(ErrorCode.INVALID_USAGE, assertThrows(JmscclppException.class,
                () -> LL16Packet.write(packets, 0, 1L, 1)).code());
        assertEquals(ErrorCode.INVALID_USAGE, assertThrows(JmscclppException.class,
                () -> LL16Packet.read(packets, 0, 1, Duration.ZERO)).code());
    }
}
