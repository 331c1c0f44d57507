package org.jmscclpp.cuda;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * GPU memory over {@code ETHERNET} (the bootstrap module's TCP transport, found through its
 * {@code TransportProvider}) between two processes, one GPU each: the sender stages device memory
 * through pinned host memory, the receiver copies into device memory off its event loop. BasicWrite,
 * WriteWithDeviceSemaphores (the token lands in device memory while the peer's kernel waits on it)
 * and PortChannel ping-pong driven by kernels through each rank's proxy, every element checked.
 * Each test prints every rank's output. Aborted with the reason where there are fewer than two GPUs.
 */
@Tag("gpu")
class EthernetGpuTest extends TwoGpuJobTest {

    @Test
    void basicWrite() {
        ethernetJob("basic-write");
    }

    @Test
    void writeWithDeviceSemaphores() {
        ethernetJob("device-semaphores");
    }

    /** 50 iterations per size: every one moves up to 16 MiB each way through TCP and staging. */
    @Test
    void portChannelPingPong() {
        ethernetJob("port-ping-pong", "iters=50");
    }

    private void ethernetJob(String scenario, String... args) {
        List<String> all = new ArrayList<>(List.of("transport=ETHERNET"));
        all.addAll(List.of(args));
        runJob("ETHERNET " + scenario, scenario, all.toArray(String[]::new));
    }
}
