package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.spi.HostIdentity;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * RegisteredMemory's wire form and what deserializing it gives for an owner in this process, in
 * another process of this host, and on another host; and a fuzz of the decoder.
 */
class RegisteredMemoryTest {

    private static final int PID_HASH_OFFSET = 32;
    private static final int HOST_HASH_OFFSET = 24;

    @TempDir
    Path dir;

    private HostBackend backend;
    private Communicator comm;
    private DeviceBuffer buffer;

    @BeforeEach
    void open() {
        backend = HostBackend.open(dir);
        comm = Communicator.create(InMemoryBootstrap.group(1).get(0), backend);
        buffer = backend.allocate(4096);
    }

    @AfterEach
    void close() {
        comm.close();
        buffer.close();
        backend.close();
    }

    @Test
    void registerWithoutTransportsKeepsAddressSizeAndFlags() {
        RegisteredMemory m = comm.registerMemory(buffer, TransportFlags.NONE);
        assertEquals(buffer.address(), m.address());
        assertEquals(buffer.address(), m.originalAddress());
        assertEquals(4096, m.size());
        assertEquals(TransportFlags.NONE, m.transports());
        assertTrue(m.isLocal());
        assertTrue(m.isMapped());
        assertEquals(HostIdentity.hostHash(), m.hostHash());
        assertEquals(HostIdentity.pidHash(), m.pidHash());
    }

    @Test
    void sameProcessWithoutAnIpcHandleGivesTheSameBuffer() {
        RegisteredMemory m = comm.registerMemory(buffer, TransportFlags.NONE);
        try (RegisteredMemory back = RegisteredMemory.deserialize(m.serialize(), backend)) {
            assertEquals(m.address(), back.address());
            assertEquals(m.size(), back.size());
            assertFalse(back.isLocal());
            assertTrue(back.isMapped());
            back.hostSegment().set(ValueLayout.JAVA_INT, 0, 77);
            assertEquals(77, buffer.hostSegment().get(ValueLayout.JAVA_INT, 0));
        }
        assertFalse(buffer.isClosed(), "closing a same-process view must not free the owner's buffer");
    }

    @Test
    void sameProcessOnTheHostBackendMapsAViewThatOutlivesTheOwnersBuffer() {
        RegisteredMemory m = comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC));
        try (RegisteredMemory back = RegisteredMemory.deserialize(m.serialize(), backend)) {
            assertEquals(m.transports(), back.transports());
            assertFalse(back.isLocal());
            assertTrue(back.isMapped());
            assertNotEquals(buffer.address(), back.address(), "a mapping of its own, as in another process");
            assertEquals(buffer.address(), back.originalAddress());
            back.hostSegment().set(ValueLayout.JAVA_INT, 0, 77);
            assertEquals(77, buffer.hostSegment().get(ValueLayout.JAVA_INT, 0));
            buffer.hostSegment().set(ValueLayout.JAVA_INT, 4, 78);
            // a rank of this process that finished a call closes its buffer while a peer still reads it
            m.close();
            buffer.close();
            assertEquals(78, back.hostSegment().get(ValueLayout.JAVA_INT, 4));
            back.hostSegment().set(ValueLayout.JAVA_INT, 8, 79);
            assertEquals(79, back.hostSegment().get(ValueLayout.JAVA_INT, 8));
        }
    }

    @Test
    void sameHostOtherProcessIsMappedThroughHostIpc() {
        RegisteredMemory m = comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC));
        byte[] bytes = patchLong(m.serialize(), PID_HASH_OFFSET, HostIdentity.pidHash() + 1);
        try (RegisteredMemory mapped = RegisteredMemory.deserialize(bytes, backend)) {
            assertTrue(mapped.isMapped());
            assertNotEquals(buffer.address(), mapped.address(), "a second mapping has its own address");
            assertEquals(buffer.address(), mapped.originalAddress());
            mapped.hostSegment().set(ValueLayout.JAVA_LONG, 8, 0x1122334455667788L);
            assertEquals(0x1122334455667788L, buffer.hostSegment().get(ValueLayout.JAVA_LONG, 8));
            buffer.hostSegment().set(ValueLayout.JAVA_LONG, 16, 99L);
            assertEquals(99L, mapped.hostSegment().get(ValueLayout.JAVA_LONG, 16));
        }
        assertFalse(buffer.isClosed());
        assertEquals(0x1122334455667788L, buffer.hostSegment().get(ValueLayout.JAVA_LONG, 8));
    }

    @Test
    void otherHostKeepsOnlyTheAddress() {
        RegisteredMemory m = comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC, Transport.IB0));
        byte[] bytes = patchLong(m.serialize(), HOST_HASH_OFFSET, HostIdentity.hostHash() ^ 1);
        RegisteredMemory remote = RegisteredMemory.deserialize(bytes, backend);
        assertFalse(remote.isMapped());
        assertEquals(buffer.address(), remote.address());
        assertEquals(TransportFlags.of(Transport.HOST_IPC, Transport.IB0), remote.transports());
        assertInvalid(() -> remote.hostSegment());
        assertArrayEquals(m.handle(Transport.HOST_IPC), remote.handle(Transport.HOST_IPC));
    }

    @Test
    void aClosedBufferIsNotFoundAgain() {
        DeviceBuffer other = backend.allocate(64);
        RegisteredMemory m = comm.registerMemory(other, TransportFlags.NONE);
        byte[] bytes = m.serialize();
        other.close();
        assertInvalid(() -> RegisteredMemory.deserialize(bytes, backend));
    }

    @Test
    void registeringForATransportTheBackendCannotShareIsInvalid() {
        assertInvalid(() -> comm.registerMemory(buffer, TransportFlags.of(Transport.CUDA_IPC)));
    }

    @Test
    void rangeChecks() {
        RegisteredMemory m = comm.registerMemory(buffer, TransportFlags.NONE);
        m.checkRange(0, 4096, "t");
        m.checkRange(4096, 0, "t");
        assertInvalid(() -> m.checkRange(-1, 1, "t"));
        assertInvalid(() -> m.checkRange(1, 4096, "t"));
        assertInvalid(() -> m.checkRange(Long.MAX_VALUE, 2, "t"));
        assertInvalid(() -> m.checkRange(0, -1, "t"));
    }

    /**
     * 100k seeded inputs: random bytes, and mutations (bit flips, overwritten fields, truncation,
     * extension) of three valid forms (this process, another process of this host, another host).
     * Every outcome is either a usable memory or INVALID_USAGE.
     */
    @Test
    void fuzzedInputGivesOnlyInvalidUsage() {
        RegisteredMemory m = comm.registerMemory(buffer, TransportFlags.of(Transport.HOST_IPC, Transport.ETHERNET));
        byte[][] seeds = {
            m.serialize(),
            patchLong(m.serialize(), PID_HASH_OFFSET, HostIdentity.pidHash() + 1),
            patchLong(m.serialize(), HOST_HASH_OFFSET, HostIdentity.hostHash() + 1),
        };
        Random random = new Random(20261121L);
        int parsed = 0;
        int rejected = 0;
        for (int i = 0; i < 100_000; i++) {
            byte[] input = i % 5 == 0 ? randomBytes(random) : mutate(seeds[random.nextInt(seeds.length)], random);
            try (RegisteredMemory r = RegisteredMemory.deserialize(input, backend)) {
                assertTrue(r.size() > 0);
                parsed++;
            } catch (JmscclppException e) {
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), () -> e.getMessage() + " for " + Arrays.toString(input));
                rejected++;
            }
        }
        assertTrue(parsed > 1000 && rejected > 50_000, "parsed " + parsed + ", rejected " + rejected);
        assertEquals(4096, buffer.hostSegment().byteSize(), "the owner's buffer is intact");
    }

    private static byte[] randomBytes(Random random) {
        byte[] b = new byte[random.nextInt(160)];
        random.nextBytes(b);
        if (b.length >= 6 && random.nextBoolean()) {   // get past the magic and version checks sometimes
            ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(RegisteredMemory.MAGIC).putShort((short) 1);
        }
        return b;
    }

    private static byte[] mutate(byte[] seed, Random random) {
        byte[] b = seed.clone();
        switch (random.nextInt(6)) {
            case 0 -> {
                int flips = 1 + random.nextInt(4);
                for (int f = 0; f < flips; f++) {
                    b[random.nextInt(b.length)] ^= (byte) (1 << random.nextInt(8));
                }
            }
            case 1 -> b = Arrays.copyOf(b, random.nextInt(b.length));
            case 2 -> {
                b = Arrays.copyOf(b, b.length + 1 + random.nextInt(16));
                b[b.length - 1] = (byte) random.nextInt();
            }
            case 3 -> {   // a random value in one of the header's 16-bit or 32-bit fields
                int[] offsets = {4, 6, 40, 44, 46, 48, 50};
                int off = offsets[random.nextInt(offsets.length)];
                ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putShort(off, (short) random.nextInt());
            }
            case 4 -> {   // the entry's handle: corrupt a byte of the file name or the size
                int off = RegisteredMemory.HEADER + 4 + random.nextInt(Math.max(1, b.length - RegisteredMemory.HEADER - 4));
                b[Math.min(off, b.length - 1)] = (byte) random.nextInt();
            }
            default -> patchLongInPlace(b, 16, random.nextInt(3) == 0 ? random.nextLong() : random.nextInt(1 << 14) - 100);
        }
        return b;
    }

    private static byte[] patchLong(byte[] bytes, int offset, long value) {
        byte[] b = bytes.clone();
        patchLongInPlace(b, offset, value);
        return b;
    }

    private static void patchLongInPlace(byte[] b, int offset, long value) {
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putLong(offset, value);
    }

    private static void assertInvalid(org.junit.jupiter.api.function.Executable e) {
        assertEquals(ErrorCode.INVALID_USAGE, assertThrows(JmscclppException.class, e).code());
    }
}
