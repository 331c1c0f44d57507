package org.jmscclpp.core.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.junit.jupiter.api.Test;

/**
 * A register that one rank makes alone times out there after its message went to the peers: the
 * registration exchanges are out of step from then on, so the communicator must refuse further
 * work rather than pair that stale message with the next registration (which made a later allreduce
 * read the wrong buffer and return 2 instead of 1 + 2, with no error on any rank).
 */
class HostCollectiveRegistrationFaultTest {

    @Test
    void aRegisterThatFailedAfterItsExchangeBeganBreaksTheCommunicator() {
        CollectiveOptions options = CollectiveOptions.defaults().withTimeout(Duration.ofSeconds(2));
        try (HostCollectivesTest.Job job = new HostCollectivesTest.Job(2, options)) {
            List<DeviceBuffer> a = List.of(job.backends.get(0).allocate(64), job.backends.get(1).allocate(64));
            List<DeviceBuffer> b = List.of(job.backends.get(0).allocate(64), job.backends.get(1).allocate(64));
            JmscclppException alone = assertThrows(JmscclppException.class,
                    () -> job.comms.get(0).register(a.get(0)).block(Duration.ofSeconds(20)));
            assertEquals(ErrorCode.TIMEOUT, alone.code(), alone.getMessage());
            assertTrue(job.comms.get(0).failure().isPresent(), "the failed exchange breaks rank 0's communicator");
            for (int r = 0; r < 2; r++) {
                b.get(r).hostSegment().setAtIndex(ValueLayout.JAVA_INT, 0, r + 1);
            }
            try {
                job.all(r -> job.comms.get(r).register(b.get(r))
                        .then(job.comms.get(r).allReduce(b.get(r), b.get(r), 1, DataType.INT32, ReduceOp.SUM)));
            } catch (RuntimeException expected) {
                // rank 0 refuses; rank 1 may fail or time out: what matters is that no wrong result is reported
            }
            for (int r = 0; r < 2; r++) {
                int v = b.get(r).hostSegment().getAtIndex(ValueLayout.JAVA_INT, 0);
                assertTrue(v == r + 1 || v == 3, "rank " + r + " holds " + v + ": a sum of the wrong buffers");
            }
        }
    }
}
