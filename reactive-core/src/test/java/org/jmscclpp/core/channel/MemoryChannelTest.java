package org.jmscclpp.core.channel;

import static org.jmscclpp.testkit.MemoryChannelPair.STEP;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.core.spi.HostIdentity;
import org.jmscclpp.testkit.MemoryChannelPair;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import reactor.test.StepVerifier;

/**
 * MemoryChannel's contract apart from the ping-pongs: range and argument checks that leave memory
 * as it was, packet waits that time out (or end on interrupt), single-value loads and stores, the
 * semaphore verbs, the device form, what build() and the constructor accept, memory closed while
 * in use, and the split of a range among a thread group.
 */
class MemoryChannelTest {

    private static final int HOST_HASH_OFFSET = 24;
    private static final int PID_HASH_OFFSET = 32;

    @TempDir
    Path dir;

    @Test
    void buildJoinsEachRanksSourceToThePeersExposedMemory() {
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 256, 512)) {
            for (int r = 0; r < 2; r++) {
                MemoryChannel ch = pair.channels.get(r);
                assertEquals(pair.packetBuffers.get(1 - r).address(), ch.dst().originalAddress(), "dst is the peer's packets");
                assertEquals(pair.dataBuffers.get(r).address(), ch.src().address());
                assertEquals(pair.packetBuffers.get(r).address(), ch.packetBuffer().address());
                assertEquals(1 - r, ch.semaphore().semaphore().connection().context().remoteRank());
            }
        }
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 256, 0)) {
            MemoryChannel ch = pair.channels.get(0);
            assertEquals(pair.dataBuffers.get(1).address(), ch.dst().originalAddress(), "in place: dst is the peer's data");
            assertSame(ch.src(), pair.registered.get(0));
            assertNull(ch.packetBuffer());
        }
    }

    @Test
    void invalidCallsAreRejectedNamingThePeerAndChangeNothing() {
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 256, 512)) {
            List<MemorySegment> all = List.of(pair.data(0), pair.data(1), pair.packets(0), pair.packets(1));
            for (int m = 0; m < all.size(); m++) {
                for (long i = 0; i < all.get(m).byteSize(); i++) {
                    all.get(m).set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + m));
                }
            }
            List<byte[]> before = all.stream().map(s -> s.toArray(ValueLayout.JAVA_BYTE)).toList();
            MemoryChannel ch = pair.channels.get(0);
            MemoryChannel.DeviceHandle h = ch.deviceHandle();   // dst: rank 1's packets (512), src: rank 0's data (256)
            MemoryChannel.DeviceHandle noPackets = new MemoryChannel(ch.semaphore(), ch.dst(), ch.src(), null).deviceHandle();
            Duration none = Duration.ZERO;
            Executable[] calls = {
                () -> h.put(-1, 0, 8),
                () -> h.put(0, -1, 8),
                () -> h.put(0, 0, -1),
                () -> h.put(505, 0, 8),
                () -> h.put(0, 250, 8),
                () -> h.put(0, 0, Long.MAX_VALUE),
                () -> h.put(Long.MAX_VALUE, 0, 1),
                () -> h.put(0, 257),
                () -> h.put(0, 0, 8, 3, 3),
                () -> h.put(0, 0, 8, -1, 3),
                () -> h.put(0, 0, 8, 0, 0),
                () -> h.get(512, 0, 1),
                () -> h.get(0, 256, 1),
                () -> h.get(0, 0, 8, 1, 1),
                () -> h.readInt(-1),
                () -> h.readInt(128),
                () -> h.writeInt(128, 1),
                () -> h.readLong(64),
                () -> h.writeLong(64, 1),
                () -> h.writeLong(-1, 1),
                () -> h.putPackets(8, 0, 8, 1),           // packets are 16-byte aligned
                () -> h.putPackets(0, 4, 8, 1),           // LL16 payload comes in 8-byte words
                () -> h.putPackets(0, 0, 12, 1),
                () -> h.putPackets(0, 0, 8, 0),           // flag 0
                () -> h.putPackets(0, 0, 264, 1),         // beyond src
                () -> h.putPackets(272, 0, 128, 1),       // 256 bytes of packets from 272: beyond dst
                () -> h.putPackets(0, 0, 8, 2, 2, 1),
                () -> h.putLL8Packets(4, 0, 4, 1),
                () -> h.putLL8Packets(0, 2, 4, 1),
                () -> h.putLL8Packets(0, 0, -4, 1),
                () -> h.unpackPackets(0, 0, 8, 0, none),
                () -> h.unpackPackets(512, 0, 8, 1, none),
                () -> h.unpackPackets(0, 256, 8, 1, none),
                () -> h.unpackPackets(0, 0, 8, 5, 1, 1, none),
                () -> h.unpackLL8Packets(0, 0, 6, 1, none),
                () -> h.unpackLL8Packets(8, 1, 4, 1, none),
                () -> noPackets.unpackPackets(0, 0, 8, 1, none),
            };
            for (int i = 0; i < calls.length; i++) {
                JmscclppException e = assertThrows(JmscclppException.class, calls[i], "call " + i);
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), "call " + i + ": " + e.getMessage());
                assertEquals(0, e.rank(), "call " + i);
                assertEquals(1, e.peer(), "call " + i);
                assertEquals(0, e.tag(), "call " + i);
                assertTrue(e.phase().startsWith("memory channel"), e.phase());
            }
            for (int m = 0; m < all.size(); m++) {
                assertArrayEquals(before.get(m), all.get(m).toArray(ValueLayout.JAVA_BYTE), "memory " + m + " changed");
            }
            // the edges themselves are inside
            h.putPackets(256, 128, 128, 1);
            h.put(504, 248, 8);
            assertEquals(pair.data(0).get(ValueLayout.JAVA_LONG, 248), pair.packets(1).get(ValueLayout.JAVA_LONG, 504));
        }
    }

    @Test
    void unpackTimesOutWhenThePeerNeverWritesAndKeepsWhatArrived() throws Exception {
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 64, 128)) {
            MemoryChannel.DeviceHandle h0 = pair.channels.get(0).deviceHandle();
            MemoryChannel.DeviceHandle h1 = pair.channels.get(1).deviceHandle();
            long start = System.nanoTime();
            JmscclppException e = assertThrows(JmscclppException.class,
                    () -> h1.unpackPackets(0, 0, 64, 1, Duration.ofMillis(200)));
            long elapsedMs = (System.nanoTime() - start) / 1_000_000;
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertEquals(1, e.rank());
            assertEquals(0, e.peer());
            assertEquals(0, e.tag());
            assertEquals("memory channel unpackPackets", e.phase());
            assertTrue(e.getMessage().contains("packet 0 (offset 0") && e.getMessage().contains("(0, 0), expected 1"),
                    e.getMessage());
            assertTrue(elapsedMs >= 200 && elapsedMs < 10_000, elapsedMs + " ms");

            MemoryChannelPair.fill(pair.data(0), 0, 16, 500);
            pair.data(1).fill((byte) 0x77);
            h0.putPackets(0, 0, 16, 1);   // two of the eight packets
            e = assertThrows(JmscclppException.class, () -> h1.unpackPackets(0, 0, 64, 1, Duration.ofMillis(20)));
            assertTrue(e.getMessage().contains("packet 2 (offset 32"), e.getMessage());
            MemoryChannelPair.check(pair.data(1), 0, 4, 500, "the packets that arrived");
            assertEquals(0x77777777, pair.data(1).get(ValueLayout.JAVA_INT, 16), "nothing past them");

            // an interrupt ends the wait at once, as a TIMEOUT that says so
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread waiter = Thread.ofPlatform().start(() -> {
                try {
                    h1.unpackLL8Packets(0, 0, 64, 9, Duration.ofSeconds(30));
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            waiter.interrupt();
            assertTrue(waiter.join(Duration.ofSeconds(10)), "the interrupted wait ended");
            JmscclppException interrupted = (JmscclppException) failure.get();
            assertEquals(ErrorCode.TIMEOUT, interrupted.code());
            assertTrue(interrupted.getMessage().contains("interrupted"), interrupted.getMessage());
        }
    }

    @Test
    void singleValuesAreLoadedAndStoredInThePeersMemoryLittleEndian() {
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 64, 0)) {
            MemoryChannel.DeviceHandle h0 = pair.channels.get(0).deviceHandle();
            MemoryChannel.DeviceHandle h1 = pair.channels.get(1).deviceHandle();
            h0.writeInt(3, 0xCAFEBABE);
            h0.writeLong(5, 0x1122334455667788L);
            h0.writeInt(15, -1);
            MemorySegment peer = pair.data(1);
            assertEquals((byte) 0xBE, peer.get(ValueLayout.JAVA_BYTE, 12));
            assertEquals((byte) 0xCA, peer.get(ValueLayout.JAVA_BYTE, 15));
            assertEquals((byte) 0x88, peer.get(ValueLayout.JAVA_BYTE, 40));
            assertEquals((byte) 0x11, peer.get(ValueLayout.JAVA_BYTE, 47));
            assertEquals(-1, peer.get(ValueLayout.JAVA_INT, 60));
            assertEquals(0, peer.get(ValueLayout.JAVA_INT, 8), "nothing else is written");
            assertEquals(0xCAFEBABE, h0.readInt(3));
            assertEquals(0x1122334455667788L, h0.readLong(5));
            assertEquals(0x55667788, h0.readInt(10));

            pair.data(0).set(ValueLayout.JAVA_LONG, 56, 42L);
            assertEquals(42L, h1.readLong(7));
            assertEquals(0, h1.readInt(0));
        }
    }

    @Test
    void semaphoreVerbsSignalThePeer() {
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 8, 0)) {
            MemoryChannel.DeviceHandle h0 = pair.channels.get(0).deviceHandle();
            MemoryChannel.DeviceHandle h1 = pair.channels.get(1).deviceHandle();
            assertFalse(h1.poll());
            h0.signal();
            assertTrue(h1.poll());
            assertFalse(h1.poll());
            h0.relaxedSignal();
            h0.signal();
            h1.awaitRelaxed(STEP);
            h1.await(STEP);
            JmscclppException e = assertThrows(JmscclppException.class, () -> h1.await(Duration.ofMillis(30)));
            assertEquals(ErrorCode.TIMEOUT, e.code());
            assertEquals(0, e.peer());
            assertFalse(h0.poll(), "signals go one way");
        }
    }

    @Test
    void theDeviceFormHoldsTheSemaphoreThenDstSrcAndPacketAddresses() {
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 64, 128)) {
            MemoryChannel ch = pair.channels.get(1);
            ByteBuffer out = ByteBuffer.allocate(4 + MemoryChannel.DEVICE_HANDLE_BYTES + 4);
            out.position(4);
            ch.encodeDeviceHandle(out);
            assertEquals(4 + 48, out.position());
            assertEquals(ByteOrder.BIG_ENDIAN, out.order(), "the caller's byte order is left alone");
            ByteBuffer semaphore = ByteBuffer.allocate(MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES);
            ch.semaphore().deviceHandle().encode(semaphore);
            assertArrayEquals(semaphore.array(), Arrays.copyOfRange(out.array(), 4, 28));
            ByteBuffer le = ByteBuffer.wrap(out.array()).order(ByteOrder.LITTLE_ENDIAN);
            // the peer's packets as mapped here (a rank of this process maps its own view, as another process does)
            assertEquals(pair.packetBuffers.get(0).address(), ch.dst().originalAddress());
            assertEquals(ch.dst().address(), le.getLong(28));
            assertEquals(pair.dataBuffers.get(1).address(), le.getLong(36));
            assertEquals(pair.packetBuffers.get(1).address(), le.getLong(44));
            assertEquals(0, le.getInt(52));

            try (MemoryChannelPair inPlace = new MemoryChannelPair(dir, 64, 0)) {
                ByteBuffer form = ByteBuffer.allocate(48).order(ByteOrder.LITTLE_ENDIAN);
                inPlace.channels.get(0).encodeDeviceHandle(form);
                MemoryChannel in = inPlace.channels.get(0);
                assertEquals(inPlace.dataBuffers.get(1).address(), in.dst().originalAddress());
                assertEquals(in.dst().address(), form.getLong(24));
                assertEquals(0, form.getLong(40), "no packet buffer: a null pointer");
            }
            ByteBuffer small = ByteBuffer.allocate(47);
            JmscclppException e = assertThrows(JmscclppException.class, () -> ch.encodeDeviceHandle(small));
            assertEquals(ErrorCode.INVALID_USAGE, e.code());
            assertEquals(0, small.position(), "nothing written");
        }
    }

    @Test
    void onlyThisRanksMemoryServesAsSourceAndOnlyMappedMemoryAsDestination() {
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 64, 0)) {
            MemoryChannel ch = pair.channels.get(0);
            MemoryDevice2DeviceSemaphore sem = ch.semaphore();
            assertInvalid(() -> new MemoryChannel(sem, ch.dst(), ch.dst(), null));
            assertInvalid(() -> new MemoryChannel(sem, ch.dst(), ch.src(), ch.dst()));
            RegisteredMemory otherHost = RegisteredMemory.deserialize(
                    patchLong(ch.src().serialize(), HOST_HASH_OFFSET, HostIdentity.hostHash() ^ 1), pair.group.backend);
            assertFalse(otherHost.isMapped());
            JmscclppException e = assertInvalid(() -> new MemoryChannel(sem, otherHost, ch.src(), null));
            assertTrue(e.getMessage().contains("mapped"), e.getMessage());
            Connection c = sem.semaphore().connection();
            StepVerifier.create(MemoryChannel.build(pair.group.comm(0), c, ch.dst(), ch.src(), null))
                    .expectErrorSatisfies(x -> assertEquals(ErrorCode.INVALID_USAGE, ((JmscclppException) x).code()))
                    .verify(STEP);
        }
    }

    /** The peer's memory mapped a second time in this process (as another process maps it), then unmapped under the channel. */
    @Test
    void aMappingClosedUnderTheChannelFailsItsVerbsCleanly() {
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 4096, 8192)) {
            MemoryChannel ch = pair.channels.get(0);
            RegisteredMemory peerData = pair.registered.get(2);   // registered in order: data 0, packets 0, data 1, packets 1
            assertEquals(pair.dataBuffers.get(1).address(), peerData.address());
            RegisteredMemory mapped = RegisteredMemory.deserialize(
                    patchLong(peerData.serialize(), PID_HASH_OFFSET, HostIdentity.pidHash() + 1), pair.group.backend);
            assertNotEquals(peerData.address(), mapped.address(), "a mapping of its own");
            MemoryChannel.DeviceHandle h = new MemoryChannel(ch.semaphore(), mapped, ch.src(), ch.packetBuffer())
                    .deviceHandle();
            MemoryChannelPair.fill(pair.data(0), 0, 1024, 7);
            h.put(0, 0, 4096, 0, 2);
            h.put(0, 0, 4096, 1, 2);
            MemoryChannelPair.check(pair.data(1), 0, 1024, 7, "through the second mapping");
            h.putPackets(0, 0, 2048, 3);
            assertEquals(3, pair.data(1).get(ValueLayout.JAVA_INT, 4), "a packet's flag");
            byte[] before = pair.data(1).toArray(ValueLayout.JAVA_BYTE);
            mapped.close();
            for (Executable call : new Executable[] {() -> h.put(0, 0, 8), () -> h.get(0, 0, 8), () -> h.readInt(0),
                    () -> h.writeLong(0, 1), () -> h.putPackets(0, 0, 8, 4), () -> h.putLL8Packets(0, 0, 4, 4)}) {
                JmscclppException e = assertInvalid(call);
                assertTrue(e.getMessage().contains("closed"), e.getMessage());
            }
            assertArrayEquals(before, pair.data(1).toArray(ValueLayout.JAVA_BYTE), "nothing written after the close");
        }
    }

    /** Shares are contiguous, in thread order, cut at whole units, within one unit of each other, and cover the range. */
    @Test
    void aRangeIsSplitIntoContiguousBalancedShares() {
        for (long count = 0; count <= 300; count++) {
            for (long unit : new long[] {1, 4, 8, 64}) {
                for (int n = 1; n <= 9; n++) {
                    List<Long> sizes = new ArrayList<>();
                    long expected = 0;
                    for (int t = 0; t < n; t++) {
                        long first = MemoryChannel.shareStart(count, unit, t, n);
                        long end = MemoryChannel.shareStart(count, unit, t + 1, n);
                        String where = count + " elements, unit " + unit + ", thread " + t + " of " + n;
                        assertEquals(expected, first, where);
                        assertTrue(end >= first, where);
                        assertTrue(first % unit == 0 || first == count, where);
                        sizes.add(end - first);
                        expected = end;
                    }
                    assertEquals(count, expected, "the shares cover the range");
                    long units = (count + unit - 1) / unit;
                    long most = sizes.stream().mapToLong(Long::longValue).max().orElseThrow();
                    assertTrue(most <= ((units + n - 1) / n) * unit, "balanced: " + sizes);
                }
            }
        }
        assertEquals(0, MemoryChannel.shareStart(1L << 40, 64, 0, 1000));
        assertEquals(1L << 40, MemoryChannel.shareStart(1L << 40, 64, 1000, 1000));
    }

    private static JmscclppException assertInvalid(Executable call) {
        JmscclppException e = assertThrows(JmscclppException.class, call);
        assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
        return e;
    }

    private static byte[] patchLong(byte[] bytes, int offset, long value) {
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putLong(offset, value);
        return bytes;
    }
}
