package org.jmscclpp.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The host engine's collective communicator as a Reactor user drives its lifetime: closed from a
 * call's own callbacks, as the README's example does, it leaves no thread behind.
 */
class HostCollectiveLifecycleTest {

    static final Duration LIMIT = Duration.ofSeconds(30);
    private static final Pattern WORKER = Pattern.compile("\"name\"\\s*:\\s*\"jmscclpp-collective-r\\d+\"");

    @TempDir
    Path dumps;

    private int dumpsTaken;

    /**
     * {@code coll.allReduce(...).doFinally(s -> coll.close())} (the README's pattern) closes the collective
     * communicator on its own worker, from the call's completion: the worker must still end.
     */
    @Test
    void closeFromACallsDoFinallyLeavesNoWorkerThread() throws IOException {
        int before = workers();
        int cycles = 3;
        for (int i = 0; i < cycles; i++) {
            try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, CollectiveOptions.defaults())) {
                List<DeviceBuffer> bufs = List.of(job.backends.get(0).allocate(64), job.backends.get(1).allocate(64));
                for (int r = 0; r < 2; r++) {
                    bufs.get(r).hostSegment().set(ValueLayout.JAVA_INT, 0, r + 1);
                }
                job.all(r -> {
                    CollectiveComm c = job.comms.get(r);
                    return c.allReduce(bufs.get(r), bufs.get(r), 1, DataType.INT32, ReduceOp.SUM)
                            .doFinally(s -> c.close());
                });
                assertEquals(3, bufs.get(0).hostSegment().get(ValueLayout.JAVA_INT, 0));
            }
        }
        int after = awaitWorkersAtMost(before, Duration.ofSeconds(10));
        assertTrue(after <= before, after + " collective worker threads alive after " + cycles
                + " communicators of 2 ranks were closed from a call's doFinally, " + before + " before");
    }

    /** Waits (at most {@code within}) until no more than {@code limit} collective workers are alive; returns how many are. */
    private int awaitWorkersAtMost(int limit, Duration within) throws IOException {
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            int alive = workers();
            if (alive <= limit || System.nanoTime() > deadline) {
                return alive;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    /** Live virtual collective workers ({@code jmscclpp-collective-rN}), from a JSON thread dump. */
    private int workers() throws IOException {
        Path dump = dumps.resolve("threads-" + dumpsTaken++ + ".json");
        ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                .dumpThreads(dump.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.JSON);
        Matcher m = WORKER.matcher(Files.readString(dump));
        int alive = 0;
        while (m.find()) {
            alive++;
        }
        return alive;
    }
}
