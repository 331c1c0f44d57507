package org.jmscclpp.core.spi;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;

/**
 * One side of a connection as the other side learns it: transport, device, host and process
 * identity and the transport's own addressing bytes (empty for {@code HOST_IPC}; a socket address
 * for Ethernet; queue-pair numbers for InfiniBand). The communicator sends each rank's endpoint to
 * the peer and gives both to {@link Backend#connect}.
 *
 * <p>Wire form ({@link #serialize()}), little-endian:
 * <pre>
 *  offset  width  field
 *       0      4  magic 0x50454D4A ("JMEP")
 *       4      2  version, 1
 *       6      1  transport ordinal ({@link Transport})
 *       7      1  reserved, 0
 *       8      2  device type (0 CPU, 1 GPU)
 *      10      2  device id (signed)
 *      12      4  maxWriteQueueSize (signed, -1 = default)
 *      16      8  hostHash
 *      24      8  pidHash
 *      32      2  L = length of the transport's bytes, at most 4096
 *      34      L  transport's bytes
 * </pre>
 */
public final class Endpoint {

    static final int MAGIC = 0x50454D4A;
    static final int VERSION = 1;
    static final int MAX_INFO = 4096;
    private static final int HEADER = 34;

    private final Transport transport;
    private final Device device;
    private final int maxWriteQueueSize;
    private final long hostHash;
    private final long pidHash;
    private final byte[] info;

    public Endpoint(Transport transport, Device device, int maxWriteQueueSize, long hostHash, long pidHash, byte[] info) {
        if (info.length > MAX_INFO) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "transport bytes of an endpoint are at most "
                    + MAX_INFO + ", got " + info.length).phase("endpoint").build();
        }
        this.transport = transport;
        this.device = device;
        this.maxWriteQueueSize = maxWriteQueueSize;
        this.hostHash = hostHash;
        this.pidHash = pidHash;
        this.info = info.clone();
    }

    /** An endpoint of this process (its host and pid hashes) for {@code config} on {@code device}. */
    public static Endpoint local(EndpointConfig config, Device device, byte[] info) {
        return new Endpoint(config.transport(), device, config.maxWriteQueueSize(),
                HostIdentity.hostHash(), HostIdentity.pidHash(), info);
    }

    public Transport transport() {
        return transport;
    }

    public Device device() {
        return device;
    }

    public int maxWriteQueueSize() {
        return maxWriteQueueSize;
    }

    public long hostHash() {
        return hostHash;
    }

    public long pidHash() {
        return pidHash;
    }

    /** A copy of the transport's addressing bytes. */
    public byte[] info() {
        return info.clone();
    }

    /** Whether this endpoint lives on the same host as the calling process. */
    public boolean onThisHost() {
        return hostHash == HostIdentity.hostHash();
    }

    public byte[] serialize() {
        ByteBuffer out = WireReader.writer(HEADER + info.length);
        out.putInt(MAGIC).putShort((short) VERSION).put((byte) transport.ordinal()).put((byte) 0);
        WireReader.putDevice(out, device);
        out.putInt(maxWriteQueueSize).putLong(hostHash).putLong(pidHash).putShort((short) info.length).put(info);
        return out.array();
    }

    /** Parses {@link #serialize()}'s form; anything else is {@link ErrorCode#INVALID_USAGE}. */
    public static Endpoint deserialize(byte[] bytes) {
        WireReader in = new WireReader(bytes, "endpoint");
        int magic = in.i32("magic");
        in.check(magic == MAGIC, "magic 0x" + Integer.toHexString(magic) + " is not an endpoint's");
        int version = in.u16("version");
        in.check(version == VERSION, "unknown endpoint version " + version + " (this build reads " + VERSION + ")");
        int t = in.u8("transport");
        Transport transport = Transport.ofOrdinalOrNull(t);
        in.check(transport != null, "unknown transport number " + t);
        in.u8("reserved");
        Device device = in.device();
        int queue = in.i32("maxWriteQueueSize");
        in.check(queue == -1 || queue > 0, "maxWriteQueueSize " + queue + " is neither -1 nor positive");
        long hostHash = in.i64("hostHash");
        long pidHash = in.i64("pidHash");
        int len = in.u16("info length");
        in.check(len <= MAX_INFO, "transport bytes of " + len + " exceed " + MAX_INFO);
        byte[] info = in.bytes(len, "transport bytes");
        in.end();
        return new Endpoint(transport, device, queue, hostHash, pidHash, info);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Endpoint e && e.transport == transport && e.device.equals(device)
                && e.maxWriteQueueSize == maxWriteQueueSize && e.hostHash == hostHash && e.pidHash == pidHash
                && Arrays.equals(e.info, info);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(hostHash * 31 + pidHash) * 31 + transport.hashCode();
    }

    @Override
    public String toString() {
        return "Endpoint[" + transport + ", " + device + ", host " + HexFormat.of().toHexDigits(hostHash)
                + ", pid " + HexFormat.of().toHexDigits(pidHash) + ", " + info.length + " transport bytes]";
    }
}
