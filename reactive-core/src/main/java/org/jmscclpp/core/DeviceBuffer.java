package org.jmscclpp.core;

import java.lang.foreign.MemorySegment;

/**
 * A block of memory a {@link Backend} allocated, or mapped from another process: device memory on
 * a GPU backend, a shared-memory file on the host backend. Closing it frees (or unmaps) the memory;
 * closing twice is harmless.
 *
 * <p>{@link #address()} is the block's address in this process (a device pointer for GPU memory).
 * When the host can load and store the memory directly ({@link #hostAccessible()}: host backend
 * buffers, pinned host memory), {@link #hostSegment()} is a view of it for {@code VarHandle} and
 * bulk access; the view must not be used after {@link #close()}.
 */
public interface DeviceBuffer extends AutoCloseable {

    /** Start of the block in this process's address space. */
    long address();

    /** Length in bytes, at least 1. */
    long size();

    /** The device whose memory this is. */
    Device device();

    /** Whether {@link #hostSegment()} is available. */
    boolean hostAccessible();

    /**
     * The memory as a segment of {@link #size()} bytes that Java code on the host may read and
     * write, atomics included.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} if the host cannot access this
     *                           memory, or the buffer is closed
     */
    MemorySegment hostSegment();

    /** Whether {@link #close()} has been called. */
    boolean isClosed();

    /** Frees or unmaps the memory. Idempotent. */
    @Override
    void close();

    /**
     * A view of {@code size} bytes of this buffer from {@code offset}: what NCCL users express as
     * {@code ptr + offset}. The view shares the memory and its lifetime: it is closed when this
     * buffer is, and closing the view frees nothing. Slices of slices are slices of the original
     * buffer ({@link DeviceBufferSlice#parent()}). Backends' copies, and collectives, accept views
     * of their own buffers wherever they accept the buffers.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the range is not inside this
     *                           buffer or {@code size} is below 1
     */
    default DeviceBuffer slice(long offset, long size) {
        return DeviceBufferSlice.of(this, offset, size);
    }

    /**
     * Host memory the caller owns ({@code segment}: native or on the heap, such as
     * {@code MemorySegment.ofArray(float[])}), as a buffer that collectives accept and stage through
     * their own shared memory. Not a backend's memory: it cannot be registered with a
     * {@link Communicator} or exported, and {@link #close()} frees nothing.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for an empty or read-only segment
     */
    static DeviceBuffer wrap(java.lang.foreign.MemorySegment segment) {
        return new HostSegmentBuffer(segment);
    }
}
