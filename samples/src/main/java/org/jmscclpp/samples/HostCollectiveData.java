package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.collective.DataType;

/**
 * {@link CollectiveData} in Java, a chunk at a time so that large buffers need no large heap:
 * buffers the host can access ({@link DeviceBuffer#hostAccessible()}: the host backend's, wrapped
 * segments) are read and written in place; others through the backend's copies and a staging
 * segment. Expected reductions come from {@link org.jmscclpp.core.collective.Reductions#reduce}
 * over rows of every rank's inputs. Synchronous: {@link #await()} has nothing to wait for.
 */
final class HostCollectiveData implements CollectiveData.Engine {

    /** Bytes of one chunk. */
    static final int CHUNK = 1 << 20;

    private final Backend backend;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment staging;
    private final MemorySegment expected;
    private MemorySegment rows;

    HostCollectiveData(Backend backend) {
        this.backend = backend;
        this.staging = arena.allocate(CHUNK, 64);
        this.expected = arena.allocate(CHUNK, 64);
        this.rows = arena.allocate(CHUNK, 64);
    }

    @Override
    public void poison(DeviceBuffer out, DataType type, long elements) {
        long bytes = elements * type.bytes();
        if (out.hostAccessible()) {
            out.hostSegment().asSlice(0, bytes).fill((byte) 0xFF);
            return;
        }
        staging.fill((byte) 0xFF);   // the poison is all ones in every type
        for (long at = 0; at < bytes; at += CHUNK) {
            backend.copyFromHost(out, at, staging.asSlice(0, Math.min(CHUNK, bytes - at)));
        }
    }

    @Override
    public void input(DeviceBuffer dst, CollectiveRun run, int rank, long seed) {
        int w = run.type().bytes();
        long elements = run.sendElements();
        long perChunk = CHUNK / w;
        for (long first = 0; first < elements; first += perChunk) {
            long m = Math.min(perChunk, elements - first);
            if (dst.hostAccessible()) {
                CollectiveValues.writeInputs(run, seed, rank, first, m, dst.hostSegment().asSlice(first * w, m * w));
            } else {
                CollectiveValues.writeInputs(run, seed, rank, first, m, staging);
                backend.copyFromHost(dst, first * w, staging.asSlice(0, m * w));
            }
        }
    }

    @Override
    public void await() {
        // every write above was done when it returned
    }

    @Override
    public long check(DeviceBuffer out, CollectiveRun run, int rank, long seed) {
        int w = run.type().bytes();
        long elements = run.recvElements();
        long perChunk = CHUNK / w;
        if (rows.byteSize() < (long) CHUNK * run.n()) {
            rows = arena.allocate((long) CHUNK * run.n(), 64);
        }
        long wrong = 0;
        for (long first = 0; first < elements; first += perChunk) {
            long m = Math.min(perChunk, elements - first);
            MemorySegment actual;
            if (out.hostAccessible()) {
                actual = out.hostSegment().asSlice(first * w, m * w);
            } else {
                actual = staging.asSlice(0, m * w);
                backend.copyToHost(actual, out, first * w);
            }
            CollectiveValues.writeExpected(run, seed, rank, first, m, expected, rows);
            long from = 0;
            while (from < m) {
                long at = MemorySegment.mismatch(expected, from * w, m * w, actual, from * w, m * w);
                if (at < 0) {
                    break;
                }
                wrong++;
                from += at / w + 1;
            }
        }
        return wrong;
    }

    @Override
    public void close() {
        arena.close();
    }
}
