package org.jmscclpp.core.host;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.DeviceBufferSlice;
import org.jmscclpp.core.DeviceType;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.HostIdentity;
import org.jmscclpp.core.spi.IpcTransport;
import org.jmscclpp.core.spi.TransportProvider;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Backend} of CPU ranks: every buffer is a shared-memory file, mapped into this
 * process, that the other processes of the host map through {@link Transport#HOST_IPC} (what
 * CUDA IPC is to GPU ranks). Connections are {@code HOST_IPC} only: a write is a copy into the
 * peer's mapping.
 *
 * <h2>Files</h2>
 * A backend works in one directory: {@link #open(Path)}'s, or for {@link #open()} the
 * environment variable {@value #SHM_DIR_ENV}, else {@code /dev/shm} where it is a writable
 * directory, else {@code java.io.tmpdir}. Every rank of a host must use the same directory, since
 * a peer's handle names a file in it. Each buffer is a new file
 * {@code jmscclpp-<pid>-<start>-<pidns>-<nonce>-<counter>}, where {@code start} is the process's
 * start time (clock ticks since boot on Linux), {@code pidns} its pid namespace's inode, and the
 * nonce is 16 random hex digits drawn per backend,
 * so processes, jobs and backends sharing a directory never collide. Files are created
 * exclusively (an existing file or link of that name is an error, never reused) with mode 0600
 * from the start, and filled with zeros, so the memory is reserved at allocation: a full
 * {@code /dev/shm} is a {@link ErrorCode#SYSTEM_ERROR} from {@link #allocate}, never a bus error
 * on first touch.
 *
 * <p>A file is deleted when its buffer is closed, and otherwise when the JVM exits (one shutdown
 * hook per process deletes every file still alive). A process killed with {@code SIGKILL} leaves
 * its files behind; the next process that creates a file in the directory reclaims them: it
 * deletes every file of this naming pattern, owned by the same user, made in its own pid
 * namespace (a container that shares the directory is left alone), whose owner (pid and start
 * time) no longer runs (and the pid-only names of earlier versions whose pid is free), and logs
 * one line saying how many files and bytes it reclaimed. The file of a process that still runs is
 * never touched.
 *
 * <h2>Lifetime</h2>
 * Buffers and mappings belong to whoever received them, not to the backend: {@link #close()}
 * neither unmaps nor deletes them (their owners close them; the exit hook deletes what remains),
 * as in MSCCL++ where a context's memory outlives nothing it handed out. After {@code close()},
 * the calls that make something new ({@link #allocate}, {@link #allocateHostVisible},
 * {@link #importMemory}, endpoints and connections) are
 * {@link ErrorCode#INVALID_USAGE}; copies and exports of buffers still open keep working.
 *
 * <h2>Peers' handles</h2>
 * {@link #importMemory} trusts nothing in a handle ({@link SharedMemoryHandle}): only a name this
 * backend could have made is accepted, resolved inside this backend's directory, opened without
 * following a symbolic link, and mapped only when it is a regular file of exactly the announced
 * size.
 *
 * <p>Thread-safe; every method returns when its work is done.
 */
public final class HostBackend implements Backend {

    /** Environment variable naming the directory of the shared-memory files. */
    public static final String SHM_DIR_ENV = "JMSCCLPP_SHM_DIR";

    private static final TransportFlags IPC = TransportFlags.of(Transport.HOST_IPC);

    private final TransportProvider ipcTransport = new IpcTransport(this, this::createEndpoint, this::connect);
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Set<OpenOption> IMPORT_OPTIONS = Set.of(StandardOpenOption.READ, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS);

    private final Path directory;
    private final long pid;
    private final long start;
    private final String nonce;
    private final AtomicLong counter = new AtomicLong();
    private volatile boolean closed;

    private HostBackend(Path directory) {
        this.directory = directory;
        this.pid = ProcessHandle.current().pid();
        this.start = ProcessStart.current();
        byte[] random = new byte[8];
        RANDOM.nextBytes(random);
        this.nonce = HexFormat.of().formatHex(random);
    }

    /**
     * A backend in the default directory: {@value #SHM_DIR_ENV} when set, else {@code /dev/shm}
     * when it is a writable directory, else {@code java.io.tmpdir}.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when that is not a writable directory
     */
    public static HostBackend open() {
        return open(defaultDirectory(System.getenv(SHM_DIR_ENV), Path.of("/dev/shm"),
                Path.of(System.getProperty("java.io.tmpdir"))));
    }

    /**
     * A backend whose shared-memory files live in {@code directory}.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when it is not a writable directory
     */
    public static HostBackend open(Path directory) {
        Path dir = directory.toAbsolutePath();
        if (!Files.isDirectory(dir) || !Files.isWritable(dir)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the shared-memory directory " + dir
                    + " is not a writable directory (choose another with " + SHM_DIR_ENV + ")").phase("backend")
                    .build();
        }
        return new HostBackend(dir);
    }

    /** The directory choice of {@link #open()}, from the environment value and the two fallbacks. */
    static Path defaultDirectory(@Nullable String env, Path shm, Path tmp) {
        if (env != null && !env.isBlank()) {
            try {
                return Path.of(env.strip());
            } catch (InvalidPathException e) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, SHM_DIR_ENV + "=" + env
                        + " is not a path: " + e.getMessage()).phase("backend").cause(e).build();
            }
        }
        return Files.isDirectory(shm) && Files.isWritable(shm) ? shm : tmp;
    }

    /** The directory of this backend's files. */
    public Path directory() {
        return directory;
    }

    @Override
    public String name() {
        return "host";
    }

    @Override
    public Device device() {
        return Device.CPU;
    }

    /**
     * A new zeroed shared-memory file of {@code size} bytes, mapped here.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when {@code size < 1} or the backend
     *                           is closed; {@link ErrorCode#SYSTEM_ERROR} naming the file and the
     *                           size when it cannot be created, filled or mapped (no space left,
     *                           address space exhausted)
     */
    @Override
    public DeviceBuffer allocate(long size) {
        return allocate(size, "allocate");
    }

    /** The same as {@link #allocate}: shared memory is host memory. */
    @Override
    public DeviceBuffer allocateHostVisible(long size) {
        return allocate(size, "allocateHostVisible");
    }

    private DeviceBuffer allocate(long size, String phase) {
        checkOpen(phase);
        if (size < 1) {
            throw invalid(phase, "a buffer has at least 1 byte, asked for " + size);
        }
        Path file = directory.resolve(fileName(counter.getAndIncrement()));
        long free = usableSpace();
        if (free >= 0 && size > free) {
            throw cannotAllocate(phase, file, size, "the file system has only " + free + " bytes free", null);
        }
        FileChannel channel;
        try {
            channel = SharedMemoryFiles.create(file);
        } catch (IOException | IllegalStateException | UnsupportedOperationException e) {
            throw cannotAllocate(phase, file, size, e.toString(), e);
        }
        Arena arena = Arena.ofShared();
        try (channel) {
            reserve(channel, size);
            MemorySegment segment = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            return new SharedMemoryBuffer(this, file, true, arena, segment);
        } catch (IOException | RuntimeException e) {
            arena.close();
            try {
                SharedMemoryFiles.delete(file);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw cannotAllocate(phase, file, size, e.toString(), e);
        }
    }

    /** The name of this backend's buffer number {@code counter}. */
    String fileName(long counter) {
        return SharedMemoryHandle.fileName(pid, start, ProcessStart.pidNamespace(), nonce, counter);
    }

    /**
     * Writes zeros over the whole file: that sizes it and makes the file system commit its pages
     * now, so a lack of space fails here rather than as SIGBUS when the mapping is first touched.
     */
    private static void reserve(FileChannel channel, long size) throws IOException {
        long position = 0;
        while (position < size) {
            ByteBuffer chunk = Zeros.CHUNK.duplicate();
            chunk.limit((int) Math.min(chunk.capacity(), size - position));
            while (chunk.hasRemaining()) {
                position += channel.write(chunk, position);
            }
        }
    }

    /** A read-only direct megabyte of zeros, made on the first allocation; duplicates are thread-confined. */
    private static final class Zeros {
        static final ByteBuffer CHUNK = ByteBuffer.allocateDirect(1 << 20).asReadOnlyBuffer();
    }

    private long usableSpace() {
        try {
            return Files.getFileStore(directory).getUsableSpace();
        } catch (IOException | SecurityException e) {
            return -1;   // unknown: the write of the zeros will tell
        }
    }

    private JmscclppException cannotAllocate(String phase, Path file, long size, String why, @Nullable Throwable cause) {
        return JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot allocate " + size
                + " bytes of shared memory as " + file + ": " + why).phase(phase).cause(cause).build();
    }

    /**
     * Copies between two open buffers of this backend (or {@linkplain DeviceBuffer#slice slices} of
     * them); overlapping ranges copy as if through a temporary.
     */
    @Override
    public void copy(DeviceBuffer dst, long dstOffset, DeviceBuffer src, long srcOffset, long size) {
        String phase = "copy";
        SharedMemoryBuffer d = ours(dst, phase, "destination");
        SharedMemoryBuffer s = ours(src, phase, "source");
        checkRange(dst.size(), dstOffset, size, phase, "destination");
        checkRange(src.size(), srcOffset, size, phase, "source");
        copySegments(s.segment(), DeviceBufferSlice.offsetInRoot(src) + srcOffset, d.segment(),
                DeviceBufferSlice.offsetInRoot(dst) + dstOffset, size, phase);
    }

    @Override
    public void copyFromHost(DeviceBuffer dst, long dstOffset, MemorySegment src) {
        String phase = "copyFromHost";
        SharedMemoryBuffer d = ours(dst, phase, "destination");
        checkRange(dst.size(), dstOffset, src.byteSize(), phase, "destination");
        copySegments(src, 0, d.segment(), DeviceBufferSlice.offsetInRoot(dst) + dstOffset, src.byteSize(), phase);
    }

    @Override
    public void copyToHost(MemorySegment dst, DeviceBuffer src, long srcOffset) {
        String phase = "copyToHost";
        SharedMemoryBuffer s = ours(src, phase, "source");
        if (dst.isReadOnly()) {
            throw invalid(phase, "the destination segment is read-only");
        }
        checkRange(src.size(), srcOffset, dst.byteSize(), phase, "source");
        copySegments(s.segment(), DeviceBufferSlice.offsetInRoot(src) + srcOffset, dst, 0, dst.byteSize(), phase);
    }

    private static void copySegments(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long size,
                                     String phase) {
        try {
            MemorySegment.copy(src, srcOffset, dst, dstOffset, size);
        } catch (IllegalStateException | WrongThreadException | IllegalArgumentException
                 | IndexOutOfBoundsException e) {
            // a buffer closed meanwhile, a caller's segment of another thread's arena
            throw invalid(phase, "the copy of " + size + " bytes failed: " + e.getMessage());
        }
    }

    /** The buffer of this backend that {@code buffer} is, or is a slice of. */
    private SharedMemoryBuffer ours(DeviceBuffer buffer, String phase, String which) {
        if (!(DeviceBufferSlice.root(buffer) instanceof SharedMemoryBuffer b) || b.backend() != this) {
            throw invalid(phase, "the " + which + " is not a buffer of this host backend: " + buffer);
        }
        if (b.isClosed()) {
            throw invalid(phase, "the " + which + " buffer is closed: " + buffer);
        }
        return b;
    }

    private static void checkRange(long size, long offset, long length, String phase, String which) {
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
            throw invalid(phase, which + " range [" + offset + ", " + offset + " + " + length
                    + ") is outside the buffer of " + size + " bytes");
        }
    }

    @Override
    public TransportFlags ipcTransports() {
        return IPC;
    }

    /** A shared-memory file maps as well in the process that made it as in any other. */
    @Override
    public boolean importsOwnMemory() {
        return true;
    }

    /**
     * The {@link SharedMemoryHandle} of a buffer this backend allocated: its file name and size.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for another transport than
     *                           {@code HOST_IPC}, a buffer of another backend, a closed buffer or a
     *                           mapping of a peer's buffer (only the owner exports)
     */
    @Override
    public byte[] exportMemory(DeviceBuffer buffer, Transport transport) {
        String phase = "exportMemory";
        if (transport != Transport.HOST_IPC) {
            throw invalid(phase, "the host backend exports memory over HOST_IPC only, not " + transport);
        }
        if (buffer instanceof DeviceBufferSlice) {
            throw invalid(phase, "export the buffer itself, not a slice of it: " + buffer);
        }
        SharedMemoryBuffer b = ours(buffer, phase, "exported");
        if (!b.isOwner()) {
            throw invalid(phase, "a peer's memory mapped here cannot be exported again; its owner exports it: " + b);
        }
        return new SharedMemoryHandle(b.file().getFileName().toString(), b.size()).encode();
    }

    /**
     * Maps {@code size} bytes of the file a peer's handle names, read-write and shared: stores of
     * either side are seen by the other. Closing the result unmaps it and leaves the file to its
     * owner.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for another transport, a malformed
     *                           handle, a size outside [1, the handle's file size], or a name that
     *                           is a symbolic link, not a regular file, or a file of another size
     *                           than the handle says, or a file that does not exist (the peer
     *                           closed the memory it sent, or ended: the handle names nothing);
     *                           {@link ErrorCode#SYSTEM_ERROR} when the system refuses to open or
     *                           map an acceptable file
     */
    @Override
    public DeviceBuffer importMemory(Transport transport, byte[] handle, long size) {
        String phase = "importMemory";
        checkOpen(phase);
        if (transport != Transport.HOST_IPC) {
            throw invalid(phase, "the host backend imports memory over HOST_IPC only, not " + transport);
        }
        SharedMemoryHandle h = SharedMemoryHandle.decode(handle);
        if (size < 1 || size > h.fileSize()) {
            throw invalid(phase, "cannot map " + size + " bytes of " + h.name() + ", a file of " + h.fileSize()
                    + " bytes");
        }
        Path file = directory.resolve(h.name());
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            throw gone(file, e);
        } catch (IOException e) {
            throw system(phase, "cannot read the attributes of " + file + ": " + e, e);
        }
        checkAttributes(file, attributes, h.fileSize());
        FileChannel channel;
        try {
            channel = FileChannel.open(file, IMPORT_OPTIONS);
        } catch (NoSuchFileException e) {
            throw gone(file, e);
        } catch (AccessDeniedException e) {
            throw invalid(phase, "a peer's handle names " + file + ", which this user may not open");
        } catch (IOException e) {
            // the name may have become a link since it was checked: O_NOFOLLOW refused it
            if (Files.isSymbolicLink(file)) {
                throw invalid(phase, "a peer's handle names " + file + ", which is a symbolic link");
            }
            throw system(phase, "cannot open " + file + ": " + e, e);
        }
        Arena arena = Arena.ofShared();
        long actual;
        try (channel) {
            actual = channel.size();   // of the file actually opened, whatever the name points at now
            if (actual == h.fileSize()) {
                MemorySegment segment = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
                return new SharedMemoryBuffer(this, file, false, arena, segment);
            }
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw system(phase, "cannot map " + size + " bytes of " + file + ": " + e, e);
        }
        arena.close();
        throw invalid(phase, "a peer's handle says " + file + " has " + h.fileSize() + " bytes, it has " + actual);
    }

    private static void checkAttributes(Path file, BasicFileAttributes attributes, long fileSize) {
        if (attributes.isSymbolicLink()) {
            throw invalid("importMemory", "a peer's handle names " + file + ", which is a symbolic link");
        }
        if (!attributes.isRegularFile()) {
            throw invalid("importMemory", "a peer's handle names " + file + ", which is not a regular file");
        }
        if (attributes.size() != fileSize) {
            throw invalid("importMemory", "a peer's handle says " + file + " has " + fileSize + " bytes, it has "
                    + attributes.size());
        }
    }

    private JmscclppException gone(Path file, Throwable cause) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "the peer's memory " + file.getFileName()
                + " no longer exists in " + directory + ": the peer closed it or ended (or it uses another "
                + SHM_DIR_ENV + ")").phase("importMemory").cause(cause).build();
    }

    /** {@code HOST_IPC} connections, through the same SPI as every other transport's. */
    @Override
    public TransportProvider ipcTransport() {
        return ipcTransport;
    }

    /**
     * This process's {@code HOST_IPC} endpoint, for {@code config.device()} or the CPU; it carries
     * no transport bytes, since the peer's memory handles say everything a write needs.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for another transport, a GPU device
     *                           or a closed backend
     */
    private Endpoint createEndpoint(EndpointConfig config) {
        String phase = "createEndpoint";
        checkOpen(phase);
        if (config.transport() != Transport.HOST_IPC) {
            throw invalid(phase, "the host backend makes HOST_IPC endpoints only, not " + config.transport());
        }
        Device device = config.device() != null ? config.device() : Device.CPU;
        if (device.type() != DeviceType.CPU) {
            throw invalid(phase, "the host backend works for the CPU, not " + device);
        }
        return Endpoint.local(config, device, new byte[0]);
    }

    /**
     * A {@code HOST_IPC} connection from {@code local} (an endpoint of this process) to a peer of
     * this host.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} naming the peer when either
     *                           endpoint is not {@code HOST_IPC}, the peer is on another host, the
     *                           local endpoint is not this process's, or the backend is closed
     */
    private Connection connect(Endpoint local, Endpoint remote, ConnectionContext context) {
        if (closed) {
            throw connectError(context, "the host backend is closed");
        }
        if (local.transport() != Transport.HOST_IPC || remote.transport() != Transport.HOST_IPC) {
            throw connectError(context, "the host backend connects HOST_IPC endpoints only; this rank's is "
                    + local.transport() + ", rank " + context.remoteRank() + "'s is " + remote.transport());
        }
        if (local.pidHash() != HostIdentity.pidHash() || local.hostHash() != HostIdentity.hostHash()) {
            throw connectError(context, "the local endpoint was not made by this process: " + local);
        }
        if (local.device().type() != DeviceType.CPU) {
            throw connectError(context, "the host backend works for the CPU, not " + local.device());
        }
        if (remote.hostHash() != local.hostHash()) {
            throw connectError(context, "HOST_IPC connects ranks of one host; rank " + context.remoteRank()
                    + " is on another host (" + remote + ")");
        }
        return new HostIpcConnection(local, remote, context);
    }

    private static JmscclppException connectError(ConnectionContext context, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(context.rank())
                .peer(context.remoteRank()).tag(context.tag()).phase("connect").build();
    }

    /**
     * Makes later allocations, imports, endpoints and connections {@link ErrorCode#INVALID_USAGE}.
     * Buffers, mappings and connections handed out stay as they are: their owners close them,
     * and the JVM's exit deletes files still alive. Idempotent.
     */
    @Override
    public void close() {
        closed = true;
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    private void checkOpen(String phase) {
        if (closed) {
            throw invalid(phase, "the host backend is closed");
        }
    }

    private static JmscclppException invalid(String phase, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase(phase).build();
    }

    private static JmscclppException system(String phase, String detail, Throwable cause) {
        return JmscclppException.builder(ErrorCode.SYSTEM_ERROR, detail).phase(phase).cause(cause).build();
    }

    @Override
    public String toString() {
        return "HostBackend[" + directory + ", jmscclpp-" + pid + "-" + start + "-" + ProcessStart.pidNamespace() + "-" + nonce + "-*" + (closed ? ", closed" : "") + "]";
    }
}
