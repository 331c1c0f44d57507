package org.jmscclpp.cuda;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Two processes, one GPU each, over CUDA IPC: ports of MSCCL++'s CommunicatorTest (BasicWrite on
 * cuMemAlloc and on VMM buffers, WriteWithDeviceSemaphores), PortChannelOneToOneTest.PingPong,
 * MemoryChannelOneToOneTest (put, get, LL16 and LL8 packets) and the device-to-device semaphore
 * ping-pong. Each test prints every rank's output: the record of the run. Aborted with the
 * reason where there are fewer than two GPUs.
 */
@Tag("gpu")
class CudaIpcGpuTest extends TwoGpuJobTest {

    @Test
    void basicWriteOnMemAllocBuffers() {
        job("basic-write", "alloc=malloc");
    }

    @Test
    void basicWriteOnVmmBuffers() {
        job("basic-write", "alloc=vmm");
    }

    /** BasicWrite flushed as a proxy flushes: a polled flush per connection, looked at until done. */
    @Test
    void basicWriteWithPolledFlushes() {
        job("basic-write", "flush=polled");
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
        runJob(scenario, scenario, args);
    }
}
