package org.jmscclpp.core.spi;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.channel.MemoryChannel;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.proxy.Fifo;
import org.jmscclpp.core.proxy.FifoLayout;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;

/**
 * The one encoder of the device handles that kernels receive: the byte layouts that
 * {@link Fifo#encodeDeviceHandle}, {@link Host2DeviceSemaphore.DeviceHandle#encode},
 * {@link MemoryDevice2DeviceSemaphore.DeviceHandle#encode},
 * {@link PortChannel#encodeDeviceHandle} and {@link MemoryChannel#encodeDeviceHandle} document, each the field order of the MSCCL++ struct of
 * the same name, with C's natural alignment made explicit by zero padding. Every handle is
 * little-endian (as the GPUs and every host jmscclpp runs on), written at the buffer's position,
 * which advances by the handle's size; the buffer's byte order is left as the caller set it.
 * Backends and tests encode through here, so a layout exists once.
 */
public final class DeviceHandles {

    /** {@code Host2DeviceSemaphoreDeviceHandle}: inbound token, expected-inbound word. */
    public static final int HOST2DEVICE_SEMAPHORE_BYTES = 16;
    /** {@code MemoryDevice2DeviceSemaphoreDeviceHandle}: inbound, remote inbound, expected-inbound. */
    public static final int MEMORY_DEVICE2DEVICE_SEMAPHORE_BYTES = 24;
    /** {@code FifoDeviceHandle}: ring, head, tail, tail cache, capacity, padding. */
    static final int FIFO_BYTES = FifoLayout.DEVICE_HANDLE_BYTES;
    /** {@code PortChannelDeviceHandle}; the diagram is in {@link PortChannel#encodeDeviceHandle}. */
    public static final int PORT_CHANNEL_BYTES = 80;
    /** {@code MemoryChannelDeviceHandle}; the diagram is in {@link MemoryChannel#encodeDeviceHandle}. */
    public static final int MEMORY_CHANNEL_BYTES = MEMORY_DEVICE2DEVICE_SEMAPHORE_BYTES + 3 * Long.BYTES;

    private DeviceHandles() {
    }

    public static void host2DeviceSemaphore(ByteBuffer out, long inboundToken, long expectedInbound) {
        ByteOrder order = begin(out, HOST2DEVICE_SEMAPHORE_BYTES, "a host-to-device semaphore's", "device semaphore handle");
        out.putLong(inboundToken).putLong(expectedInbound).order(order);
    }

    public static void memoryDevice2DeviceSemaphore(ByteBuffer out, long inboundToken, long remoteInboundToken,
                                             long expectedInbound) {
        ByteOrder order = begin(out, MEMORY_DEVICE2DEVICE_SEMAPHORE_BYTES, "a memory semaphore's",
                "device semaphore handle");
        out.putLong(inboundToken).putLong(remoteInboundToken).putLong(expectedInbound).order(order);
    }

    public static void fifo(ByteBuffer out, long ring, long head, long tail, long tailCache, int capacity) {
        ByteOrder order = begin(out, FIFO_BYTES, "a fifo's", "fifo device handle");
        putFifo(out, ring, head, tail, tailCache, capacity);
        out.order(order);
    }

    /**
     * {@code PortChannelDeviceHandle}: semaphore id, padding, the host-to-device semaphore's
     * handle, the fifo's handle, the flushed-position word, destination and source memory ids.
     */
    public static void portChannel(ByteBuffer out, int semaphoreId, long inboundToken, long expectedInbound, long ring,
                            long head, long tail, long tailCache, int capacity, long flushedPosition,
                            int dstMemoryId, int srcMemoryId) {
        ByteOrder order = begin(out, PORT_CHANNEL_BYTES, "a port channel's", "port channel device handle");
        out.putInt(semaphoreId).putInt(0).putLong(inboundToken).putLong(expectedInbound);
        putFifo(out, ring, head, tail, tailCache, capacity);
        out.putLong(flushedPosition).putInt(dstMemoryId).putInt(srcMemoryId).order(order);
    }

    /** {@code MemoryChannelDeviceHandle}: the memory semaphore's handle, then dst, src and the packet buffer (or 0). */
    public static void memoryChannel(ByteBuffer out, MemoryDevice2DeviceSemaphore.DeviceHandle semaphore, long dst, long src,
                              long packetBuffer) {
        ByteOrder order = begin(out, MEMORY_CHANNEL_BYTES, "a memory channel's", "memory channel device handle");
        semaphore.encode(out);
        out.order(ByteOrder.LITTLE_ENDIAN).putLong(dst).putLong(src).putLong(packetBuffer).order(order);
    }

    private static void putFifo(ByteBuffer out, long ring, long head, long tail, long tailCache, int capacity) {
        out.putLong(ring).putLong(head).putLong(tail).putLong(tailCache).putInt(capacity).putInt(0);
    }

    /** Checks the room, switches to little-endian and returns the caller's order. */
    private static ByteOrder begin(ByteBuffer out, int bytes, String what, String phase) {
        if (out.remaining() < bytes) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, what + " device handle has " + bytes + " bytes, "
                    + out.remaining() + " remain").phase(phase).build();
        }
        if (out.isReadOnly()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the buffer for " + what + " device handle is "
                    + "read-only").phase(phase).build();
        }
        ByteOrder order = out.order();
        out.order(ByteOrder.LITTLE_ENDIAN);
        return order;
    }
}
