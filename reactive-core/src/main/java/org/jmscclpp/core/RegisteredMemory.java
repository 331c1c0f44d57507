package org.jmscclpp.core;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.spi.HostIdentity;
import org.jmscclpp.core.spi.TransportProvider;
import org.jmscclpp.core.spi.WireReader;
import org.jspecify.annotations.Nullable;

/**
 * A buffer made known to the transports that may move its bytes, and the form in which a peer
 * learns it: MSCCL++'s {@code RegisteredMemory}. Made by {@link Communicator#registerMemory} for
 * this rank's buffers, and by {@link #deserialize} (through {@link Communicator#recvMemory}) for a
 * peer's.
 *
 * <p>What a deserialized memory gives depends on where its owner runs:
 * <ul>
 *   <li>same process (equal {@link #hostHash()} and {@link #pidHash()}), where the backend
 *       {@linkplain Backend#importsOwnMemory() maps its own process's memory} and the memory has one
 *       of its IPC handles: a mapping of its own, as for another process, so the owner closing its
 *       buffer never pulls the memory from under a peer still reading it;</li>
 *   <li>same process otherwise: the very same buffer, at the same {@link #address()};</li>
 *   <li>same host, another process: the memory is mapped into this process through the first IPC
 *       transport both the memory and the backend support ({@code HOST_IPC} on the host backend,
 *       {@code CUDA_IPC} on the CUDA backend); {@link #close()} unmaps it;</li>
 *   <li>another host (or no common IPC transport): nothing is mapped; {@link #address()} is the
 *       owner's address, the remote key that Ethernet and InfiniBand writes target.</li>
 * </ul>
 *
 * <p>Wire form ({@link #serialize()}), little-endian:
 * <pre>
 *  offset  width  field
 *       0      4  magic 0x4D524D4A ("JMRM")
 *       4      2  version, 1
 *       6      2  E = number of transport entries, at most 11
 *       8      8  address of the memory in its owner process
 *      16      8  size in bytes, at least 1
 *      24      8  hostHash of the owner ({@link HostIdentity})
 *      32      8  pidHash of the owner
 *      40      4  transport bits ({@link TransportFlags#bits()})
 *      44      2  device type (0 CPU, 1 GPU)
 *      46      2  device id (signed)
 *      48      .  E entries, transports in increasing order, each in the transport bits:
 *                   +0  1  transport ordinal
 *                   +1  1  reserved, 0
 *                   +2  2  L = handle length, at most 1024
 *                   +4  L  the transport's handle ({@link Backend#exportMemory})
 * </pre>
 * Anything else (other magic or version, truncation, trailing bytes, unknown transports, out of
 * order or duplicate entries, a zero size) is {@link ErrorCode#INVALID_USAGE}.
 */
public final class RegisteredMemory implements AutoCloseable {

    static final int MAGIC = 0x4D524D4A;
    static final int VERSION = 1;
    static final int HEADER = 48;
    static final int MAX_HANDLE = 1024;

    /** Buffers registered in this process, by address, so a same-process peer finds the very buffer. */
    private static final Map<Long, LocalRegistration> LOCAL = new ConcurrentHashMap<>();

    private record LocalRegistration(DeviceBuffer buffer, int count) {
    }

    private enum Origin { LOCAL, SAME_PROCESS, MAPPED, REMOTE }

    private final Origin origin;
    private final long originalAddress;
    private final long size;
    private final TransportFlags transports;
    private final long hostHash;
    private final long pidHash;
    private final Device device;
    private final Map<Transport, byte[]> handles;
    private final @Nullable DeviceBuffer buffer;
    /** Registrations with transport providers that end with this memory (local memory only). */
    private final List<TransportProvider.Registration> registrations;
    private final AtomicBoolean closed = new AtomicBoolean();

    private RegisteredMemory(Origin origin, long originalAddress, long size, TransportFlags transports, long hostHash,
                             long pidHash, Device device, Map<Transport, byte[]> handles, @Nullable DeviceBuffer buffer,
                             List<TransportProvider.Registration> registrations) {
        this.origin = origin;
        this.originalAddress = originalAddress;
        this.size = size;
        this.transports = transports;
        this.hostHash = hostHash;
        this.pidHash = pidHash;
        this.device = device;
        this.handles = handles;
        this.buffer = buffer;
        this.registrations = List.copyOf(registrations);
    }

    /**
     * Registers a buffer of this process; {@code handles} holds the export of each IPC transport and
     * the handle of each provider's registration, and {@code registrations} end when this memory is closed.
     */
    static RegisteredMemory local(DeviceBuffer buffer, TransportFlags transports, Map<Transport, byte[]> handles,
                                  List<TransportProvider.Registration> registrations) {
        if (buffer.isClosed()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "cannot register a closed buffer")
                    .phase("registerMemory").build();
        }
        LOCAL.merge(buffer.address(), new LocalRegistration(buffer, 1),
                (a, b) -> a.buffer() == buffer && !a.buffer().isClosed() ? new LocalRegistration(buffer, a.count() + 1) : b);
        return new RegisteredMemory(Origin.LOCAL, buffer.address(), buffer.size(), transports, HostIdentity.hostHash(),
                HostIdentity.pidHash(), buffer.device(), copyOf(handles), buffer, registrations);
    }

    /** Address of the memory in this process: the mapping for a peer's memory; the owner's address when not mapped. */
    public long address() {
        return buffer != null ? buffer.address() : originalAddress;
    }

    /** Address of the memory in the process that registered it. */
    public long originalAddress() {
        return originalAddress;
    }

    public long size() {
        return size;
    }

    public TransportFlags transports() {
        return transports;
    }

    public long hostHash() {
        return hostHash;
    }

    public long pidHash() {
        return pidHash;
    }

    public Device device() {
        return device;
    }

    /** Whether this process registered the memory itself. */
    public boolean isLocal() {
        return origin == Origin.LOCAL;
    }

    /** Whether this process can reach the bytes directly: its own memory, or a peer's mapped here. */
    public boolean isMapped() {
        return buffer != null;
    }

    /** The handle an IPC transport exported for this memory, or null. */
    public byte @Nullable [] handle(Transport transport) {
        byte[] h = handles.get(transport);
        return h == null ? null : h.clone();
    }

    /**
     * The buffer behind this memory in this process (the registered buffer, or the mapping of a
     * peer's); {@link ErrorCode#INVALID_USAGE} when nothing is mapped or this memory is closed.
     */
    public DeviceBuffer buffer() {
        if (buffer == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "memory of another host (or without a common IPC "
                    + "transport) is not mapped in this process: " + this).phase("registered memory").build();
        }
        if (closed.get() || buffer.isClosed()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "registered memory is closed: " + this)
                    .phase("registered memory").build();
        }
        return buffer;
    }

    /** The host view of {@link #buffer()}; see {@link DeviceBuffer#hostSegment()}. */
    public MemorySegment hostSegment() {
        return buffer().hostSegment();
    }

    /**
     * Checks that [offset, offset + length) lies inside this memory.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} naming the range, the size and {@code phase}
     */
    public void checkRange(long offset, long length, String phase) {
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "range [" + offset + ", " + offset + " + " + length
                    + ") is outside registered memory of " + size + " bytes").phase(phase).build();
        }
    }

    /** The wire form described in the class comment. */
    public byte[] serialize() {
        int length = HEADER;
        for (byte[] h : handles.values()) {
            length += 4 + h.length;
        }
        ByteBuffer out = WireReader.writer(length);
        out.putInt(MAGIC).putShort((short) VERSION).putShort((short) handles.size());
        out.putLong(originalAddress).putLong(size).putLong(hostHash).putLong(pidHash).putInt(transports.bits());
        WireReader.putDevice(out, device);
        for (Map.Entry<Transport, byte[]> e : handles.entrySet()) {   // EnumMap: increasing ordinal
            out.put((byte) e.getKey().ordinal()).put((byte) 0).putShort((short) e.getValue().length).put(e.getValue());
        }
        return out.array();
    }

    /**
     * Reads {@link #serialize()}'s form and makes the memory usable here: the same buffer for a
     * same-process owner, a mapping through {@code backend} for a same-host owner, addresses only
     * for another host. Malformed bytes are {@link ErrorCode#INVALID_USAGE}; a same-process buffer
     * that is no longer registered is {@link ErrorCode#INVALID_USAGE} too.
     */
    public static RegisteredMemory deserialize(byte[] bytes, Backend backend) {
        WireReader in = new WireReader(bytes, "registered memory");
        int magic = in.i32("magic");
        in.check(magic == MAGIC, "magic 0x" + Integer.toHexString(magic) + " is not a registered memory's");
        int version = in.u16("version");
        in.check(version == VERSION, "unknown registered memory version " + version + " (this build reads " + VERSION + ")");
        int entries = in.u16("entry count");
        in.check(entries <= Transport.count(), entries + " transport entries, more than the " + Transport.count() + " transports");
        long address = in.i64("address");
        long size = in.i64("size");
        in.check(size > 0, "size " + size + " is not positive");
        in.check(Long.compareUnsigned(address + size - 1, address) >= 0, "memory at 0x" + Long.toHexString(address)
                + " of " + size + " bytes wraps around the address space");
        long hostHash = in.i64("hostHash");
        long pidHash = in.i64("pidHash");
        int bits = in.i32("transport bits");
        in.check(TransportFlags.validBits(bits), "transport bits 0x" + Integer.toHexString(bits) + " name unknown transports");
        TransportFlags transports = TransportFlags.fromBits(bits);
        Device device = in.device();
        Map<Transport, byte[]> handles = new EnumMap<>(Transport.class);
        int previous = -1;
        for (int i = 0; i < entries; i++) {
            int t = in.u8("entry " + i + " transport");
            Transport transport = Transport.ofOrdinalOrNull(t);
            in.check(transport != null, "entry " + i + " names unknown transport number " + t);
            in.check(t > previous, "entry " + i + " (" + transport + ") is out of order or repeated");
            in.check(transports.has(transport), "entry " + i + " is for " + transport + ", which the transport bits lack");
            previous = t;
            in.check(in.u8("entry " + i + " reserved") == 0, "entry " + i + " has a non-zero reserved byte");
            int len = in.u16("entry " + i + " length");
            in.check(len <= MAX_HANDLE, "entry " + i + " handle of " + len + " bytes exceeds " + MAX_HANDLE);
            handles.put(transport, in.bytes(len, "entry " + i + " handle"));
        }
        in.end();
        return materialize(address, size, transports, hostHash, pidHash, device, handles, backend);
    }

    private static RegisteredMemory materialize(long address, long size, TransportFlags transports, long hostHash,
                                                long pidHash, Device device, Map<Transport, byte[]> handles, Backend backend) {
        Map<Transport, byte[]> frozen = copyOf(handles);
        boolean sameHost = hostHash == HostIdentity.hostHash();
        // the first IPC transport of both the memory and the backend that came with a handle: what maps it here
        Transport ipc = !sameHost ? null : backend.ipcTransports().and(transports).toSet().stream()
                .filter(handles::containsKey).findFirst().orElse(null);
        if (sameHost && pidHash == HostIdentity.pidHash() && !(backend.importsOwnMemory() && ipc != null)) {
            LocalRegistration reg = LOCAL.get(address);
            if (reg == null || reg.buffer().isClosed() || reg.buffer().size() < size) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no live buffer of " + size + " bytes at 0x"
                        + Long.toHexString(address) + " is registered in this process (closed, or not ours)")
                        .phase("deserialize registered memory").build();
            }
            return new RegisteredMemory(Origin.SAME_PROCESS, address, size, transports, hostHash, pidHash, device,
                    frozen, reg.buffer(), List.of());
        }
        if (ipc != null) {
            DeviceBuffer mapping = backend.importMemory(ipc, handles.get(ipc), size);
            return new RegisteredMemory(Origin.MAPPED, address, size, transports, hostHash, pidHash, device, frozen,
                    mapping, List.of());
        }
        return new RegisteredMemory(Origin.REMOTE, address, size, transports, hostHash, pidHash, device, frozen, null, List.of());
    }

    private static Map<Transport, byte[]> copyOf(Map<Transport, byte[]> handles) {
        Map<Transport, byte[]> copy = new EnumMap<>(Transport.class);
        handles.forEach((t, h) -> copy.put(t, h.clone()));
        return Collections.unmodifiableMap(copy);
    }

    /**
     * Unmaps a peer's memory mapped here; for memory this process registered, ends the registration
     * (the buffer itself belongs to its owner, who closes it). Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        if (origin == Origin.MAPPED && buffer != null) {
            buffer.close();
        } else if (origin == Origin.LOCAL && buffer != null) {
            LOCAL.computeIfPresent(originalAddress, (a, reg) -> reg.buffer() != buffer ? reg
                    : reg.count() > 1 ? new LocalRegistration(buffer, reg.count() - 1) : null);
            registrations.forEach(TransportProvider.Registration::close);
        }
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed.get();
    }

    @Override
    public String toString() {
        return "RegisteredMemory[" + origin.name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ') + ", 0x"
                + Long.toHexString(originalAddress) + ", " + size + " bytes, " + transports + ", " + device
                + ", host " + HexFormat.of().toHexDigits(hostHash) + "]";
    }
}
