package org.jmscclpp.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.jmscclpp.testkit.CommunicatorGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/** A communicator given the service's scheduler does its steps' local work there, and leaves it running. */
class CommunicatorSchedulerTest {

    @TempDir
    Path dir;

    @Test
    void aSuppliedSchedulerRunsTheStepsAndOutlivesTheCommunicator() {
        Scheduler work = Schedulers.newBoundedElastic(2, 64, "svc-work");
        try (CommunicatorGroup g = new CommunicatorGroup(1, dir); DeviceBuffer buf = g.backend.allocate(64)) {
            String receivedOn;
            try (Communicator comm = Communicator.create(g.comm(0).bootstrap(), g.backend, work)) {
                RegisteredMemory mine = comm.registerMemory(buf, TransportFlags.of(Transport.HOST_IPC));
                receivedOn = comm.sendMemory(mine, 0, 3).then(comm.recvMemory(0, 3))
                        .map(back -> {
                            assertEquals(mine.size(), back.size());
                            return Thread.currentThread().getName();
                        })
                        .block(CommunicatorGroup.WAIT);
            }
            assertTrue(receivedOn.startsWith("svc-work"), "the memory arrived on " + receivedOn);
            assertFalse(work.isDisposed(), "closing the communicator leaves the service's scheduler alone");
        } finally {
            work.dispose();
        }
    }
}
