package org.jmscclpp.nativebridge;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two processes, one GPU each, over CUDA IPC: ports of MSCCL++'s CommunicatorTest (BasicWrite on
 * cuMemAlloc and on VMM buffers, WriteWithDeviceSemaphores), PortChannelOneToOneTest.PingPong,
 * MemoryChannelOneToOneTest (put, get, LL16 and LL8 packets) and the device-to-device semaphore
 * ping-pong. Each test prints every rank's output: the record of the run. Aborted with the
 * reason where there are fewer than two GPUs.
 */
@Tag("gpu")
class CudaIpcGpuTest {

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(4);

    @TempDir
    Path logs;

    @BeforeAll
    static void needsTwoGpus() {
        new CudaBackendProvider().unavailableReason().ifPresent(reason -> Assumptions.abort("no GPU here: " + reason));
        int gpus = CudaContext.deviceCount();
        Assumptions.assumeTrue(gpus >= 2, "these tests need 2 GPUs, this host has " + gpus);
    }

    @Test
    void basicWriteOnMemAllocBuffers() {
        job("basic-write", "alloc=malloc");
    }

    @Test
    void basicWriteOnVmmBuffers() {
        job("basic-write", "alloc=vmm");
    }

    @Test
    void writeWithDeviceSemaphores() {
        job("device-semaphores");
    }

    @Test
    void portChannelPingPong() {
        job("port-ping-pong");
    }

    @Test
    void memoryChannelPutAndGetPingPong() {
        job("memory-ping-pong");
    }

    @Test
    void ll16AndLl8PacketPingPong() {
        job("packet-ping-pong");
    }

    @Test
    void deviceToDeviceSemaphorePingPong() {
        job("d2d-semaphore");
    }

    private void job(String scenario, String... args) {
        List<String> outputs = GpuJob.run(2, JOB_TIMEOUT, logs, scenario, args);
        for (int rank = 0; rank < outputs.size(); rank++) {
            System.out.print("[" + scenario + " rank " + rank + "]\n" + outputs.get(rank));
        }
    }
}
