package org.jmscclpp.core;

import java.lang.foreign.MemorySegment;

/**
 * A range of another {@link DeviceBuffer}, made by {@link DeviceBuffer#slice}: the same memory at
 * {@link #address()} = parent address + {@link #offset()}. The parent is never itself a slice.
 * Backends and collectives resolve a slice to its parent and offset; closing a slice frees nothing.
 */
public final class DeviceBufferSlice implements DeviceBuffer {

    private final DeviceBuffer parent;
    private final long offset;
    private final long size;

    private DeviceBufferSlice(DeviceBuffer parent, long offset, long size) {
        this.parent = parent;
        this.offset = offset;
        this.size = size;
    }

    static DeviceBuffer of(DeviceBuffer buffer, long offset, long size) {
        if (size < 1 || offset < 0 || offset > buffer.size() || size > buffer.size() - offset) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a slice of " + size + " bytes at offset " + offset
                    + " does not fit in a buffer of " + buffer.size() + " bytes (" + buffer + ")").phase("slice").build();
        }
        if (buffer instanceof DeviceBufferSlice s) {
            return new DeviceBufferSlice(s.parent, s.offset + offset, size);
        }
        return offset == 0 && size == buffer.size() ? buffer : new DeviceBufferSlice(buffer, offset, size);
    }

    /** The buffer this is a range of (never a slice). */
    public DeviceBuffer parent() {
        return parent;
    }

    /** Where this range starts in {@link #parent()}, in bytes. */
    public long offset() {
        return offset;
    }

    /** The buffer {@code buffer} is part of: its parent for a slice, else itself. */
    public static DeviceBuffer root(DeviceBuffer buffer) {
        return buffer instanceof DeviceBufferSlice s ? s.parent : buffer;
    }

    /** Where {@code buffer} starts in {@link #root(DeviceBuffer)}: the slice's offset, else 0. */
    public static long offsetInRoot(DeviceBuffer buffer) {
        return buffer instanceof DeviceBufferSlice s ? s.offset : 0;
    }

    @Override
    public long address() {
        return parent.address() + offset;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public Device device() {
        return parent.device();
    }

    @Override
    public boolean hostAccessible() {
        return parent.hostAccessible();
    }

    @Override
    public MemorySegment hostSegment() {
        return parent.hostSegment().asSlice(offset, size);
    }

    @Override
    public boolean isClosed() {
        return parent.isClosed();
    }

    /** Frees nothing: the memory belongs to {@link #parent()}. */
    @Override
    public void close() {
    }

    @Override
    public String toString() {
        return "slice[" + offset + ", +" + size + "] of " + parent;
    }
}
