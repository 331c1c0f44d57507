package org.jmscclpp.core;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The device form of a {@link MemoryChannel}: what a CUDA kernel receives, the field order of
 * MSCCL++'s {@code MemoryChannelDeviceHandle} (its semaphore handle, then {@code dst_},
 * {@code src_}, {@code packetBuffer_}). Little-endian 64-bit addresses, each valid in the process
 * that encoded them:
 * <pre>
 *  offset  width  field
 *       0      8  semaphore: this rank's inbound token, which the peer signals
 *       8      8  semaphore: the peer's inbound token, mapped here, which this rank signals
 *      16      8  semaphore: this rank's expected-inbound word
 *      24      8  dst: the peer's memory, mapped here
 *      32      8  src: this rank's memory
 *      40      8  packet buffer: this rank's, or 0 when the channel has none
 * </pre>
 * The first 24 bytes are {@link MemoryDevice2DeviceSemaphore.DeviceHandle#encode}'s.
 */
final class MemoryChannelLayout {

    /** Bytes of the device form. */
    static final int DEVICE_HANDLE_BYTES = MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES + 3 * Long.BYTES;

    private MemoryChannelLayout() {
    }

    /**
     * Writes the device form at {@code out}'s position, which advances by
     * {@value #DEVICE_HANDLE_BYTES}; the buffer's byte order is left as it was.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when fewer bytes remain (nothing is written)
     */
    static void encode(ByteBuffer out, MemoryDevice2DeviceSemaphore.DeviceHandle semaphore, long dst, long src,
                       long packetBuffer, ConnectionContext context) {
        if (out.remaining() < DEVICE_HANDLE_BYTES) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a memory channel's device handle has "
                    + DEVICE_HANDLE_BYTES + " bytes, " + out.remaining() + " remain").rank(context.rank())
                    .peer(context.remoteRank()).tag(context.tag()).phase("memory channel device handle").build();
        }
        ByteOrder order = out.order();
        semaphore.encode(out);
        out.order(ByteOrder.LITTLE_ENDIAN).putLong(dst).putLong(src).putLong(packetBuffer).order(order);
    }
}
