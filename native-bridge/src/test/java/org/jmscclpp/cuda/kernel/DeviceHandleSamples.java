package org.jmscclpp.cuda.kernel;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.channel.MemoryChannel;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.proxy.Fifo;
import org.jmscclpp.core.proxy.FifoLayout;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.proxy.ProxyTrigger;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Semaphore;
import org.jmscclpp.core.spi.DeviceHandles;
import org.jmscclpp.testkit.MemoryChannelPair;
import org.jmscclpp.testkit.ProxyFixture;

/**
 * Device handles as the Java encoders write them, for native-bridge's tests of the CUDA headers'
 * layouts: the encoders ({@link DeviceHandles}) with any field values, and handles of real
 * channels built over a host backend in this JVM (the fixtures of reactive-core's tests). Lives in
 * {@code org.jmscclpp.core.spi} for the package-private encoders; public for the tests in
 * {@code org.jmscclpp.cuda.kernel} ({@code DeviceHandleLayoutTest}).
 */
public final class DeviceHandleSamples {

    /** Bytes of a fifo's device handle (FifoLayout.DEVICE_HANDLE_BYTES, package-private). */
    public static final int FIFO_BYTES = FifoLayout.DEVICE_HANDLE_BYTES;
    /** Offsets in a fifo's buffer (Fifo's class comment): head, proxy state, tail cache, tail, ring. */
    public static final long FIFO_HEAD = FifoLayout.HEAD;
    public static final long FIFO_STATE = FifoLayout.STATE;
    public static final long FIFO_TAIL_CACHE = FifoLayout.TAIL_CACHE;
    public static final long FIFO_TAIL = FifoLayout.TAIL;
    public static final long FIFO_RING = FifoLayout.RING;
    /** Bit 63 of a trigger's snd, the fifo's commit bit. */
    public static final long COMMIT_BIT = ProxyTrigger.COMMIT_BIT;

    private DeviceHandleSamples() {
    }

    public static byte[] fifo(long ring, long head, long tail, long tailCache, int capacity) {
        return encode(FIFO_BYTES, out -> DeviceHandles.fifo(out, ring, head, tail, tailCache, capacity));
    }

    public static byte[] host2DeviceSemaphore(long inboundToken, long expectedInbound) {
        return encode(Host2DeviceSemaphore.DEVICE_HANDLE_BYTES,
                out -> DeviceHandles.host2DeviceSemaphore(out, inboundToken, expectedInbound));
    }

    public static byte[] memoryDevice2DeviceSemaphore(long inboundToken, long remoteInboundToken, long expectedInbound) {
        return encode(MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES,
                out -> DeviceHandles.memoryDevice2DeviceSemaphore(out, inboundToken, remoteInboundToken, expectedInbound));
    }

    public static byte[] portChannel(int semaphoreId, long inboundToken, long expectedInbound, long ring, long head,
                                     long tail, long tailCache, int capacity, long flushed, int dst, int src) {
        return encode(PortChannel.DEVICE_HANDLE_BYTES, out -> DeviceHandles.portChannel(out, semaphoreId, inboundToken,
                expectedInbound, ring, head, tail, tailCache, capacity, flushed, dst, src));
    }

    /** A memory channel's handle; the semaphore's words are given by address, as a GPU backend's would be. */
    public static byte[] memoryChannel(long inboundToken, long remoteInboundToken, long expectedInbound, long dst,
                                       long src, long packetBuffer) {
        ConnectionContext context = new ConnectionContext(0, 1, 0);
        MemoryDevice2DeviceSemaphore.DeviceHandle semaphore = new MemoryDevice2DeviceSemaphore.DeviceHandle(
                new AddressOnly(inboundToken), new AddressOnly(remoteInboundToken), new AddressOnly(expectedInbound),
                context);
        return encode(MemoryChannel.DEVICE_HANDLE_BYTES,
                out -> DeviceHandles.memoryChannel(out, semaphore, dst, src, packetBuffer));
    }

    /** What a real port channel and its parts report, next to the handle it encodes. */
    public record PortChannelSample(byte[] handle, int semaphoreId, int dst, int src, long inboundToken,
                                    long expectedInbound, long fifoBase, long head, long tailCache, int capacity,
                                    long flushed) {
    }

    /**
     * The handle of a port channel of a one-rank {@link ProxyFixture} in {@code dir} (a HOST_IPC
     * connection to itself, fifo of {@code capacity}), with what the Java objects say it holds.
     */
    public static PortChannelSample portChannel(Path dir, int capacity) {
        try (ProxyFixture fixture = new ProxyFixture(dir, 1, 4096, b -> b.fifoCapacity(capacity))) {
            PortChannel channel = fixture.channels.get(0);
            ProxyService service = fixture.proxies.get(0);
            Host2DeviceSemaphore.DeviceHandle semaphore = service.semaphore(channel.semaphoreId()).deviceHandle();
            byte[] handle = encode(PortChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle);
            Fifo fifo = service.fifo();
            return new PortChannelSample(handle, channel.semaphoreId().value(), channel.dst().value(),
                    channel.src().value(), semaphore.inboundAddress(), semaphore.expectedAddress(),
                    fifo.buffer().address(), fifo.headAddress(), fifo.tailCacheAddress(), fifo.capacity(),
                    service.flushedWords().address() + 8L * channel.semaphoreId().value());
        }
    }

    /** What a real memory channel reports, next to the handle it encodes. */
    public record MemoryChannelSample(byte[] handle, long dst, long src, long packetBuffer) {
    }

    /**
     * The handle of rank 0's channel of a two-rank {@link MemoryChannelPair} in {@code dir} with
     * packet buffers, with the addresses the Java objects report.
     */
    public static MemoryChannelSample memoryChannel(Path dir) {
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, 4096, 8192)) {
            MemoryChannel channel = pair.channels.get(0);
            RegisteredMemory packets = channel.packetBuffer();
            if (packets == null) {
                throw new IllegalStateException("the pair was built with packet buffers");
            }
            byte[] handle = encode(MemoryChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle);
            return new MemoryChannelSample(handle, channel.dst().address(), channel.src().address(), packets.address());
        }
    }

    private static byte[] encode(int bytes, Consumer<ByteBuffer> encoder) {
        // big-endian on purpose: the encoders must write little-endian whatever the buffer's order
        ByteBuffer out = ByteBuffer.allocate(bytes).order(ByteOrder.BIG_ENDIAN);
        encoder.accept(out);
        if (out.hasRemaining()) {
            throw new IllegalStateException("the encoder wrote " + out.position() + " of " + bytes + " bytes");
        }
        return out.array();
    }

    /** A buffer that is only an address: what the encoders read of device memory. */
    private record AddressOnly(long address) implements DeviceBuffer {
        @Override
        public long size() {
            return Semaphore.TOKEN_BYTES;
        }

        @Override
        public Device device() {
            return Device.gpu(0);
        }

        @Override
        public boolean hostAccessible() {
            return false;
        }

        @Override
        public MemorySegment hostSegment() {
            throw new UnsupportedOperationException("device memory");
        }

        @Override
        public boolean isClosed() {
            return false;
        }

        @Override
        public void close() {
        }
    }
}
