package org.jmscclpp.core.packet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.HexFormat;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.testkit.FifoTesting;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The LL8 packet: byte layout, copies to and from packets, waiting for the flag, one atomic word, checks. */
class LL8PacketTest {

    private static final Duration LONG_WAIT = Duration.ofSeconds(20);

    @Test
    void layoutIsDataFlagLittleEndian() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment packets = arena.allocate(24, 8);
            LL8Packet.write(packets, 8, 0x11223344, 0x0A0B0C0D);
            assertEquals("44332211" + "0d0c0b0a",
                    HexFormat.of().formatHex(packets.asSlice(8, 8).toArray(ValueLayout.JAVA_BYTE)));
            assertEquals(0x11223344, LL8Packet.read(packets, 8, 0x0A0B0C0D, Duration.ZERO));
            assertEquals(0, packets.get(ValueLayout.JAVA_LONG, 0));
            assertEquals(0, packets.get(ValueLayout.JAVA_LONG, 16));
            assertEquals(8, LL8Packet.bufferBytes(4));
            // flags are 32-bit words: the "negative" ones are flags like any other
            LL8Packet.write(packets, 16, -5, -1);
            assertEquals(-5, LL8Packet.read(packets, 16, -1, Duration.ZERO));
        }
    }

    @Test
    void copyToAndFromPacketsRoundTripsUnalignedData() {
        SplittableRandom random = new SplittableRandom(8);
        try (Arena arena = Arena.ofConfined()) {
            int payload = 4 * 999;
            MemorySegment data = arena.allocate(payload + 1);
            for (long i = 0; i < data.byteSize(); i++) {
                data.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
            }
            MemorySegment packets = arena.allocate(8 + 2L * payload, 8);
            LL8Packet.copyToPackets(packets, 8, data, 1, payload, 9);
            for (int i = 0; i < payload / 4; i++) {
                assertEquals(9, packets.get(ValueLayout.JAVA_INT, 8 + 8L * i + 4), "flag of packet " + i);
                assertEquals(data.get(ValueLayout.JAVA_INT_UNALIGNED, 1 + 4L * i), packets.get(ValueLayout.JAVA_INT, 8 + 8L * i));
            }
            MemorySegment back = arena.allocate(payload + 6);
            back.fill((byte) 0x5A);
            LL8Packet.copyFromPackets(back, 3, packets, 8, payload, 9, Duration.ZERO);
            assertArrayEquals(data.asSlice(1, payload).toArray(ValueLayout.JAVA_BYTE),
                    back.asSlice(3, payload).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(0x5A, back.get(ValueLayout.JAVA_BYTE, 2));
            assertEquals(0x5A, back.get(ValueLayout.JAVA_BYTE, payload + 3));
        }
    }

    @Test
    void aReaderWaitsForTheFlagAndStopsAtTheFirstMissingPacket() throws Exception {
        try (Arena arena = Arena.ofShared(); FifoTesting.Workers workers = new FifoTesting.Workers()) {
            MemorySegment packets = arena.allocate(32, 8);
            MemorySegment data = arena.allocate(16);
            for (int i = 0; i < 4; i++) {
                data.set(ValueLayout.JAVA_INT, 4L * i, 10 + i);
            }
            LL8Packet.copyToPackets(packets, 0, data, 0, 12, 3);
            MemorySegment out = arena.allocate(16);
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> LL8Packet.copyFromPackets(out, 0, packets, 0, 16, 3, Duration.ofMillis(20)));
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertTrue(e.getMessage().contains("packet 3 (offset 24"), e.getMessage());
            assertEquals(12, out.get(ValueLayout.JAVA_INT, 8));
            assertEquals(0, out.get(ValueLayout.JAVA_INT, 12));

            AtomicInteger got = new AtomicInteger();
            workers.start("reader", () -> got.set(LL8Packet.read(packets, 24, 3, LONG_WAIT)));
            LL8Packet.write(packets, 24, 77, 3);
            workers.join(LONG_WAIT);
            assertEquals(77, got.get());

            LL8Packet.clear(packets, 8, 16);
            assertEquals(ErrorCode.TIMEOUT, assertThrows(JmscclppException.class,
                    () -> LL8Packet.read(packets, 8, 3, Duration.ZERO)).code());
            assertEquals(10, LL8Packet.read(packets, 0, 3, Duration.ZERO));
            assertEquals(77, LL8Packet.read(packets, 24, 3, Duration.ZERO));
        }
    }

    /** A writer rewrites one packet with rising flags; a reader never sees data of another flag. */
    @Test
    void aPacketIsOneAtomicWord() throws Exception {
        int rounds = 200_000;
        try (Arena arena = Arena.ofShared(); FifoTesting.Workers workers = new FifoTesting.Workers()) {
            MemorySegment packets = arena.allocate(8, 8);
            workers.start("writer", () -> {
                for (int f = 1; f <= rounds; f++) {
                    LL8Packet.write(packets, 0, f * 7 + 1, f);
                }
            });
            int last = 0;
            long deadline = System.nanoTime() + LONG_WAIT.toNanos();
            while (last != rounds) {
                long w = (long) Packets.WORD.getAcquire(packets, 0L);
                int f = Packets.flagOf(w);
                if (f != 0 && (int) w != f * 7 + 1) {
                    throw new AssertionError("torn packet: flag " + f + ", data " + (int) w);
                }
                assertTrue(f >= last, "the flag went back");
                last = f;
                if (System.nanoTime() - deadline > 0) {
                    workers.check();
                    throw new AssertionError("the writer did not finish: flag " + f);
                }
            }
            workers.join(LONG_WAIT);
        }
    }

    @Test
    void invalidCallsAreRejectedAndChangeNothing() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment packets = arena.allocate(32, 8);
            MemorySegment data = arena.allocate(16);
            for (int i = 0; i < 4; i++) {
                packets.set(ValueLayout.JAVA_LONG, 8L * i, 0x0101_0101_0101_0101L * (i + 1));
                data.set(ValueLayout.JAVA_INT, 4L * i, i + 1);
            }
            byte[] packetsBefore = packets.toArray(ValueLayout.JAVA_BYTE);
            byte[] dataBefore = data.toArray(ValueLayout.JAVA_BYTE);
            Executable[] calls = {
                () -> LL8Packet.write(packets, 0, 1, 0),
                () -> LL8Packet.write(packets, 4, 1, 1),
                () -> LL8Packet.write(packets, 32, 1, 1),
                () -> LL8Packet.write(MemorySegment.ofArray(new long[4]), 0, 1, 1),
                () -> LL8Packet.copyToPackets(packets, 0, data, 0, 6, 1),
                () -> LL8Packet.copyToPackets(packets, 8, data, 0, 16, 1),
                () -> LL8Packet.copyToPackets(packets, 0, data, 4, 16, 1),
                () -> LL8Packet.copyFromPackets(data, 0, packets, 0, 16, 0, Duration.ZERO),
                () -> LL8Packet.copyFromPackets(data, 1, packets, 0, 16, 1, Duration.ZERO),
                () -> LL8Packet.clear(packets, 0, 12),
                () -> LL8Packet.clear(packets, 24, 16),
                () -> LL8Packet.bufferBytes(6),
            };
            for (int i = 0; i < calls.length; i++) {
                JmscclppException e = assertThrows(JmscclppException.class, calls[i], "call " + i);
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), "call " + i + ": " + e.getMessage());
            }
            assertArrayEquals(packetsBefore, packets.toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(dataBefore, data.toArray(ValueLayout.JAVA_BYTE));
        }
    }
}
