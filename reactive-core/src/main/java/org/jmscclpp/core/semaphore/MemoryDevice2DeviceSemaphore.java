package org.jmscclpp.core.semaphore;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import org.jmscclpp.core.AbortSignal;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.spi.DeviceHandles;
import org.jmscclpp.core.spi.Tokens;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A semaphore that device code signals and device code waits on, by direct atomic stores into the
 * peer's mapped token: MSCCL++'s {@code MemoryDevice2DeviceSemaphore}. The peer's inbound token
 * must be mapped in this process, so the connection's transport is an IPC one ({@code HOST_IPC}
 * on the host backend, {@code CUDA_IPC} on GPUs); anything else is {@link ErrorCode#INVALID_USAGE}.
 *
 * <p>Owns the expected-inbound word; {@link #close()} frees it.
 */
public final class MemoryDevice2DeviceSemaphore implements AutoCloseable {

    /** Bytes of the encoded device handle: three 64-bit addresses. */
    public static final int DEVICE_HANDLE_BYTES = DeviceHandles.MEMORY_DEVICE2DEVICE_SEMAPHORE_BYTES;

    private final Semaphore semaphore;
    private final DeviceBuffer expected;

    /** Wraps {@code semaphore}, allocating the expected-inbound word from {@code backend}. */
    public MemoryDevice2DeviceSemaphore(Semaphore semaphore, Backend backend) {
        if (!semaphore.remoteMemory().isMapped()) {
            throw Host2HostSemaphore.invalid(semaphore.connection(), "a memory semaphore stores into the peer's token "
                    + "directly, so the token must be mapped here; " + semaphore.connection().transport()
                    + " memory of the peer is not (use an IPC transport)");
        }
        this.semaphore = semaphore;
        this.expected = backend.allocate(Semaphore.TOKEN_BYTES);
    }

    /** Builds the semaphore over {@code connection} with its peer (which must build one too) and wraps it. */
    public static Mono<MemoryDevice2DeviceSemaphore> build(Communicator communicator, Connection connection) {
        return communicator.buildSemaphore(connection)
                .map(s -> communicator.own(new MemoryDevice2DeviceSemaphore(s, communicator.backend())));
    }

    public Semaphore semaphore() {
        return semaphore;
    }

    /** The handle device code signals and waits with. */
    public DeviceHandle deviceHandle() {
        return new DeviceHandle(semaphore.localMemory().buffer(), semaphore.remoteMemory().buffer(), expected,
                semaphore.connection().context(), semaphore.abortSignal());
    }

    @Override
    public void close() {
        expected.close();
    }

    /**
     * Device side of a {@link MemoryDevice2DeviceSemaphore}: signal and wait for Java threads acting
     * as kernels on the host backend, and {@link #encode} for GPU kernels (inbound token, remote
     * inbound token, expected-inbound word: three 8-byte little-endian addresses).
     */
    public static final class DeviceHandle extends InboundToken {
        private final @Nullable MemorySegment remoteInbound;
        private final long inboundAddress;
        private final long remoteInboundAddress;
        private final long expectedAddress;

        public DeviceHandle(DeviceBuffer inbound, DeviceBuffer remoteInbound, DeviceBuffer expected, ConnectionContext context) {
            this(inbound, remoteInbound, expected, context, AbortSignal.NEVER);
        }

        /** As the other constructor; waits also end with the cause of {@code abortSignal} once it is raised. */
        public DeviceHandle(DeviceBuffer inbound, DeviceBuffer remoteInbound, DeviceBuffer expected, ConnectionContext context,
                            AbortSignal abortSignal) {
            super(inbound.hostAccessible() ? inbound.hostSegment() : null,
                    expected.hostAccessible() ? expected.hostSegment() : null, context, abortSignal);
            this.remoteInbound = remoteInbound.hostAccessible() ? remoteInbound.hostSegment() : null;
            this.inboundAddress = inbound.address();
            this.remoteInboundAddress = remoteInbound.address();
            this.expectedAddress = expected.address();
        }

        /**
         * Raises the peer's inbound token by one with release semantics: this thread's earlier stores become visible first.
         *
         * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the tokens' memory was closed (its
         *                           communicator was closed), as {@link #await} and {@link #poll} do
         */
        public void signal() {
            raise("device semaphore signal");
        }

        /**
         * Raises the peer's inbound token by one without ordering earlier stores. Java has no relaxed
         * read-modify-write, so this is the same atomic add; on x86 the two cost the same.
         */
        public void relaxedSignal() {
            raise("device semaphore relaxedSignal");
        }

        private void raise(String phase) {
            try {
                Tokens.addRelease(hostView(remoteInbound), 0, 1);
            } catch (IllegalStateException e) {
                throw Host2HostSemaphore.closed(context, phase, e);
            }
        }

        /**
         * Writes the {@value MemoryDevice2DeviceSemaphore#DEVICE_HANDLE_BYTES}-byte device form at
         * {@code out}'s position, little-endian (the buffer's own byte order is left as it was):
         * <pre>
         *  offset  width  field
         *       0      8  address of this rank's inbound token
         *       8      8  address of the peer's inbound token, mapped here
         *      16      8  address of the expected-inbound word
         * </pre>
         *
         * @return {@code out}
         * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when fewer bytes remain
         */
        public ByteBuffer encode(ByteBuffer out) {
            DeviceHandles.memoryDevice2DeviceSemaphore(out, inboundAddress, remoteInboundAddress, expectedAddress);
            return out;
        }
    }
}
