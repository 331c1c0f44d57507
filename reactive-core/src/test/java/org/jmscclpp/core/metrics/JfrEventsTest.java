package org.jmscclpp.core.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;
import org.jmscclpp.core.Transport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The JFR events of a two-rank host job ({@link MetricsJob}), read back in this JVM through a
 * {@link RecordingStream}: a Flush per flush with the bytes written since the previous one, a
 * Collective per allreduce, and the periodic ConnectionStatistics and ProxyStatistics.
 */
class JfrEventsTest {

    private static final long WAIT_SECONDS = 30;

    @TempDir
    Path dir;

    private final List<Expectation> expectations = new CopyOnWriteArrayList<>();

    /** The first event named {@code name} that passes {@code test}. */
    private record Expectation(String name, Predicate<RecordedEvent> test, CompletableFuture<RecordedEvent> seen) {
    }

    private CompletableFuture<RecordedEvent> expect(String name, Predicate<RecordedEvent> test) {
        Expectation e = new Expectation(name, test, new CompletableFuture<>());
        expectations.add(e);
        return e.seen;
    }

    /** Every event the job causes arrives with its fields: rank, peer, transport, bytes, op, type, counts. */
    @Test
    void aTwoRankJobsFlushesCollectivesAndStatisticsAreRecorded() throws Exception {
        // the metrics first, the recorder after (unless another test started it): the events are registered when
        // the recorder initialises, as in a process that starts recording with jcmd long after its first connection
        assertTrue(JmscclppMetrics.enabled());
        try (RecordingStream rs = new RecordingStream(); MetricsJob job = new MetricsJob(dir)) {
            rs.enable(JmscclppMetrics.FLUSH_EVENT).withThreshold(Duration.ZERO);
            rs.enable(JmscclppMetrics.COLLECTIVE_EVENT).withThreshold(Duration.ZERO);
            rs.enable(JmscclppMetrics.CONNECTION_STATISTICS_EVENT).withPeriod(Duration.ofMillis(100));
            rs.enable(JmscclppMetrics.PROXY_STATISTICS_EVENT).withPeriod(Duration.ofMillis(100));
            rs.onEvent(event -> {
                for (Expectation e : expectations) {
                    if (e.name.equals(event.getEventType().getName()) && !e.seen.isDone() && e.test.test(event)) {
                        e.seen.complete(event);
                    }
                }
            });
            String proxy = job.proxy0().name();
            int total = MetricsJob.WRITES * MetricsJob.WRITE_BYTES + MetricsJob.PUTS * MetricsJob.PUT_BYTES;
            CompletableFuture<RecordedEvent> plainFlush = expect(JmscclppMetrics.FLUSH_EVENT,
                    e -> e.getInt("rank") == 0 && e.getInt("peer") == 1
                            && e.getLong("bytes") == MetricsJob.WRITES * MetricsJob.WRITE_BYTES);
            CompletableFuture<RecordedEvent> proxyFlush = expect(JmscclppMetrics.FLUSH_EVENT,
                    e -> e.getInt("rank") == 0 && e.getInt("peer") == 1
                            && e.getLong("bytes") == MetricsJob.PUTS * MetricsJob.PUT_BYTES);
            CompletableFuture<RecordedEvent> allReduce = expect(JmscclppMetrics.COLLECTIVE_EVENT,
                    e -> e.getInt("rank") == 1 && "all_reduce".equals(e.getString("op")));
            CompletableFuture<RecordedEvent> connection = expect(JmscclppMetrics.CONNECTION_STATISTICS_EVENT,
                    e -> e.getInt("rank") == 0 && e.getInt("peer") == 1 && e.getLong("bytesWritten") >= total);
            CompletableFuture<RecordedEvent> proxyStats = expect(JmscclppMetrics.PROXY_STATISTICS_EVENT,
                    e -> proxy.equals(e.getString("proxy")) && e.getLong("triggers") == MetricsJob.PUTS + 1);
            rs.startAsync();

            job.writeAndFlush();
            job.triggers();
            job.allReduces();

            RecordedEvent f = plainFlush.get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertEquals(Transport.HOST_IPC.name(), f.getString("transport"));
            assertEquals(0, f.getInt("tag"));
            assertTrue(f.getBoolean("succeeded"));
            assertFalse(f.getDuration().isNegative());
            RecordedEvent pf = proxyFlush.get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertEquals(Transport.HOST_IPC.name(), pf.getString("transport"));
            assertTrue(pf.getBoolean("succeeded"));

            RecordedEvent c = allReduce.get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertEquals(2, c.getInt("ranks"));
            assertEquals("float", c.getString("type"));
            assertEquals(MetricsJob.COUNT, c.getLong("count"));
            assertEquals(4L * MetricsJob.COUNT, c.getLong("bytes"));
            assertFalse(c.getString("algorithm").isEmpty());
            assertFalse(c.getBoolean("group"));
            assertTrue(c.getBoolean("succeeded"));
            assertTrue(c.getDuration().toNanos() > 0, "duration " + c.getDuration());

            RecordedEvent s = connection.get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertEquals(Transport.HOST_IPC.name(), s.getString("transport"));
            assertTrue(s.getLong("writes") >= MetricsJob.WRITES + MetricsJob.PUTS);
            assertTrue(s.getLong("signals") >= MetricsJob.PUTS);
            assertTrue(s.getLong("flushes") >= 2);

            RecordedEvent p = proxyStats.get(WAIT_SECONDS, TimeUnit.SECONDS);
            assertEquals(MetricsJob.PUTS, p.getLong("dataTriggers"));
            assertEquals(MetricsJob.PUTS, p.getLong("flagTriggers"));
            assertEquals(1, p.getLong("syncTriggers"));
            assertEquals(0, p.getLong("fifoOccupancy"));
            assertEquals(job.proxy0().fifoCapacity(), p.getInt("fifoCapacity"));
        }
    }
}
