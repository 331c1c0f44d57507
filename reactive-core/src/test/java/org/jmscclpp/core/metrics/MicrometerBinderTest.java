package org.jmscclpp.core.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.metrics.micrometer.JmscclppMeterBinder;
import org.jmscclpp.core.proxy.FifoProducer;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.proxy.ProxyTrigger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A two-rank host job read back from a Micrometer {@link SimpleMeterRegistry}: the connection's
 * bytes, operations and flush timer, the proxy's triggers and fifo gauges, the collective calls.
 * Connection and collective meters are cumulative for the process (other tests of this JVM add to
 * them), so the test compares readings before and after each step.
 */
class MicrometerBinderTest {

    @TempDir
    Path dir;

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    /** Every count of the job's three steps reads back exactly from the registry; close removes the meters. */
    @Test
    void aTwoRankJobsWritesTriggersAndCollectivesReadBackExactly() {
        try (JmscclppMeterBinder binder = new JmscclppMeterBinder();
             MetricsJob job = new MetricsJob(dir)) {
            binder.bindTo(registry);
            String[] conn = {"rank", "0", "peer", "1", "transport", Transport.HOST_IPC.name()};
            double bytes0 = counter("jmscclpp.connection.bytes", conn);
            double writes0 = counter("jmscclpp.connection.operations", conn, "op", "write");
            double signals0 = counter("jmscclpp.connection.operations", conn, "op", "signal");
            FunctionTimer flushBefore = registry.find("jmscclpp.connection.flush").tags(conn).functionTimer();
            double flushes0 = flushBefore == null ? 0 : flushBefore.count();
            double flushErrors0 = counter("jmscclpp.connection.flush.errors", conn);

            job.writeAndFlush();
            assertEquals(bytes0 + MetricsJob.WRITES * MetricsJob.WRITE_BYTES,
                    counter("jmscclpp.connection.bytes", conn));
            assertEquals(writes0 + MetricsJob.WRITES, counter("jmscclpp.connection.operations", conn, "op", "write"));
            assertEquals(signals0, counter("jmscclpp.connection.operations", conn, "op", "signal"));
            assertEquals(flushes0 + 1, timer("jmscclpp.connection.flush", conn).count());
            assertEquals(flushErrors0, counter("jmscclpp.connection.flush.errors", conn));

            String proxy = job.proxy0().name();
            job.triggers();
            assertEquals(bytes0 + MetricsJob.WRITES * MetricsJob.WRITE_BYTES + MetricsJob.PUTS * MetricsJob.PUT_BYTES,
                    counter("jmscclpp.connection.bytes", conn));
            assertEquals(writes0 + MetricsJob.WRITES + MetricsJob.PUTS,
                    counter("jmscclpp.connection.operations", conn, "op", "write"));
            assertEquals(signals0 + MetricsJob.PUTS, counter("jmscclpp.connection.operations", conn, "op", "signal"));
            FunctionTimer flush = timer("jmscclpp.connection.flush", conn);
            assertEquals(flushes0 + 2, flush.count());
            assertTrue(flush.totalTime(TimeUnit.NANOSECONDS) > 0, "flush time");
            assertEquals(MetricsJob.PUTS, counter("jmscclpp.proxy.triggers", "proxy", proxy, "type", "data"));
            assertEquals(MetricsJob.PUTS, counter("jmscclpp.proxy.triggers", "proxy", proxy, "type", "flag"));
            assertEquals(1, counter("jmscclpp.proxy.triggers", "proxy", proxy, "type", "sync"));
            assertEquals(MetricsJob.PUTS + 1, counter("jmscclpp.proxy.triggers", "proxy", proxy, "type", "all"));
            FunctionTimer handle = timer("jmscclpp.proxy.handle", "proxy", proxy);
            assertEquals(MetricsJob.PUTS + 1, handle.count(), "one handling per trigger");
            assertTrue(handle.totalTime(TimeUnit.NANOSECONDS) > 0, "the loop's handling time");
            assertEquals(0, gauge("jmscclpp.proxy.fifo.occupancy", "proxy", proxy));
            assertEquals(job.proxy0().fifoCapacity(), gauge("jmscclpp.proxy.fifo.capacity", "proxy", proxy));

            String[] coll = {"rank", "0", "op", "all_reduce", "type", "float", "size", "4KiB"};
            double calls0 = counter("jmscclpp.collective.calls", coll);
            double collBytes0 = counter("jmscclpp.collective.bytes", coll);
            FunctionTimer before = registry.find("jmscclpp.collective").tags(coll).functionTimer();
            double done0 = before == null ? 0 : before.count();
            double errors0 = counter("jmscclpp.collective.errors", coll);
            job.allReduces();
            assertEquals(calls0 + MetricsJob.ALLREDUCES, counter("jmscclpp.collective.calls", coll));
            assertEquals(collBytes0 + MetricsJob.ALLREDUCES * 4L * MetricsJob.COUNT,
                    counter("jmscclpp.collective.bytes", coll));
            FunctionTimer calls = timer("jmscclpp.collective", coll);
            assertEquals(done0 + MetricsJob.ALLREDUCES, calls.count());
            assertTrue(calls.totalTime(TimeUnit.NANOSECONDS) > 0);
            assertEquals(errors0, counter("jmscclpp.collective.errors", coll));
            String[] coll1 = {"rank", "1", "op", "all_reduce", "type", "float", "size", "4KiB"};
            assertTrue(counter("jmscclpp.collective.calls", coll1) >= MetricsJob.ALLREDUCES);

            job.close();
            assertNull(registry.find("jmscclpp.proxy.triggers").tag("proxy", proxy).meter(),
                    "a closed proxy's meters are removed");
        }
        assertTrue(registry.getMeters().isEmpty(), "the binder's close removes its meters: " + registry.getMeters());
    }

    /** A built proxy whose loop has not started shows the triggers waiting in its fifo. */
    @Test
    void theFifoOccupancyGaugeCountsTriggersNotYetHandled() {
        try (JmscclppMeterBinder binder = new JmscclppMeterBinder();
             MetricsJob job = new MetricsJob(dir)) {
            binder.bindTo(registry);
            ProxyService p = job.proxy0();
            FifoProducer producer = p.producer();
            for (int i = 0; i < 3; i++) {
                producer.push(ProxyTrigger.of(ProxyTrigger.FLAG, 0, 0, 0, 0, 0, job.fixture.semaphores.get(0).value()));
            }
            assertEquals(3, gauge("jmscclpp.proxy.fifo.occupancy", "proxy", p.name()));
            assertEquals(3, JmscclppMetrics.proxies().stream().filter(m -> m.name().equals(p.name())).findFirst()
                    .orElseThrow().fifoOccupancy());
            p.start();
            producer.sync(producer.push(ProxyTrigger.of(ProxyTrigger.FLAG, 0, 0, 0, 0, 0,
                    job.fixture.semaphores.get(0).value())), MetricsJob.WAIT);
            assertEquals(0, gauge("jmscclpp.proxy.fifo.occupancy", "proxy", p.name()));
            assertEquals(4, counter("jmscclpp.proxy.triggers", "proxy", p.name(), "type", "flag"));
        }
    }

    private double counter(String name, String[] tags, String... more) {
        FunctionCounter c = registry.find(name).tags(tags).tags(more).functionCounter();
        return c == null ? 0 : c.count();
    }

    private double counter(String name, String... tags) {
        return counter(name, tags, new String[0]);
    }

    private FunctionTimer timer(String name, String... tags) {
        FunctionTimer t = registry.find(name).tags(tags).functionTimer();
        assertNotNull(t, name + " " + String.join(",", tags));
        return t;
    }

    private double gauge(String name, String... tags) {
        Gauge g = registry.find(name).tags(tags).gauge();
        assertNotNull(g, name + " " + String.join(",", tags));
        return g.value();
    }
}
