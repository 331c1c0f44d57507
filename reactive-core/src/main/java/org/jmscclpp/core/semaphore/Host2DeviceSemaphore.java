package org.jmscclpp.core.semaphore;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.AbortSignal;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.spi.DeviceHandles;
import reactor.core.publisher.Mono;

/**
 * A semaphore that host code signals (typically the proxy, after the data it moved) and device
 * code waits on: MSCCL++'s {@code Host2DeviceSemaphore}. {@link #signal()} raises the peer's
 * inbound token through {@link Connection#updateAndSync}; the peer's kernel waits with
 * {@link #deviceHandle()}.
 *
 * <p>Owns the expected-inbound word (device memory of the backend); {@link #close()} frees it.
 */
public final class Host2DeviceSemaphore implements AutoCloseable {

    /** Bytes of the encoded device handle: two 64-bit addresses. */
    public static final int DEVICE_HANDLE_BYTES = DeviceHandles.HOST2DEVICE_SEMAPHORE_BYTES;

    private final Semaphore semaphore;
    private final DeviceBuffer expected;
    private final AtomicLong outbound = new AtomicLong();

    /** Wraps {@code semaphore}, allocating the expected-inbound word from {@code backend}. */
    public Host2DeviceSemaphore(Semaphore semaphore, Backend backend) {
        this.semaphore = semaphore;
        this.expected = backend.allocate(Semaphore.TOKEN_BYTES);
    }

    /** Builds the semaphore over {@code connection} with its peer (which must build one too) and wraps it. */
    public static Mono<Host2DeviceSemaphore> build(Communicator communicator, Connection connection) {
        return communicator.buildSemaphore(connection).map(s -> communicator.own(new Host2DeviceSemaphore(s, communicator.backend())));
    }

    public Semaphore semaphore() {
        return semaphore;
    }

    /** Raises the peer's inbound token by one, after everything the connection wrote before. */
    public void signal() {
        synchronized (outbound) {
            semaphore.connection().updateAndSync(semaphore.remoteMemory(), 0, outbound, outbound.get() + 1);
        }
    }

    /**
     * Writes {@code size} bytes of {@code src} to {@code dst} over this semaphore's connection, then
     * raises the peer's token, as one {@link Connection#writeAndUpdate}: MSCCL++'s put-with-signal.
     */
    public void writeAndSignal(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        synchronized (outbound) {   // as signal(): tokens reach the peer in increasing order
            semaphore.connection().writeAndUpdate(dst, dstOffset, src, srcOffset, size, semaphore.remoteMemory(), 0,
                    outbound, outbound.get() + 1);
        }
    }

    /** The handle device code waits with: this rank's inbound token and expected-inbound word. */
    public DeviceHandle deviceHandle() {
        return new DeviceHandle(semaphore.localMemory().buffer(), expected, semaphore.connection().context(),
                semaphore.abortSignal());
    }

    @Override
    public void close() {
        expected.close();
    }

    /**
     * Device side of a {@link Host2DeviceSemaphore}: {@link #poll()} and {@link #await} for Java
     * threads acting as kernels on the host backend, and {@link #encode} for GPU kernels, which get
     * the two addresses (inbound token, then expected-inbound word, each 8 bytes little-endian).
     */
    public static final class DeviceHandle extends InboundToken {
        private final long inboundAddress;
        private final long expectedAddress;

        DeviceHandle(DeviceBuffer inbound, DeviceBuffer expected, ConnectionContext context, AbortSignal abortSignal) {
            super(inbound.hostAccessible() ? inbound.hostSegment() : null,
                    expected.hostAccessible() ? expected.hostSegment() : null, context, abortSignal);
            this.inboundAddress = inbound.address();
            this.expectedAddress = expected.address();
        }

        /**
         * Writes the {@value Host2DeviceSemaphore#DEVICE_HANDLE_BYTES}-byte device form at
         * {@code out}'s position, little-endian (the buffer's own byte order is left as it was):
         * <pre>
         *  offset  width  field
         *       0      8  address of this rank's inbound token
         *       8      8  address of the expected-inbound word
         * </pre>
         *
         * @return {@code out}
         * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when fewer bytes remain
         */
        public ByteBuffer encode(ByteBuffer out) {
            DeviceHandles.host2DeviceSemaphore(out, inboundAddress, expectedAddress);
            return out;
        }

        public long inboundAddress() {
            return inboundAddress;
        }

        public long expectedAddress() {
            return expectedAddress;
        }
    }
}
