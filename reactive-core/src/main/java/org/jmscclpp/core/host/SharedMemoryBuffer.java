package org.jmscclpp.core.host;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * A mapping of a shared-memory file: either a buffer a {@link HostBackend} allocated (it owns the
 * file, and {@link #close()} deletes it) or a peer's buffer it imported (the peer owns the file;
 * {@link #close()} only unmaps). The mapping lives in a shared {@link Arena}, so closing it makes
 * every view of it, in every thread, fail with {@link IllegalStateException} instead of touching
 * unmapped memory.
 *
 * <p>Thread-safe. {@link #close()} is idempotent; if another thread holds the segment in a
 * native call or I/O operation at that moment, the arena refuses to close and so does this
 * buffer ({@link ErrorCode#INVALID_USAGE}), staying usable.
 */
final class SharedMemoryBuffer implements DeviceBuffer {

    private final HostBackend backend;
    private final Path file;
    private final boolean owner;
    private final Arena arena;
    private final MemorySegment segment;
    private final long address;
    private volatile boolean closed;

    SharedMemoryBuffer(HostBackend backend, Path file, boolean owner, Arena arena, MemorySegment segment) {
        this.backend = backend;
        this.file = file;
        this.owner = owner;
        this.arena = arena;
        this.segment = segment;
        this.address = segment.address();
    }

    /** The backend that allocated or imported this buffer. */
    HostBackend backend() {
        return backend;
    }

    /** The shared-memory file behind the mapping. */
    Path file() {
        return file;
    }

    /** Whether this process created the file (and deletes it on close), rather than imported it. */
    boolean isOwner() {
        return owner;
    }

    /** The mapping, without the closed check of {@link #hostSegment()}; accesses fail once closed. */
    MemorySegment segment() {
        return segment;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long size() {
        return segment.byteSize();
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
        if (closed) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "buffer " + file.getFileName() + " is closed")
                    .phase("hostSegment").build();
        }
        return segment;
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    /**
     * Unmaps the file and, for a buffer this process allocated, deletes it: peers that mapped it
     * keep their mapping (the memory lives until the last mapping goes), but no peer can map it
     * any more.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when another thread holds the
     *                           mapping in a native or I/O call (the buffer stays open);
     *                           {@link ErrorCode#SYSTEM_ERROR} when the file cannot be deleted (the
     *                           buffer is closed; the exit hook tries again)
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            try {
                arena.close();
            } catch (IllegalStateException e) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "buffer " + file.getFileName()
                        + " is in use by another thread (" + e.getMessage() + "); it stays open").phase("close")
                        .cause(e).build();
            }
            closed = true;
        }
        if (owner) {
            try {
                SharedMemoryFiles.delete(file);
            } catch (IOException e) {
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot delete shared-memory file " + file
                        + ": " + e).phase("close").cause(e).build();
            }
        }
    }

    @Override
    public String toString() {
        return "SharedMemoryBuffer[" + file + ", " + size() + " bytes, " + (owner ? "owned" : "imported")
                + (closed ? ", closed" : "") + "]";
    }
}
