package org.jmscclpp.core.host;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.spi.BackendProvider;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.HostIdentity;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** Allocation, files, copies, endpoints and discovery of the host backend, in one process. */
class HostBackendTest {

    private static final Pattern NAME = Pattern.compile("jmscclpp-(\\d+)-(\\d+)-(\\d+)-([0-9a-f]{16})-(\\d+)");

    @TempDir
    Path dir;
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
    void allocateMakesAZeroedOwnerOnlyFileOfTheSizeInTheDirectory() throws IOException {
        try (DeviceBuffer b = backend.allocate(10_000)) {
            List<Path> files = files();
            assertEquals(1, files.size());
            Path file = files.getFirst();
            assertEquals(((SharedMemoryBuffer) b).file(), file);
            Matcher m = NAME.matcher(file.getFileName().toString());
            assertTrue(m.matches(), file.toString());
            assertEquals(ProcessHandle.current().pid(), Long.parseLong(m.group(1)));
            assertEquals(ProcessStart.current(), Long.parseLong(m.group(2)), "the owner's start time");
            assertEquals(ProcessStart.pidNamespace(), Long.parseLong(m.group(3)), "the owner's pid namespace");
            assertEquals(EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                    Files.getPosixFilePermissions(file));
            assertEquals(10_000, Files.size(file));
            assertEquals(10_000, b.size());
            assertEquals(Device.CPU, b.device());
            assertTrue(b.hostAccessible());
            assertFalse(b.isClosed());
            MemorySegment s = b.hostSegment();
            assertEquals(10_000, s.byteSize());
            assertEquals(s.address(), b.address());
            assertEquals(-1, s.mismatch(MemorySegment.ofArray(new byte[10_000])), "a new buffer is zeroed");
            // the mapping is the file: a store shows in the file's bytes
            s.set(ValueLayout.JAVA_BYTE, 9_999, (byte) 42);
            assertEquals(42, Files.readAllBytes(file)[9_999]);
        }
    }

    @Test
    void allocateHostVisibleIsSharedMemoryToo() throws IOException {
        try (DeviceBuffer b = backend.allocateHostVisible(8)) {
            Path file = files().getFirst();
            assertEquals(8, Files.size(file));
            assertEquals(EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                    Files.getPosixFilePermissions(file));
            assertEquals(0L, b.hostSegment().get(ValueLayout.JAVA_LONG, 0));
            assertEquals(0, b.address() % 4096, "mappings are page aligned, so tokens are 8-byte aligned");
        }
        assertEquals(List.of(), files());
    }

    @Test
    void namesAreUniqueAcrossBackendsAndProcessesShareNoNonce() {
        try (HostBackend other = HostBackend.open(dir)) {
            Set<String> names = new HashSet<>();
            Set<String> nonces = new HashSet<>();
            List<DeviceBuffer> buffers = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    for (HostBackend b : List.of(backend, other)) {
                        DeviceBuffer buf = b.allocate(64);
                        buffers.add(buf);
                        String name = ((SharedMemoryBuffer) buf).file().getFileName().toString();
                        Matcher m = NAME.matcher(name);
                        assertTrue(m.matches(), name);
                        names.add(name);
                        nonces.add(m.group(4));
                    }
                }
                assertEquals(6, names.size());
                assertEquals(2, nonces.size(), "one nonce per backend instance");
                assertEquals(6, files().size());
            } finally {
                buffers.forEach(DeviceBuffer::close);
            }
        }
        assertEquals(List.of(), files());
    }

    @Test
    void closeRemovesTheFileIsIdempotentAndRetiresTheSegment() {
        DeviceBuffer b = backend.allocate(4096);
        MemorySegment s = b.hostSegment();
        Path file = ((SharedMemoryBuffer) b).file();
        assertTrue(SharedMemoryFiles.isLive(file));
        b.close();
        assertTrue(b.isClosed());
        assertFalse(Files.exists(file));
        assertFalse(SharedMemoryFiles.isLive(file), "a deleted file is no longer the exit hook's business");
        b.close();
        assertCode(ErrorCode.INVALID_USAGE, b::hostSegment);
        // a view taken before close fails cleanly instead of touching unmapped memory
        assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_BYTE, 0));
    }

    @Test
    void concurrentClosesCloseOnce() throws Exception {
        for (int round = 0; round < 20; round++) {
            DeviceBuffer b = backend.allocate(4096);
            List<Thread> threads = new java.util.ArrayList<>();
            java.util.concurrent.ConcurrentLinkedQueue<Throwable> errors = new java.util.concurrent.ConcurrentLinkedQueue<>();
            for (int t = 0; t < 4; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        b.close();
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }));
            }
            for (Thread t : threads) {
                assertTrue(t.join(java.time.Duration.ofSeconds(10)), "a close did not return");
            }
            assertEquals(List.of(), List.copyOf(errors));
            assertTrue(b.isClosed());
        }
        assertEquals(List.of(), files());
    }

    @Test
    void closingWhileAnotherThreadCopiesEndsItsCopiesWithInvalidUsage() throws Exception {
        for (int round = 0; round < 10; round++) {
            DeviceBuffer a = backend.allocate(1 << 20);
            DeviceBuffer b = backend.allocate(1 << 20);
            java.util.concurrent.CountDownLatch copying = new java.util.concurrent.CountDownLatch(1);
            AtomicReference<Throwable> ended = new AtomicReference<>();
            Thread copier = Thread.ofPlatform().start(() -> {
                try {
                    while (true) {
                        backend.copy(b, 0, a, 0, 1 << 20);
                        copying.countDown();
                    }
                } catch (Throwable e) {
                    ended.set(e);
                }
            });
            assertTrue(copying.await(10, java.util.concurrent.TimeUnit.SECONDS));
            // the arena may refuse while the copier is inside an access: the buffer then stays open and says so
            long deadline = System.nanoTime() + java.time.Duration.ofSeconds(10).toNanos();
            while (!a.isClosed()) {
                try {
                    a.close();
                } catch (JmscclppException e) {
                    assertEquals(ErrorCode.INVALID_USAGE, e.code(), e::getMessage);
                    assertTrue(System.nanoTime() - deadline < 0, "close kept failing: " + e.getMessage());
                }
            }
            assertTrue(copier.join(java.time.Duration.ofSeconds(10)), "the copier did not stop");
            JmscclppException e = assertInstanceOf(JmscclppException.class, ended.get());
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e::getMessage);
            b.close();
        }
        assertEquals(List.of(), files());
    }

    @Test
    void sizesBelowOneAreInvalid() {
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.allocate(0));
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.allocate(-1));
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.allocateHostVisible(Long.MIN_VALUE));
        assertEquals(List.of(), files());
    }

    @Test
    void aSizeTheSystemCannotHoldIsASystemErrorNamingFileAndSize() {
        long huge = Long.MAX_VALUE / 2;
        JmscclppException e = assertCode(ErrorCode.SYSTEM_ERROR, () -> backend.allocate(huge));
        assertTrue(e.getMessage().contains(Long.toString(huge)), e.getMessage());
        assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("jmscclpp-"), e.getMessage());
        assertEquals(List.of(), files(), "a failed allocation leaves no file");
    }

    @Test
    void aClosedBackendMakesNothingNewButLeavesItsBuffersToTheirOwners() {
        DeviceBuffer b = backend.allocate(128);
        backend.close();
        backend.close();
        assertTrue(backend.isClosed());
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.allocate(1));
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.allocateHostVisible(1));
        byte[] handle = backend.exportMemory(b, Transport.HOST_IPC);
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.importMemory(Transport.HOST_IPC, handle, 128));
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.HOST_IPC)));
        // still the owner's: usable, copyable, and its file goes when the owner closes it
        b.hostSegment().set(ValueLayout.JAVA_BYTE, 3, (byte) 9);
        byte[] out = new byte[4];
        backend.copyToHost(MemorySegment.ofArray(out), b, 0);
        assertEquals(9, out[3]);
        assertEquals(1, files().size());
        b.close();
        assertEquals(List.of(), files());
    }

    @Test
    void copiesMoveBytesBetweenBuffersAndHostMemory() {
        try (DeviceBuffer a = backend.allocate(1000); DeviceBuffer b = backend.allocateHostVisible(500)) {
            byte[] data = new byte[300];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) (i * 31 + 1);
            }
            backend.copyFromHost(a, 700, MemorySegment.ofArray(data));
            backend.copy(b, 200, a, 700, 300);
            byte[] back = new byte[300];
            backend.copyToHost(MemorySegment.ofArray(back), b, 200);
            assertArrayEquals(data, back);
            // native host memory works as well as heap memory
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment n = arena.allocate(300);
                backend.copyToHost(n, a, 700);
                assertEquals(-1, n.mismatch(MemorySegment.ofArray(data)));
            }
            // overlapping ranges of one buffer
            backend.copy(a, 701, a, 700, 299);
            assertEquals(data[0], a.hostSegment().get(ValueLayout.JAVA_BYTE, 701));
            assertEquals(data[298], a.hostSegment().get(ValueLayout.JAVA_BYTE, 999));
        }
    }

    @Test
    void copiesOutsideTheBuffersAreInvalidAndChangeNothing() {
        try (DeviceBuffer a = backend.allocate(100); DeviceBuffer b = backend.allocate(100)) {
            MemorySegment ten = MemorySegment.ofArray(new byte[]{1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
            List<Executable> bad = List.of(
                    () -> backend.copy(a, -1, b, 0, 10),
                    () -> backend.copy(a, 0, b, -1, 10),
                    () -> backend.copy(a, 0, b, 0, -1),
                    () -> backend.copy(a, 91, b, 0, 10),
                    () -> backend.copy(a, 0, b, 91, 10),
                    () -> backend.copy(a, 0, b, 0, 101),
                    () -> backend.copy(a, Long.MAX_VALUE, b, 0, 10),
                    () -> backend.copy(a, 10, b, 0, Long.MAX_VALUE),
                    () -> backend.copyFromHost(a, 91, ten),
                    () -> backend.copyFromHost(a, -1, ten),
                    () -> backend.copyFromHost(a, 0, MemorySegment.ofArray(new byte[101])),
                    () -> backend.copyToHost(MemorySegment.ofArray(new byte[10]), b, 91),
                    () -> backend.copyToHost(MemorySegment.ofArray(new byte[10]), b, -5),
                    () -> backend.copyToHost(MemorySegment.ofArray(new byte[101]), b, 0));
            b.hostSegment().fill((byte) 7);
            for (Executable e : bad) {
                JmscclppException ex = assertCode(ErrorCode.INVALID_USAGE, e);
                assertTrue(ex.getMessage().contains("outside"), ex.getMessage());
            }
            assertEquals(-1, a.hostSegment().mismatch(MemorySegment.ofArray(new byte[100])), "a is untouched");
        }
    }

    @Test
    void buffersOfAnotherBackendOrClosedOnesAreRefused() {
        try (HostBackend other = HostBackend.open(dir);
             DeviceBuffer mine = backend.allocate(64);
             DeviceBuffer theirs = other.allocate(64)) {
            DeviceBuffer closed = backend.allocate(64);
            closed.close();
            DeviceBuffer foreign = new ForeignBuffer();
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.copy(mine, 0, theirs, 0, 8));
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.copy(theirs, 0, mine, 0, 8));
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.copy(mine, 0, foreign, 0, 8));
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.copy(mine, 0, closed, 0, 8));
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.copyFromHost(foreign, 0, MemorySegment.ofArray(new byte[1])));
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.copyToHost(MemorySegment.ofArray(new byte[1]), closed, 0));
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.exportMemory(theirs, Transport.HOST_IPC));
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.exportMemory(foreign, Transport.HOST_IPC));
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.exportMemory(closed, Transport.HOST_IPC));
            // a read-only destination of the caller's
            assertCode(ErrorCode.INVALID_USAGE, () -> backend.copyToHost(MemorySegment.ofArray(new byte[8]).asReadOnly(),
                    mine, 0));
        }
    }

    @Test
    void exportIsHostIpcOnly() {
        try (DeviceBuffer b = backend.allocate(64)) {
            for (Transport t : Transport.values()) {
                if (t != Transport.HOST_IPC) {
                    assertCode(ErrorCode.INVALID_USAGE, () -> backend.exportMemory(b, t));
                }
            }
            SharedMemoryHandle h = SharedMemoryHandle.decode(backend.exportMemory(b, Transport.HOST_IPC));
            assertEquals(((SharedMemoryBuffer) b).file().getFileName().toString(), h.name());
            assertEquals(64, h.fileSize());
        }
    }

    @Test
    void transportsAndIdentity() {
        assertEquals("host", backend.name());
        assertEquals(Device.CPU, backend.device());
        assertEquals(TransportFlags.of(Transport.HOST_IPC), backend.ipcTransports());
        assertEquals(TransportFlags.of(Transport.HOST_IPC), backend.ipcTransport().transports());
        assertEquals(dir.toAbsolutePath(), backend.directory());
    }

    @Test
    void theIpcTransportServesItsOwnBackendOnlyAndRegistersByExporting() throws Exception {
        var transport = backend.ipcTransport();
        assertTrue(transport.unavailableReason(backend, Transport.HOST_IPC).isEmpty());
        assertTrue(transport.unavailableReason(backend, Transport.CUDA_IPC).orElseThrow().contains("HOST_IPC"));
        try (HostBackend other = HostBackend.open(dir)) {
            assertTrue(transport.unavailableReason(other, Transport.HOST_IPC).orElseThrow().contains("another backend"));
            assertCode(ErrorCode.INVALID_USAGE, () -> transport.open(other));
        }
        try (DeviceBuffer b = backend.allocate(4096);
             var registration = transport.open(backend).registerMemory(b, Transport.HOST_IPC)) {
            assertArrayEquals(backend.exportMemory(b, Transport.HOST_IPC), registration.handle());
        }
    }

    @Test
    void endpointsAreHostIpcForTheCpu() {
        Endpoint e = backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.HOST_IPC));
        assertEquals(Transport.HOST_IPC, e.transport());
        assertEquals(Device.CPU, e.device());
        assertEquals(-1, e.maxWriteQueueSize());
        assertEquals(HostIdentity.hostHash(), e.hostHash());
        assertEquals(HostIdentity.pidHash(), e.pidHash());
        assertEquals(0, e.info().length);
        Endpoint numa = backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.builder(Transport.HOST_IPC)
                .device(new Device(org.jmscclpp.core.DeviceType.CPU, 1)).maxWriteQueueSize(16).build());
        assertEquals(1, numa.device().id());
        assertEquals(16, numa.maxWriteQueueSize());
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.ETHERNET)));
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.of(Transport.CUDA_IPC)));
        assertCode(ErrorCode.INVALID_USAGE, () -> backend.ipcTransport().open(backend).createEndpoint(EndpointConfig.builder(Transport.HOST_IPC)
                .device(Device.gpu(0)).build()));
    }

    @Test
    void openRejectsWhatIsNotAWritableDirectory() throws IOException {
        assertCode(ErrorCode.INVALID_USAGE, () -> HostBackend.open(dir.resolve("missing")));
        Path file = Files.createFile(dir.resolve("plain"));
        assertCode(ErrorCode.INVALID_USAGE, () -> HostBackend.open(file));
    }

    @Test
    void defaultDirectoryIsTheEnvironmentsThenDevShmThenTheTempDir() throws IOException {
        Path shm = Files.createDirectory(dir.resolve("shm"));
        Path tmp = Files.createDirectory(dir.resolve("tmp"));
        assertEquals(Path.of("/some/where"), HostBackend.defaultDirectory(" /some/where ", shm, tmp));
        assertEquals(shm, HostBackend.defaultDirectory(null, shm, tmp));
        assertEquals(shm, HostBackend.defaultDirectory("  ", shm, tmp));
        assertEquals(tmp, HostBackend.defaultDirectory(null, dir.resolve("no-shm"), tmp));
        assertCode(ErrorCode.INVALID_USAGE, () -> HostBackend.defaultDirectory("bad\0path", shm, tmp));
    }

    @Test
    void backendsFindTheHostBackendByNameAndAsBestWithoutGpus() {
        BackendProvider provider = Backends.providers().stream().filter(p -> p.name().equals("host")).findFirst()
                .orElseThrow(() -> new AssertionError("no host provider among " + Backends.providers()));
        assertInstanceOf(HostBackendProvider.class, provider);
        assertEquals(0, provider.priority());
        assertTrue(provider.unavailableReason().isEmpty());
        assertEquals(java.util.Optional.empty(), Backends.availability().get("host"));
        assertEquals(Backends.providers().stream().map(BackendProvider::name).toList(),
                List.copyOf(Backends.availability().keySet()), "the same backends, in priority order");
        try (Backend named = Backends.named("host")) {
            assertInstanceOf(HostBackend.class, named);
            assertEquals("host", named.name());
        }
        // reactive-core alone has no GPU backend on its class path
        try (Backend best = Backends.best()) {
            assertSame(HostBackend.class, best.getClass());
        }
    }

    @Test
    void toStringsNameTheFiles() {
        try (DeviceBuffer b = backend.allocate(16)) {
            assertTrue(b.toString().contains(((SharedMemoryBuffer) b).file().toString()), b.toString());
            assertTrue(backend.toString().contains(dir.toString()), backend.toString());
            assertNotEquals(backend.toString(), HostBackend.open(dir).toString());
        }
    }

    private List<Path> files() {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith("jmscclpp-")).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static JmscclppException assertCode(ErrorCode code, Executable e) {
        JmscclppException ex = assertThrows(JmscclppException.class, e);
        assertEquals(code, ex.code(), ex::getMessage);
        return ex;
    }

    /** A buffer of some other backend. */
    private static final class ForeignBuffer implements DeviceBuffer {
        private final MemorySegment memory = Arena.ofAuto().allocate(64);

        @Override
        public long address() {
            return memory.address();
        }

        @Override
        public long size() {
            return 64;
        }

        @Override
        public Device device() {
            return Device.CPU;
        }

        @Override
        public boolean hostAccessible() {
            return true;
        }

        @Override
        public MemorySegment hostSegment() {
            return memory;
        }

        @Override
        public boolean isClosed() {
            return false;
        }

        @Override
        public void close() {
        }
    }
}
