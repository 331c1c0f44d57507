package org.jmscclpp.core;

import java.lang.foreign.MemorySegment;
import org.jmscclpp.core.spi.TransportProvider;

/**
 * What the communicator needs from the memory and copy engine under it: the SPI that the host
 * backend (CPU ranks, shared-memory files) and the CUDA backend implement. Find one with
 * {@link Backends}; code above this interface does not know which one it runs on.
 *
 * <p>Methods that take offsets and sizes check them against the buffers and throw
 * {@link ErrorCode#INVALID_USAGE} when a range falls outside. Nothing here waits on a peer, so
 * nothing here returns a {@code Mono}: allocation, export and import are local and quick.
 * Implementations are thread-safe.
 */
public interface Backend extends AutoCloseable {

    /** Short lower-case name: {@code host}, {@code cuda}. */
    String name();

    /** The device this backend allocates on. */
    Device device();

    /** Allocates {@code size} bytes of device memory (shared memory on the host backend), zeroed. */
    DeviceBuffer allocate(long size);

    /**
     * Allocates {@code size} zeroed bytes that the host can access through
     * {@link DeviceBuffer#hostSegment()} and the device can access too: where fifos, semaphore
     * tokens and flush positions live (pinned device-mapped memory on CUDA).
     */
    DeviceBuffer allocateHostVisible(long size);

    /** Copies {@code size} bytes between two buffers of this backend; returns when the copy is done. */
    void copy(DeviceBuffer dst, long dstOffset, DeviceBuffer src, long srcOffset, long size);

    /** Copies all of {@code src} (heap or native) into {@code dst} at {@code dstOffset}. */
    void copyFromHost(DeviceBuffer dst, long dstOffset, MemorySegment src);

    /** Copies {@code dst.byteSize()} bytes of {@code src} from {@code srcOffset} into {@code dst}. */
    void copyToHost(MemorySegment dst, DeviceBuffer src, long srcOffset);

    /** The IPC transports whose memory handles this backend exports and imports ({@code HOST_IPC}, {@code CUDA_IPC}). */
    TransportFlags ipcTransports();

    /**
     * A handle that lets another process of this host map {@code buffer} through {@code transport}
     * (one of {@link #ipcTransports()}); the bytes travel inside {@link RegisteredMemory#serialize()}.
     */
    byte[] exportMemory(DeviceBuffer buffer, Transport transport);

    /**
     * Maps memory that another process exported: {@code handle} came from {@link #exportMemory} in
     * that process and {@code size} is the exported buffer's size. The bytes come from a peer and
     * are checked: a malformed handle, or one naming memory that no longer exists, is
     * {@link ErrorCode#INVALID_USAGE}. Closing the returned buffer unmaps it.
     */
    DeviceBuffer importMemory(Transport transport, byte[] handle, long size);

    /**
     * Whether {@link #importMemory} can map memory this very process exported. Where it can (shared
     * memory files), a rank that receives the registration of another rank of its own process maps
     * the memory again, so that the owner closing its buffer leaves the peer's view as valid as a
     * peer in another process would keep it; where it cannot (CUDA IPC refuses its own process), the
     * peer gets the owner's very buffer.
     */
    default boolean importsOwnMemory() {
        return false;
    }

    /**
     * The connections over this backend's own transports ({@link #ipcTransports()}), offered through the same SPI as
     * every other transport's: the communicator registers memory and connects through it as it does through the
     * providers of {@code ETHERNET} and {@code IB0..IB7}. Peers on other hosts, or endpoints of another transport,
     * are {@link ErrorCode#INVALID_USAGE} naming the peer when connecting.
     */
    TransportProvider ipcTransport();

    /** Releases what the backend holds for itself (not the buffers handed out, which their owners close). */
    @Override
    void close();
}
