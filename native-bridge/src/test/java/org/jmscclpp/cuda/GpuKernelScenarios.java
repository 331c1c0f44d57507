package org.jmscclpp.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.channel.MemoryChannel;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.cuda.kernel.DeviceKernels;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;

/**
 * The two-rank GPU scenarios that run kernels (MSCCL++'s PortChannelOneToOneTest,
 * MemoryChannelOneToOneTest, CommunicatorTest.WriteWithDeviceSemaphores and the semaphore
 * ping-pong), each rank in its own process with its own GPU. Kernels come from {@link DeviceKernels},
 * compiled with NVRTC for this GPU. Every scenario checks every element the
 * kernels compare and fails on the first error count above zero.
 */
final class GpuKernelScenarios {

    static final int[] PORT_SIZES = {1, 1 << 10, 1 << 20, 4 << 20};
    static final int[] MEMORY_SIZES = {1, 1 << 10, 1 << 20};
    static final int[] PACKET_SIZES = {2, 1 << 10, 1 << 16};
    static final int ITERS = 1000;
    static final int THREADS = 1024;
    static final Duration KERNEL_TIMEOUT = Duration.ofSeconds(120);

    private GpuKernelScenarios() {
    }

    static void run(GpuRankMain r, String scenario, Map<String, String> args) {
        if (r.n != 2) {
            throw new IllegalArgumentException(scenario + " runs on 2 ranks, not " + r.n);
        }
        switch (scenario) {
            case "device-semaphores" -> deviceSemaphores(r);
            case "port-ping-pong" -> portPingPong(r, Integer.parseInt(args.getOrDefault("iters", Integer.toString(ITERS))));
            case "memory-ping-pong" -> memoryPingPong(r);
            case "packet-ping-pong" -> packetPingPong(r);
            case "d2d-semaphore" -> d2dSemaphore(r);
            default -> throw new IllegalArgumentException("unknown scenario " + scenario);
        }
    }

    /**
     * CommunicatorTest.WriteWithDeviceSemaphores: each rank writes its half of a 1 MiB buffer into
     * the peer's, then signals a host-to-device semaphore; the peer's kernel waits on it, and the
     * whole buffer is checked afterwards.
     */
    static void deviceSemaphores(GpuRankMain r) {
        int peer = 1 - r.rank;
        Connection connection = r.connectAll().get(peer);
        int ints = GpuRankMain.BUFFER_BYTES / Integer.BYTES;
        try (DeviceBuffer buf = r.backend.allocate(GpuRankMain.BUFFER_BYTES); DeviceBuffer ok = r.backend.allocate(4);
             Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(GpuRankMain.BUFFER_BYTES, 16);
            for (int i = 0; i < ints; i++) {
                host.setAtIndex(ValueLayout.JAVA_INT, i, i / (ints / 2) == r.rank ? i + 7 : -1);
            }
            r.backend.copyFromHost(buf, 0, host);
            RegisteredMemory local = r.comm.registerMemory(buf, TransportFlags.of(r.transport));
            RegisteredMemory remote = r.exchange(local, 1).get(peer);
            Host2DeviceSemaphore semaphore = Host2DeviceSemaphore.build(r.comm, connection).block(GpuRankMain.TIMEOUT);
            long half = GpuRankMain.BUFFER_BYTES / 2;
            connection.write(remote, r.rank * half, local, r.rank * half, half);
            semaphore.signal();
            Kernel wait = DeviceKernels.load(r.backend, "semaphores").function("h2dWait");
            wait.run(LaunchConfig.of(1, 1), KernelArgs.builder()
                    .handle(Host2DeviceSemaphore.DEVICE_HANDLE_BYTES, semaphore.deviceHandle()::encode)
                    .i32(1).pointer(ok.address()).build(), KERNEL_TIMEOUT).block(KERNEL_TIMEOUT.plusSeconds(5));
            r.backend.copyToHost(host.asSlice(0, 4), ok, 0);
            if (host.get(ValueLayout.JAVA_INT, 0) != 1) {
                throw new AssertionError("h2dWait did not see the signal: ok = " + host.get(ValueLayout.JAVA_INT, 0));
            }
            r.backend.copyToHost(host, buf, 0);
            long wrong = 0;
            for (int i = 0; i < ints; i++) {
                wrong += host.getAtIndex(ValueLayout.JAVA_INT, i) != i + 7 ? 1 : 0;
            }
            if (wrong != 0) {
                throw new AssertionError(wrong + " wrong elements after the semaphore");
            }
            GpuRankMain.say("OK device-semaphores: kernel waited on the host signal; 1 MiB checked");
            r.bootstrap.barrier(GpuRankMain.TIMEOUT).block(GpuRankMain.TIMEOUT);
            local.close();
        }
    }

    /**
     * PortChannelOneToOneTest.PingPong over the job's transport (CUDA_IPC, or ETHERNET with device
     * memory staged through pinned host memory) through each rank's proxy, nElem 1, 1K, 1M, 4M,
     * {@code iters} iterations (1000 unless the job says).
     */
    static void portPingPong(GpuRankMain r, int iters) {
        int peer = 1 - r.rank;
        Connection connection = r.connectAll().get(peer);
        int maxInts = PORT_SIZES[PORT_SIZES.length - 1];
        ProxyService proxy = ProxyService.builder(r.backend).build();
        try (DeviceBuffer buf = r.backend.allocate((long) maxInts * Integer.BYTES);
             DeviceBuffer errors = r.backend.allocate(4)) {
            RegisteredMemory local = r.comm.registerMemory(buf, TransportFlags.of(r.transport));
            RegisteredMemory remote = r.exchange(local, 1).get(peer);
            SemaphoreId sid = proxy.buildAndAddSemaphore(r.comm, connection).block(GpuRankMain.TIMEOUT);
            MemoryId dst = proxy.addMemory(remote);
            MemoryId src = proxy.addMemory(local);
            PortChannel channel = proxy.portChannel(sid, dst, src);
            proxy.start();
            Kernel pingPong = DeviceKernels.load(r.backend, "port_channel").function("portPingPong");
            for (int nElem : PORT_SIZES) {
                r.bootstrap.barrier(GpuRankMain.TIMEOUT).block(GpuRankMain.TIMEOUT);
                long start = System.nanoTime();
                pingPong.run(LaunchConfig.of(1, THREADS), KernelArgs.builder()
                        .handle(PortChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle)
                        .pointer(buf.address()).i32(nElem).i32(r.rank).i32(iters).i32(1).pointer(errors.address())
                        .build(), KERNEL_TIMEOUT).block(KERNEL_TIMEOUT.plusSeconds(5));
                long ms = (System.nanoTime() - start) / 1_000_000;
                checkErrors(r, errors, "port ping-pong nElem " + nElem);
                GpuRankMain.say("OK port-ping-pong nElem=" + nElem + " iters=" + iters + " over " + r.transport
                        + " putWithSignal+wait+flush, data checked, " + ms + " ms");
            }
            r.bootstrap.barrier(GpuRankMain.TIMEOUT).block(GpuRankMain.TIMEOUT);
            proxy.stop().block(GpuRankMain.TIMEOUT);
            local.close();
        } finally {
            proxy.close();
        }
    }

    /** MemoryChannelOneToOneTest.PutPingPong and GetPingPong, in-place channels. */
    static void memoryPingPong(GpuRankMain r) {
        int peer = 1 - r.rank;
        Connection connection = r.connectAll().get(peer);
        int maxInts = MEMORY_SIZES[MEMORY_SIZES.length - 1];
        try (DeviceBuffer buf = r.backend.allocate((long) maxInts * Integer.BYTES);
             DeviceBuffer errors = r.backend.allocate(4)) {
            RegisteredMemory local = r.comm.registerMemory(buf, TransportFlags.of(Transport.CUDA_IPC));
            MemoryChannel channel = MemoryChannel.build(r.comm, connection, local).block(GpuRankMain.TIMEOUT);
            for (String name : List.of("memPutPingPong", "memGetPingPong")) {
                Kernel kernel = DeviceKernels.load(r.backend, "memory_channel").function(name);
                for (int nElem : MEMORY_SIZES) {
                    r.bootstrap.barrier(GpuRankMain.TIMEOUT).block(GpuRankMain.TIMEOUT);
                    kernel.run(LaunchConfig.of(1, THREADS), KernelArgs.builder()
                            .handle(MemoryChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle)
                            .pointer(buf.address()).i32(nElem).i32(r.rank).i32(ITERS).pointer(errors.address())
                            .build(), KERNEL_TIMEOUT).block(KERNEL_TIMEOUT.plusSeconds(5));
                    checkErrors(r, errors, name + " nElem " + nElem);
                    GpuRankMain.say("OK " + name + " nElem=" + nElem + " iters=" + ITERS + ", data checked");
                }
            }
            r.bootstrap.barrier(GpuRankMain.TIMEOUT).block(GpuRankMain.TIMEOUT);
            local.close();
        }
    }

    /** LL16 and LL8 packet ping-pong over memory channels: each rank exposes its packet buffer. */
    static void packetPingPong(GpuRankMain r) {
        int peer = 1 - r.rank;
        Connection connection = r.connectAll().get(peer);
        int maxInts = PACKET_SIZES[PACKET_SIZES.length - 1];
        try (DeviceBuffer buf = r.backend.allocate((long) maxInts * Integer.BYTES);
             DeviceBuffer packets = r.backend.allocate(2L * maxInts * Integer.BYTES);
             DeviceBuffer errors = r.backend.allocate(4); DeviceBuffer elapsed = r.backend.allocate(8);
             Arena arena = Arena.ofConfined()) {
            RegisteredMemory src = r.comm.registerMemory(buf, TransportFlags.of(Transport.CUDA_IPC));
            RegisteredMemory exposed = r.comm.registerMemory(packets, TransportFlags.of(Transport.CUDA_IPC));
            MemoryChannel channel = MemoryChannel.build(r.comm, connection, exposed, src, exposed)
                    .block(GpuRankMain.TIMEOUT);
            MemorySegment ns = arena.allocate(8, 8);
            for (String name : List.of("llPingPong16", "llPingPong8")) {
                Kernel kernel = DeviceKernels.load(r.backend, "memory_channel").function(name);
                for (int nElem : PACKET_SIZES) {
                    r.bootstrap.barrier(GpuRankMain.TIMEOUT).block(GpuRankMain.TIMEOUT);
                    kernel.run(LaunchConfig.of(1, THREADS), KernelArgs.builder()
                            .handle(MemoryChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle)
                            .pointer(buf.address()).i32(nElem).i32(r.rank).i32(ITERS).pointer(errors.address())
                            .pointer(elapsed.address()).build(), KERNEL_TIMEOUT).block(KERNEL_TIMEOUT.plusSeconds(5));
                    checkErrors(r, errors, name + " nElem " + nElem);
                    r.backend.copyToHost(ns, elapsed, 0);
                    GpuRankMain.say(String.format("OK %s nElem=%d iters=%d, data checked, %.2f us one-way", name, nElem,
                            ITERS, ns.get(ValueLayout.JAVA_LONG, 0) / 1000.0 / ITERS));
                }
            }
            r.bootstrap.barrier(GpuRankMain.TIMEOUT).block(GpuRankMain.TIMEOUT);
            src.close();
            exposed.close();
        }
    }

    /** Device-to-device semaphore signal/wait ping-pong between the two GPUs. */
    static void d2dSemaphore(GpuRankMain r) {
        int peer = 1 - r.rank;
        Connection connection = r.connectAll().get(peer);
        MemoryDevice2DeviceSemaphore semaphore = MemoryDevice2DeviceSemaphore.build(r.comm, connection)
                .block(GpuRankMain.TIMEOUT);
        try (DeviceBuffer elapsed = r.backend.allocate(8); Arena arena = Arena.ofConfined()) {
            Kernel kernel = DeviceKernels.load(r.backend, "semaphores").function("d2dPingPong");
            r.bootstrap.barrier(GpuRankMain.TIMEOUT).block(GpuRankMain.TIMEOUT);
            int iters = 10_000;
            kernel.run(LaunchConfig.of(1, 1), KernelArgs.builder()
                    .handle(MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES, semaphore.deviceHandle()::encode)
                    .i32(r.rank).i32(iters).pointer(elapsed.address()).build(), KERNEL_TIMEOUT)
                    .block(KERNEL_TIMEOUT.plusSeconds(5));
            MemorySegment ns = arena.allocate(8, 8);
            r.backend.copyToHost(ns, elapsed, 0);
            GpuRankMain.say(String.format("OK d2d-semaphore iters=%d, %.2f us one-way", iters,
                    ns.get(ValueLayout.JAVA_LONG, 0) / 1000.0 / (2.0 * iters)));
        }
    }

    private static void checkErrors(GpuRankMain r, DeviceBuffer errors, String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(4, 4);
            r.backend.copyToHost(host, errors, 0);
            int count = host.get(ValueLayout.JAVA_INT, 0);
            if (count != 0) {
                throw new AssertionError(what + ": " + count + " wrong elements on rank " + r.rank);
            }
        }
    }
}
