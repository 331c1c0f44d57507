package org.jmscclpp.core;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Host memory of the caller's, seen as a {@link DeviceBuffer} ({@link DeviceBuffer#wrap}): host
 * accessible, on the CPU, owned by whoever made the segment. Collectives stage it through memory of
 * their own; no backend registers or exports it.
 */
final class HostSegmentBuffer implements DeviceBuffer {

    private final MemorySegment segment;

    HostSegmentBuffer(MemorySegment segment) {
        Objects.requireNonNull(segment, "segment");
        if (segment.byteSize() < 1) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "cannot wrap an empty segment").phase("wrap")
                    .build();
        }
        if (segment.isReadOnly()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "cannot wrap a read-only segment: collectives"
                    + " write into their buffers").phase("wrap").build();
        }
        this.segment = segment;
    }

    /** The segment's address for native memory; 0 for a heap segment, which has none. */
    @Override
    public long address() {
        return segment.isNative() ? segment.address() : 0;
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
        if (!segment.scope().isAlive()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the wrapped segment's arena is closed")
                    .phase("wrap").build();
        }
        return segment;
    }

    @Override
    public boolean isClosed() {
        return !segment.scope().isAlive();
    }

    /** Frees nothing: the segment belongs to the caller. */
    @Override
    public void close() {
    }

    @Override
    public String toString() {
        return "wrapped host segment of " + segment.byteSize() + " bytes" + (segment.isNative() ? "" : " (heap)");
    }
}
