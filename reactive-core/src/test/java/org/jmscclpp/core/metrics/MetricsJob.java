package org.jmscclpp.core.metrics;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.testkit.ProxyFixture;

/**
 * The job both metrics tests measure: two ranks of this JVM over the host backend
 * ({@link ProxyFixture}: HOST_IPC connections, one proxy service and port channel per rank), in
 * three steps whose counts the tests know exactly.
 */
final class MetricsJob implements AutoCloseable {

    static final Duration WAIT = Duration.ofSeconds(30);
    /** Step 1: rank 0 writes {@link #WRITES} × {@link #WRITE_BYTES} bytes on its connection, then flushes it. */
    static final int WRITES = 3;
    static final int WRITE_BYTES = 1000;
    /** Step 2: rank 0's port channel pushes {@link #PUTS} putWithSignal of {@link #PUT_BYTES}, then a flush. */
    static final int PUTS = 4;
    static final int PUT_BYTES = 256;
    /** Step 3: every rank runs {@link #ALLREDUCES} allreduces of {@link #COUNT} floats. */
    static final int ALLREDUCES = 2;
    static final int COUNT = 1000;

    final ProxyFixture fixture;
    private CollectiveComm[] collectives = new CollectiveComm[0];
    private DeviceBuffer[] buffers = new DeviceBuffer[0];

    MetricsJob(Path dir) {
        fixture = new ProxyFixture(dir, 2, 1 << 16);
    }

    Connection connection0() {
        return fixture.connections.get(0);
    }

    ProxyService proxy0() {
        return fixture.proxy(0);
    }

    /** Step 1: plain writes and a flush on rank 0's connection, into rank 1's buffer (exchanged on tag 7). */
    void writeAndFlush() {
        List<RegisteredMemory> peers = fixture.group.onEveryRank(r -> {
            Communicator c = fixture.group.comm(r);
            int peer = 1 - r;
            return c.recvMemory(peer, 7).zipWith(c.sendMemory(fixture.memories.get(r), peer, 7).thenReturn(0),
                    (m, x) -> m);
        });
        for (int i = 0; i < WRITES; i++) {
            connection0().write(peers.get(0), (long) i * WRITE_BYTES, fixture.memories.get(0), 0, WRITE_BYTES);
        }
        connection0().flush(WAIT).block(WAIT);
    }

    /** Step 2: triggers through rank 0's proxy: PUTS × (DATA | FLAG), then one SYNC. */
    void triggers() {
        fixture.proxies.forEach(ProxyService::start);
        for (int i = 0; i < PUTS; i++) {
            fixture.channel(0).putWithSignal((long) i * PUT_BYTES, PUT_BYTES);
        }
        fixture.channel(0).flush(WAIT);
    }

    /** Step 3: a collective communicator per rank, and ALLREDUCES allreduces on each. */
    void allReduces() {
        collectives = fixture.group.onEveryRank(r -> CollectiveComm.create(fixture.group.comm(r),
                CollectiveOptions.defaults())).toArray(CollectiveComm[]::new);
        buffers = new DeviceBuffer[] {fixture.group.backend.allocate(4L * COUNT),
                fixture.group.backend.allocate(4L * COUNT)};
        for (int i = 0; i < ALLREDUCES; i++) {
            fixture.group.onEveryRank(r -> collectives[r].execute(CollectiveCall.allReduce(buffers[r], buffers[r],
                    COUNT, DataType.FLOAT32, ReduceOp.SUM)).thenReturn(r));
        }
    }

    @Override
    public void close() {
        for (CollectiveComm c : collectives) {
            c.close();
        }
        for (DeviceBuffer b : buffers) {
            b.close();
        }
        fixture.close();
    }
}
