package org.jmscclpp.core;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How to open one end of a connection: the transport, the device whose memory it moves, the
 * InfiniBand queue parameters (used by IB transports only) and the depth of the write queue.
 * Immutable; build with {@link #of(Transport)} or {@link #builder(Transport)}.
 *
 * <p>Defaults follow MSCCL++: the device is the communicator backend's own device when not set,
 * {@code maxWriteQueueSize} -1 means "the transport's default", and {@link Ib} has MSCCL++'s queue
 * sizes.
 */
public final class EndpointConfig {

    private final Transport transport;
    private final @Nullable Device device;
    private final int maxWriteQueueSize;
    private final Ib ib;

    private EndpointConfig(Builder b) {
        this.transport = b.transport;
        this.device = b.device;
        this.maxWriteQueueSize = b.maxWriteQueueSize;
        this.ib = b.ib;
    }

    /** A config for {@code transport} with every default. */
    public static EndpointConfig of(Transport transport) {
        return builder(transport).build();
    }

    public static Builder builder(Transport transport) {
        return new Builder(transport);
    }

    /** A builder starting from this config's values. */
    public Builder toBuilder() {
        return new Builder(transport).device(device).maxWriteQueueSize(maxWriteQueueSize).ib(ib);
    }

    public Transport transport() {
        return transport;
    }

    /** The device this end works for, or null for "the backend's device". */
    public @Nullable Device device() {
        return device;
    }

    /** The most writes a connection keeps in flight before {@code write} waits, or -1 for the transport's default. */
    public int maxWriteQueueSize() {
        return maxWriteQueueSize;
    }

    public Ib ib() {
        return ib;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EndpointConfig c && c.transport == transport && Objects.equals(c.device, device)
                && c.maxWriteQueueSize == maxWriteQueueSize && c.ib.equals(ib);
    }

    @Override
    public int hashCode() {
        return Objects.hash(transport, device, maxWriteQueueSize, ib);
    }

    @Override
    public String toString() {
        return "EndpointConfig[" + transport + ", device " + (device == null ? "default" : device)
                + ", maxWriteQueueSize " + maxWriteQueueSize + (transport.isIb() ? ", " + ib : "") + "]";
    }

    /** The modes of an InfiniBand connection, as MSCCL++ names them. */
    public enum IbMode {
        /** Host mode where the device supports RDMA atomics, else host-no-atomic. */
        DEFAULT,
        /** Signals are RDMA atomic fetch-adds. */
        HOST,
        /** Signals are writes with immediate data, for devices without RDMA atomics. */
        HOST_NO_ATOMIC
    }

    /**
     * InfiniBand queue parameters (MSCCL++'s {@code EndpointConfig::Ib}).
     *
     * @param port         HCA port, -1 for the first active one
     * @param gidIndex     GID index, -1 for {@code MSCCLPP_IB_GID_INDEX} or 0
     * @param maxCqSize    completion queue entries
     * @param maxCqPollNum completions taken per poll
     * @param maxSendWr    outstanding send work requests
     * @param maxRecvWr    outstanding receive work requests
     * @param maxWrPerSend work requests posted per send call
     * @param mode         how signals travel
     */
    public record Ib(int port, int gidIndex, int maxCqSize, int maxCqPollNum, int maxSendWr, int maxRecvWr,
                     int maxWrPerSend, IbMode mode) {

        /** MSCCL++'s defaults: port -1, gid -1, cq 1024, poll 256, send 8192, recv 16, per send 64, DEFAULT. */
        public static final Ib DEFAULT = new Ib(-1, -1, 1024, 256, 8192, 16, 64, IbMode.DEFAULT);

        public Ib {
            Objects.requireNonNull(mode, "mode");
            atLeast("port", port, -1);
            atLeast("gidIndex", gidIndex, -1);
            atLeast("maxCqSize", maxCqSize, 1);
            atLeast("maxCqPollNum", maxCqPollNum, 1);
            atLeast("maxSendWr", maxSendWr, 1);
            atLeast("maxRecvWr", maxRecvWr, 1);
            atLeast("maxWrPerSend", maxWrPerSend, 1);
            if (maxWrPerSend > maxSendWr) {
                throw invalid("maxWrPerSend (" + maxWrPerSend + ") exceeds maxSendWr (" + maxSendWr + ")");
            }
        }

        public Ib withPort(int v) {
            return new Ib(v, gidIndex, maxCqSize, maxCqPollNum, maxSendWr, maxRecvWr, maxWrPerSend, mode);
        }

        public Ib withGidIndex(int v) {
            return new Ib(port, v, maxCqSize, maxCqPollNum, maxSendWr, maxRecvWr, maxWrPerSend, mode);
        }

        public Ib withMaxCqSize(int v) {
            return new Ib(port, gidIndex, v, maxCqPollNum, maxSendWr, maxRecvWr, maxWrPerSend, mode);
        }

        public Ib withMaxCqPollNum(int v) {
            return new Ib(port, gidIndex, maxCqSize, v, maxSendWr, maxRecvWr, maxWrPerSend, mode);
        }

        public Ib withMaxSendWr(int v) {
            return new Ib(port, gidIndex, maxCqSize, maxCqPollNum, v, maxRecvWr, maxWrPerSend, mode);
        }

        public Ib withMaxRecvWr(int v) {
            return new Ib(port, gidIndex, maxCqSize, maxCqPollNum, maxSendWr, v, maxWrPerSend, mode);
        }

        public Ib withMaxWrPerSend(int v) {
            return new Ib(port, gidIndex, maxCqSize, maxCqPollNum, maxSendWr, maxRecvWr, v, mode);
        }

        public Ib withMode(IbMode v) {
            return new Ib(port, gidIndex, maxCqSize, maxCqPollNum, maxSendWr, maxRecvWr, maxWrPerSend, v);
        }
    }

    /** Builder for {@link EndpointConfig}; every setter checks its argument. */
    public static final class Builder {
        private final Transport transport;
        private @Nullable Device device;
        private int maxWriteQueueSize = -1;
        private Ib ib = Ib.DEFAULT;

        private Builder(Transport transport) {
            if (transport == null) {
                throw invalid("an endpoint needs a transport");
            }
            this.transport = transport;
        }

        /** The device this end works for; null means the backend's device. */
        public Builder device(@Nullable Device device) {
            this.device = device;
            return this;
        }

        /** -1 (the transport's default) or a positive queue depth. */
        public Builder maxWriteQueueSize(int size) {
            if (size != -1 && size < 1) {
                throw invalid("maxWriteQueueSize is -1 or positive, got " + size);
            }
            this.maxWriteQueueSize = size;
            return this;
        }

        public Builder ib(Ib ib) {
            this.ib = Objects.requireNonNull(ib, "ib");
            return this;
        }

        public EndpointConfig build() {
            return new EndpointConfig(this);
        }
    }

    private static void atLeast(String name, int value, int min) {
        if (value < min) {
            throw invalid(name + " must be >= " + min + ", got " + value);
        }
    }

    private static JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("endpoint config").build();
    }
}
