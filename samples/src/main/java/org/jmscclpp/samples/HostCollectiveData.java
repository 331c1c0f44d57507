package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.DeviceBuffer;

/**
 * {@link CollectiveData} in Java: values computed on this thread into a staging segment and moved
 * by the backend's copies, a chunk at a time so that large buffers need no large heap. Works on
 * any backend (its copies are synchronous); the host backend's choice.
 */
final class HostCollectiveData implements CollectiveData.Engine {

    /** Bytes staged per copy. */
    static final int CHUNK = 1 << 20;

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Backend backend;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment staging;

    HostCollectiveData(Backend backend) {
        this.backend = backend;
        this.staging = arena.allocate(CHUNK, 64);
    }

    @Override
    public void poison(DeviceBuffer out, DataType type, long elements) {
        int width = type.bytes();
        long bytes = elements * width;
        staging.fill((byte) 0xFF);   // the poison is all ones in every type
        for (long at = 0; at < bytes; at += CHUNK) {
            backend.copyFromHost(out, at, staging.asSlice(0, Math.min(CHUNK, bytes - at)));
        }
    }

    @Override
    public void input(DeviceBuffer dst, long byteOffset, CollectiveKind kind, DataType type, int n, int rank,
                      long count, long seed) {
        int width = type.bytes();
        long elements = CollectiveValues.inputElements(kind, n, count);
        long perChunk = CHUNK / width;
        for (long first = 0; first < elements; first += perChunk) {
            long m = Math.min(perChunk, elements - first);
            for (long i = 0; i < m; i++) {
                put(staging, width, i, CollectiveValues.inputBits(kind, type, seed, rank, first + i));
            }
            backend.copyFromHost(dst, byteOffset + first * width, staging.asSlice(0, m * width));
        }
    }

    @Override
    public long check(DeviceBuffer out, CollectiveKind kind, DataType type, int n, int rank, long count, long seed) {
        int width = type.bytes();
        long elements = CollectiveValues.outputElements(kind, n, count);
        long perChunk = CHUNK / width;
        long wrong = 0;
        for (long first = 0; first < elements; first += perChunk) {
            long m = Math.min(perChunk, elements - first);
            backend.copyToHost(staging.asSlice(0, m * width), out, first * width);
            for (long i = 0; i < m; i++) {
                int expected = CollectiveValues.expectedBits(kind, type, seed, n, rank, count, first + i);
                if (!CollectiveValues.matches(kind, type, expected, get(staging, width, i))) {
                    wrong++;
                }
            }
        }
        return wrong;
    }

    private static void put(MemorySegment s, int width, long index, int bits) {
        if (width == 2) {
            s.set(SHORT, index * 2, (short) bits);
        } else {
            s.set(INT, index * 4, bits);
        }
    }

    private static int get(MemorySegment s, int width, long index) {
        return width == 2 ? s.get(SHORT, index * 2) & 0xFFFF : s.get(INT, index * 4);
    }

    @Override
    public void close() {
        arena.close();
    }
}
