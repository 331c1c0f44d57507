package org.jmscclpp.core.host;

import static org.jmscclpp.core.host.HostBackendTest.assertCode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Export and import of HOST_IPC handles: sharing, the handle's wire form, and handles a peer got wrong on purpose. */
class SharedMemoryImportTest {

    @TempDir
    Path dir;
    @TempDir
    Path elsewhere;
    private HostBackend backend;

    @BeforeEach
    void open() {
        backend = HostBackend.open(dir);
    }

    @AfterEach
    void close() {
        backend.close();
    }

    @Test
    void handleWireFormIsTheDocumentedLayout() {
        String name = SharedMemoryHandle.fileName(1234, 98765, 4026531836L, "0123456789abcdef", 7);
        assertEquals("jmscclpp-1234-98765-4026531836-0123456789abcdef-7", name);
        assertEquals(new SharedMemoryHandle.Owner(1234, 98765, 4026531836L), SharedMemoryHandle.owner(name).orElseThrow());
        byte[] bytes = new SharedMemoryHandle(name, 0x0102030405L).encode();
        ByteBuffer in = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(2, in.get());
        assertEquals(0, in.get());
        assertEquals(name.length(), in.getShort());
        byte[] n = new byte[name.length()];
        in.get(n);
        assertEquals(name, new String(n, StandardCharsets.US_ASCII));
        assertEquals(0x0102030405L, in.getLong());
        assertFalse(in.hasRemaining());
        assertEquals(new SharedMemoryHandle(name, 0x0102030405L), SharedMemoryHandle.decode(bytes));
    }

    @Test
    void aSecondMappingSeesWritesBothWaysAndLeavesTheFileToItsOwner() {
        DeviceBuffer owner = backend.allocate(8192);
        byte[] handle = backend.exportMemory(owner, Transport.HOST_IPC);
        DeviceBuffer peer = backend.importMemory(Transport.HOST_IPC, handle, 8192);
        assertNotEquals(owner.address(), peer.address(), "a mapping of its own");
        assertEquals(8192, peer.size());
        assertTrue(peer.hostAccessible());
        owner.hostSegment().set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
        assertEquals(0x1122334455667788L, peer.hostSegment().get(ValueLayout.JAVA_LONG, 0));
        peer.hostSegment().set(ValueLayout.JAVA_INT, 8188, 0xCAFEBABE);
        assertEquals(0xCAFEBABE, owner.hostSegment().get(ValueLayout.JAVA_INT, 8188));
        // copies work on mappings too
        byte[] out = new byte[8];
        backend.copyToHost(MemorySegment.ofArray(out), peer, 0);
        assertEquals(0x1122334455667788L, MemorySegment.ofArray(out).get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
        // only the owner exports
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.exportMemory(peer, Transport.HOST_IPC));

        Path file = ((SharedMemoryBuffer) owner).file();
        peer.close();
        assertTrue(peer.isClosed());
        assertTrue(Files.exists(file), "unmapping an import does not delete the owner's file");
        owner.hostSegment().set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
        // an import outlives the owner's close: the memory lives until its last mapping goes
        DeviceBuffer again = backend.importMemory(Transport.HOST_IPC, handle, 100);
        assertEquals(100, again.size());
        owner.close();
        assertFalse(Files.exists(file));
        again.hostSegment().set(ValueLayout.JAVA_BYTE, 99, (byte) 5);
        assertEquals(1, again.hostSegment().get(ValueLayout.JAVA_BYTE, 0));
        again.close();
        // and once the owner closed, the handle names nothing
        JmscclppException e = assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                handle, 8192));
        assertTrue(e.getMessage().contains("no longer exists"), e.getMessage());
        assertEquals(List.of(), files(dir));
    }

    @Test
    void badSizesAndTransportsAreInvalid() {
        try (DeviceBuffer owner = backend.allocate(4096)) {
            byte[] handle = backend.exportMemory(owner, Transport.HOST_IPC);
            for (long size : new long[]{0, -1, 4097, Long.MAX_VALUE, Long.MIN_VALUE}) {
                assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, handle, size));
            }
            for (Transport t : Transport.values()) {
                if (t != Transport.HOST_IPC) {
                    assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(t, handle, 4096));
                }
            }
        }
    }

    @Test
    void truncatedOverlongAndOtherVersionHandlesAreInvalid() {
        try (DeviceBuffer owner = backend.allocate(4096)) {
            byte[] handle = backend.exportMemory(owner, Transport.HOST_IPC);
            for (int n = 0; n < handle.length; n++) {
                byte[] cut = Arrays.copyOf(handle, n);
                assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, cut, 1));
            }
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                    Arrays.copyOf(handle, handle.length + 1), 1));
            for (int version : new int[]{0, 1, 3, 255}) {
                byte[] h = handle.clone();
                h[0] = (byte) version;
                assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, h, 1));
            }
            byte[] reserved = handle.clone();
            reserved[1] = 1;
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, reserved, 1));
            byte[] longer = handle.clone();
            longer[2]++;
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, longer, 1));
            byte[] zeroSize = raw(SharedMemoryHandle.VERSION, 0, ascii(name(backend, 0)), 0);
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, zeroSize, 1));
            byte[] negativeSize = raw(SharedMemoryHandle.VERSION, 0, ascii(name(backend, 0)), -4096);
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, negativeSize, 1));
        }
    }

    @Test
    void namesOutsideTheNamingPatternAreInvalidWhateverTheyPointAt() throws IOException {
        Path outside = Files.write(elsewhere.resolve("secret"), new byte[4096]);
        String good = name(backend, 0);
        List<String> names = List.of(
                "/etc/passwd",
                outside.toString(),
                "../" + elsewhere.getFileName() + "/secret",
                "..",
                ".",
                "../" + good,
                good + "/../../etc/passwd",
                "./" + good,
                "sub/" + good,
                good + "/",
                good + "\0",
                good.toUpperCase(java.util.Locale.ROOT),
                good.replace("jmscclpp-", "jmscclpp--"),
                good + "-1",
                good + " ",
                "jmscclpp-1-2-0123456789abcde-0",        // 15 hex digits
                "jmscclpp-1-2-0123456789abcdefa-0",      // 17
                "jmscclpp--1-2-0123456789abcdef-0",
                "jmscclpp-1-2-0123456789abcdef-",
                "jmscclpp-1-0123456789abcdef-0",         // the pid only: version 1's names
                "jmscclpp-12345678901234567890-2-0123456789abcdef-0",
                "jmscclpp-1-9999999999999999999-0123456789abcdef-0",   // 19 digits above Long.MAX_VALUE
                "secret",
                "passwd",
                "x".repeat(SharedMemoryHandle.MAX_NAME + 1));
        for (String n : names) {
            byte[] h = raw(SharedMemoryHandle.VERSION, 0, n.getBytes(StandardCharsets.UTF_8), 4096);
            JmscclppException e = assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                    h, 4096));
            assertTrue(e.getMessage().contains("malformed HOST_IPC memory handle"), e.getMessage());
        }
        byte[] nonAscii = raw(SharedMemoryHandle.VERSION, 0, (good.substring(0, good.length() - 1) + "\u00e9").getBytes(StandardCharsets.UTF_8), 4096);
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, nonAscii, 4096));
        assertArrayEquals(new byte[4096], Files.readAllBytes(outside));
    }

    @Test
    void aSymbolicLinkInTheDirectoryIsNeverFollowed() throws IOException {
        Path outside = Files.write(elsewhere.resolve("target"), new byte[4096]);
        String linkName = name(backend, 1000);
        Files.createSymbolicLink(dir.resolve(linkName), outside);
        JmscclppException e = assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                raw(SharedMemoryHandle.VERSION, 0, ascii(linkName), 4096), 4096));
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        // not even to a genuine buffer of ours
        try (DeviceBuffer owner = backend.allocate(4096)) {
            String toOurs = name(backend, 1001);
            Files.createSymbolicLink(dir.resolve(toOurs), ((SharedMemoryBuffer) owner).file());
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                    raw(SharedMemoryHandle.VERSION, 0, ascii(toOurs), 4096), 4096));
            // a dangling link: INVALID_USAGE too, not "the peer closed it"
            String dangling = name(backend, 1002);
            Files.createSymbolicLink(dir.resolve(dangling), elsewhere.resolve("missing"));
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                    raw(SharedMemoryHandle.VERSION, 0, ascii(dangling), 4096), 4096));
            Files.delete(dir.resolve(toOurs));
            Files.delete(dir.resolve(dangling));
        }
        Files.delete(dir.resolve(linkName));
        assertArrayEquals(new byte[4096], Files.readAllBytes(outside));
    }

    @Test
    void onlyARegularFileOfTheAnnouncedSizeIsMapped() throws Exception {
        String small = name(backend, 2000);
        Files.write(dir.resolve(small), new byte[100]);
        JmscclppException e = assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                raw(SharedMemoryHandle.VERSION, 0, ascii(small), 4096), 4096));
        assertTrue(e.getMessage().contains("100"), e.getMessage());
        // larger than announced is refused as well: the handle must describe the file exactly
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, raw(SharedMemoryHandle.VERSION, 0, ascii(small), 50), 50));
        String directory = name(backend, 2001);
        Files.createDirectory(dir.resolve(directory));
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                raw(SharedMemoryHandle.VERSION, 0, ascii(directory), 4096), 4096));
        String fifo = name(backend, 2002);
        if (mkfifo(dir.resolve(fifo))) {
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                    raw(SharedMemoryHandle.VERSION, 0, ascii(fifo), 4096), 4096));
        } else {
            System.out.println("skipping the FIFO case: mkfifo is not available here");
        }
        // and a well-formed name of no file is the peer's memory gone
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC,
                raw(SharedMemoryHandle.VERSION, 0, ascii(name(backend, 2003)), 4096), 4096));
    }

    @Test
    void mutatedHandlesFailOnlyAsInvalidUsageOrRemoteError() throws IOException {
        Path outside = Files.write(elsewhere.resolve("target"), new byte[4096]);
        Files.createSymbolicLink(dir.resolve(name(backend, 5)), outside);
        try (DeviceBuffer owner = backend.allocate(4096); DeviceBuffer other = backend.allocate(64)) {
            List<byte[]> seeds = List.of(backend.exportMemory(owner, Transport.HOST_IPC),
                    backend.exportMemory(other, Transport.HOST_IPC), raw(SharedMemoryHandle.VERSION, 0, ascii(name(backend, 5)), 4096));
            Random random = new Random(0x5EED_4057L);
            int mapped = 0;
            java.util.Map<ErrorCode, Integer> refused = new java.util.EnumMap<>(ErrorCode.class);
            for (int i = 0; i < 4000; i++) {
                byte[] h = mutate(seeds.get(random.nextInt(seeds.size())).clone(), random);
                long size = switch (random.nextInt(4)) {
                    case 0 -> 4096;
                    case 1 -> 64;
                    case 2 -> 1 + random.nextInt(8192);
                    default -> random.nextLong();
                };
                try {
                    DeviceBuffer b = backend.importMemory(Transport.HOST_IPC, h, size);
                    mapped++;
                    assertEquals(size, b.size());
                    b.close();
                } catch (JmscclppException e) {
                    if (e.code() != ErrorCode.INVALID_USAGE) {
                        throw new AssertionError("handle " + HexFormat.of().formatHex(h) + ", size " + size, e);
                    }
                    refused.merge(e.code(), 1, Integer::sum);
                } catch (RuntimeException e) {
                    throw new AssertionError("handle " + HexFormat.of().formatHex(h) + ", size " + size
                            + " escaped as " + e, e);
                }
            }
            System.out.println("fuzz: " + mapped + " mapped, refused " + refused);
            // the mutations reach both outcomes: refusals (parse errors, missing files) and a few valid handles
            assertTrue(refused.getOrDefault(ErrorCode.INVALID_USAGE, 0) > 2000, refused::toString);
            assertTrue(mapped > 10, "mapped " + mapped);
            assertEquals(3, files(dir).size(), "the two buffers and the link, nothing more");
        }
        assertArrayEquals(new byte[4096], Files.readAllBytes(outside));
        Files.delete(dir.resolve(name(backend, 5)));
    }

    @Test
    void twoHundredCyclesLeaveNoFileAndNoDescriptor() {
        Path fds = Path.of("/proc/self/fd");
        assumeTrue(Files.isDirectory(fds), "no /proc/self/fd here");
        for (int i = 0; i < 5; i++) {   // class loading and the first allocation's lazy set-up open files once
            cycle(i);
        }
        long before = count(fds);
        for (int i = 0; i < 200; i++) {
            cycle(i);
        }
        long after = count(fds);
        assertEquals(List.of(), files(dir));
        // a leak would be one or two descriptors per cycle; allow for the odd descriptor the JVM opens meanwhile
        assertTrue(after - before <= 3, "open file descriptors went from " + before + " to " + after);
    }

    private void cycle(int i) {
        DeviceBuffer owner = backend.allocate(4096 + i);
        DeviceBuffer peer = backend.importMemory(Transport.HOST_IPC, backend.exportMemory(owner, Transport.HOST_IPC),
                4096 + i);
        owner.hostSegment().set(ValueLayout.JAVA_INT, 0, i);
        assertEquals(i, peer.hostSegment().get(ValueLayout.JAVA_INT, 0));
        peer.close();
        owner.close();
    }

    private static byte[] mutate(byte[] h, Random random) {
        int rounds = 1 + random.nextInt(3);
        for (int r = 0; r < rounds; r++) {
            switch (random.nextInt(8)) {
                case 0 -> {
                    if (h.length > 0) {
                        int at = random.nextInt(h.length);
                        h[at] ^= (byte) (1 << random.nextInt(8));
                    }
                }
                case 1 -> {
                    if (h.length > 0) {
                        h[random.nextInt(h.length)] = (byte) random.nextInt(256);
                    }
                }
                case 2 -> h = Arrays.copyOf(h, random.nextInt(h.length + 1));
                case 3 -> {
                    byte[] longer = Arrays.copyOf(h, h.length + 1 + random.nextInt(8));
                    for (int i = h.length; i < longer.length; i++) {
                        longer[i] = (byte) random.nextInt(256);
                    }
                    h = longer;
                }
                case 4 -> {
                    // a character that matters to paths, inside the name
                    if (h.length > 5) {
                        byte[] tricky = {'/', '.', '-', '0', 'f', 0, '\\', ' '};
                        h[4 + random.nextInt(h.length - 4)] = tricky[random.nextInt(tricky.length)];
                    }
                }
                case 5 -> {
                    if (h.length >= 4) {
                        int len = random.nextInt(3) == 0 ? random.nextInt(65536) : (h[2] & 0xFF) + random.nextInt(5) - 2;
                        h[2] = (byte) len;
                        h[3] = (byte) (len >>> 8);
                    }
                }
                case 6 -> {
                    if (h.length >= 8) {
                        // another file size
                        long size = random.nextBoolean() ? random.nextLong() : random.nextInt(8192);
                        ByteBuffer.wrap(h, h.length - 8, 8).order(ByteOrder.LITTLE_ENDIAN).putLong(size);
                    }
                }
                default -> {
                    // another counter: mostly names of files that do not exist
                    if (h.length > 10 && random.nextBoolean()) {
                        int at = h.length - 9;
                        h[at] = (byte) ('0' + random.nextInt(10));
                    }
                }
            }
        }
        return h;
    }

    private static boolean mkfifo(Path p) throws InterruptedException {
        try {
            Process pr = new ProcessBuilder("mkfifo", p.toString()).redirectErrorStream(true).start();
            if (!pr.waitFor(10, TimeUnit.SECONDS)) {
                pr.destroyForcibly();
                return false;
            }
            return pr.exitValue() == 0 && Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            return false;
        }
    }

    /** A name of this process's naming pattern with the backend's nonce and the given counter. */
    private static String name(HostBackend b, long counter) {
        return b.fileName(counter);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** A handle with every field chosen by the test, bypassing the record's checks. */
    static byte[] raw(int version, int reserved, byte[] name, long size) {
        return ByteBuffer.allocate(4 + name.length + 8).order(ByteOrder.LITTLE_ENDIAN).put((byte) version)
                .put((byte) reserved).putShort((short) name.length).put(name).putLong(size).array();
    }

    private static long count(Path fds) {
        try (Stream<Path> s = Files.list(fds)) {
            return s.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<Path> files(Path d) {
        try (Stream<Path> s = Files.list(d)) {
            return s.toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
