package org.jmscclpp.core.channel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.packet.LL16Packet;
import org.jmscclpp.core.packet.LL8Packet;
import org.jmscclpp.core.packet.PacketFormat;
import org.jmscclpp.core.packet.Packets;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.core.spi.DeviceHandles;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * Direct loads and stores between this rank and one peer whose memory is mapped in this process:
 * MSCCL++'s {@code MemoryChannel} (formerly {@code SmChannel}). No proxy and no connection call
 * sits in the data path: device code (a CUDA kernel, or on the host backend a Java thread playing
 * one) copies into the peer's memory itself and signals with atomics on the peer's token.
 *
 * <h2>What it joins</h2>
 * <ul>
 *   <li>a {@link MemoryDevice2DeviceSemaphore}, whose connection maps the peer's memory
 *       ({@code HOST_IPC} on the host backend, {@code CUDA_IPC} on GPUs);</li>
 *   <li>{@code dst}: the peer's memory, received from it and mapped here. {@code put} and the
 *       {@code write} verbs store into it, {@code get} and the {@code read} verbs load from it,
 *       {@code putPackets} writes packets into it;</li>
 *   <li>{@code src}: this rank's memory, where {@code put} reads, {@code get} writes, and
 *       {@code unpackPackets} leaves the payload;</li>
 *   <li>optionally a packet buffer: this rank's memory that the <em>peer</em> writes packets
 *       into, read by {@code unpackPackets}.</li>
 * </ul>
 * For packets, as in MSCCL++, each rank's packet buffer is the memory it exposes to the peer: the
 * peer's {@code dst} is this rank's packet buffer, so {@code putPackets} on one side lands in the
 * buffer {@code unpackPackets} reads on the other. {@link #build} sets both ends up that way in
 * one step: each rank exposes a memory (its packet buffer for packets, its data for plain
 * {@code put}/{@code get}) and receives the peer's as {@code dst}.
 *
 * <p>An LL16 ping-pong, the same code on both ranks ({@code me} 0 or 1):
 * <pre>{@code
 * MemoryChannel ch = MemoryChannel.build(comm, connection, packets, data, packets).block();
 * MemoryChannel.DeviceHandle h = ch.deviceHandle();
 * for (int i = 0; i < rounds; i++) {
 *     int flag = i + 1;
 *     if ((me ^ (i & 1)) == 0) {
 *         fill(data, i);
 *         h.putPackets(0, 0, bytes, flag);               // into the peer's packet buffer
 *     } else {
 *         h.unpackPackets(0, 0, bytes, flag, timeout);   // from this rank's packet buffer into data
 *         check(data, i);
 *     }
 * }
 * }</pre>
 *
 * <p>The channel is a description and owns nothing: the semaphore and the memories belong to
 * whoever made them (the communicator, for those {@link #build} made).
 */
public final class MemoryChannel {

    /** Bytes of the device form ({@link #encodeDeviceHandle}). */
    public static final int DEVICE_HANDLE_BYTES = DeviceHandles.MEMORY_CHANNEL_BYTES;

    private final MemoryDevice2DeviceSemaphore semaphore;
    private final RegisteredMemory dst;
    private final RegisteredMemory src;
    private final @Nullable RegisteredMemory packetBuffer;

    /**
     * A channel over {@code semaphore} from {@code src} (this rank's) to {@code dst} (the peer's,
     * mapped here), with an optional packet buffer of this rank.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} naming the peer when {@code dst} is
     *                           not mapped in this process (memory of another host, or without a
     *                           common IPC transport), or {@code src} or the packet buffer is not
     *                           memory this rank registered
     */
    public MemoryChannel(MemoryDevice2DeviceSemaphore semaphore, RegisteredMemory dst, RegisteredMemory src,
                         @Nullable RegisteredMemory packetBuffer) {
        ConnectionContext context = semaphore.semaphore().connection().context();
        if (!dst.isMapped()) {
            throw invalid(context, "a memory channel loads and stores into the peer's memory directly, so dst must be "
                    + "mapped in this process; " + dst + " is not (memory of another host, or no common IPC transport)");
        }
        checkLocal(src, "src", context);
        if (packetBuffer != null) {
            checkLocal(packetBuffer, "the packet buffer", context);
        }
        this.semaphore = semaphore;
        this.dst = dst;
        this.src = src;
        this.packetBuffer = packetBuffer;
    }

    /**
     * Sets up one end of a channel with the peer of {@code connection}, which must call this too:
     * sends {@code exposed} (this rank's memory the peer will write: its packet buffer for packet
     * channels, {@code src} itself for in-place {@code put}/{@code get}), receives the peer's as
     * {@code dst}, and builds a {@link MemoryDevice2DeviceSemaphore} over the connection. The steps
     * are the communicator's on the connection's (peer, tag), made in this call's order (send
     * memory, receive memory, semaphore), so the two ends must call this at matching points. The
     * communicator owns the peer's memory and the semaphore.
     *
     * <p>Emits the channel once the three steps are done, on the thread that finished the last (a
     * virtual thread of the communicator, or the bootstrap's); errors as the communicator's
     * steps do ({@link ErrorCode#TIMEOUT}, {@link ErrorCode#REMOTE_ERROR}), and with
     * {@link ErrorCode#INVALID_USAGE} when a memory is not this rank's or the peer's is not mapped
     * here (see the constructor).
     */
    public static Mono<MemoryChannel> build(Communicator communicator, Connection connection, RegisteredMemory exposed,
                                            RegisteredMemory src, @Nullable RegisteredMemory packetBuffer) {
        ConnectionContext context = connection.context();
        try {
            checkLocal(exposed, "the exposed memory", context);
            checkLocal(src, "src", context);
            if (packetBuffer != null) {
                checkLocal(packetBuffer, "the packet buffer", context);
            }
        } catch (JmscclppException e) {
            return Mono.error(e);
        }
        Mono<Void> sent = communicator.sendMemory(exposed, context.remoteRank(), context.tag());
        Mono<RegisteredMemory> received = communicator.recvMemory(context.remoteRank(), context.tag());
        Mono<MemoryDevice2DeviceSemaphore> built = MemoryDevice2DeviceSemaphore.build(communicator, connection);
        return Mono.zip(sent.thenReturn(Boolean.TRUE), received, built)
                .map(t -> new MemoryChannel(t.getT3(), t.getT2(), src, packetBuffer));
    }

    /** {@link #build(Communicator, Connection, RegisteredMemory, RegisteredMemory, RegisteredMemory)} in place, no packets: both ranks expose {@code buffer} and use it as src. */
    public static Mono<MemoryChannel> build(Communicator communicator, Connection connection, RegisteredMemory buffer) {
        return build(communicator, connection, buffer, buffer, null);
    }

    public MemoryDevice2DeviceSemaphore semaphore() {
        return semaphore;
    }

    /** The peer's memory, mapped here. */
    public RegisteredMemory dst() {
        return dst;
    }

    /** This rank's memory. */
    public RegisteredMemory src() {
        return src;
    }

    /** This rank's packet buffer, which the peer writes packets into, or null. */
    public @Nullable RegisteredMemory packetBuffer() {
        return packetBuffer;
    }

    /**
     * The verbs device code uses, for Java threads acting as kernels. Handles are cheap and
     * stateless beyond the memory they point at: every thread may take its own, and all of them
     * share the semaphore's words.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when a memory is closed
     */
    public DeviceHandle deviceHandle() {
        return new DeviceHandle(semaphore.deviceHandle(), dst, src, packetBuffer,
                semaphore.semaphore().connection().context());
    }

    /**
     * Writes what a CUDA kernel gets, the field order of MSCCL++'s {@code MemoryChannelDeviceHandle},
     * at {@code out}'s position (which advances by {@value #DEVICE_HANDLE_BYTES}); the buffer's byte
     * order is left as it was. Little-endian 64-bit addresses, each valid in this process:
     * <pre>
     *  offset  width  field
     *       0      8  semaphore: this rank's inbound token, which the peer signals
     *       8      8  semaphore: the peer's inbound token, mapped here, which this rank signals
     *      16      8  semaphore: this rank's expected-inbound word
     *      24      8  dst: the peer's memory, mapped here
     *      32      8  src: this rank's memory
     *      40      8  packet buffer: this rank's, or 0 when the channel has none
     * </pre>
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when fewer bytes remain, or a memory is closed
     */
    public void encodeDeviceHandle(ByteBuffer out) {
        DeviceHandles.memoryChannel(out, semaphore.deviceHandle(), dst.address(), src.address(),
                packetBuffer == null ? 0 : packetBuffer.address());
    }

    @Override
    public String toString() {
        return "MemoryChannel[" + semaphore.semaphore().connection().context() + ", dst " + dst.size() + " bytes, src "
                + src.size() + " bytes" + (packetBuffer == null ? "" : ", packets " + packetBuffer.size() + " bytes") + "]";
    }

    private static void checkLocal(RegisteredMemory memory, String what, ConnectionContext context) {
        if (!memory.isLocal()) {
            throw invalid(context, what + " must be memory this rank registered, not " + memory);
        }
    }

    private static JmscclppException invalid(ConnectionContext context, String detail) {
        return Packets.invalid(context, "memory channel", detail);
    }

    /**
     * First element of thread {@code threadId}'s share when {@code count} elements are split among
     * {@code numThreads} threads in whole units of {@code unit} elements: contiguous shares, in
     * thread order, that differ by at most one unit. Share {@code t} is
     * {@code [shareStart(t), shareStart(t + 1))}.
     */
    static long shareStart(long count, long unit, int threadId, int numThreads) {
        long units = count / unit + (count % unit == 0 ? 0 : 1);
        long start = units / numThreads * threadId + Math.min(threadId, units % numThreads);
        return Math.min(count, start * unit);
    }

    /**
     * Device side of a {@link MemoryChannel}: MSCCL++'s {@code MemoryChannelDeviceHandle} verbs
     * for Java threads that play the role of a kernel. Like device code, every method blocks the
     * calling thread until its work is done; use it from platform or virtual threads, never from a
     * reactive pipeline. On GPU memory that the host cannot reach, the verbs that touch it are
     * {@link ErrorCode#INVALID_USAGE}: only the CUDA version of the handle ({@link MemoryChannel#encodeDeviceHandle})
     * can use such memory.
     *
     * <h2>Checks</h2>
     * Every offset, index and size is checked against the registered sizes of the memories before
     * any byte moves: an access outside them, a thread id outside {@code [0, numThreads)}, a
     * misaligned packet offset or packet flag 0 is {@link ErrorCode#INVALID_USAGE} naming the
     * peer, and the memories stay as they were. Memory closed while a verb runs ends it with
     * {@link ErrorCode#INVALID_USAGE} too, never with an access to unmapped memory.
     *
     * <h2>Thread groups</h2>
     * The overloads with {@code threadId} and {@code numThreads} are MSCCL++'s collective calls:
     * each of {@code numThreads} threads calls the verb with the same range and its own id, and
     * does its share; together they do the whole range. The shares here are contiguous, in thread
     * order, and cut at whole 64-byte blocks (of the bytes copied; of the packets, for the packet
     * verbs), so no two threads write one cache line: on a CPU, threads interleaving 16-byte
     * elements as GPU threads do would keep stealing each other's cache lines. The split depends
     * only on the range and the group size, so a thread that filled (or will check) exactly its
     * share of the data, on both ranks alike, needs no barrier around the packet verbs. As on a GPU, the verb orders nothing between the threads: join
     * them (or meet at a barrier) before one of them signals that the whole range is there.
     *
     * <h2>Memory order</h2>
     * {@code put} and {@code get} are plain copies, ordered for the peer by {@link #signal()}
     * (release) and {@link #await(Duration)} (acquire). The {@code read}/{@code write} verbs are
     * opaque, like the volatile loads and stores of device code: atomic, never hoisted out of a
     * loop, unordered with other accesses. Packets carry their own flags ({@link LL16Packet},
     * {@link LL8Packet}) and need no semaphore.
     */
    public static final class DeviceHandle {

        private static final VarHandle INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN).varHandle();
        /** Copy shares are cut at this many bytes: a cache line. */
        private static final int COPY_UNIT = 64;

        private final MemoryDevice2DeviceSemaphore.DeviceHandle semaphore;
        private final @Nullable MemorySegment dst;
        private final @Nullable MemorySegment src;
        private final @Nullable MemorySegment packets;
        private final long dstSize;
        private final long srcSize;
        /** Size of this rank's packet buffer; 0 when the channel has none (a registered memory has at least 1 byte). */
        private final long packetSize;
        private final ConnectionContext context;

        DeviceHandle(MemoryDevice2DeviceSemaphore.DeviceHandle semaphore, RegisteredMemory dst, RegisteredMemory src,
                     @Nullable RegisteredMemory packetBuffer, ConnectionContext context) {
            this.semaphore = semaphore;
            this.dst = hostView(dst.buffer());
            this.src = hostView(src.buffer());
            this.packets = packetBuffer == null ? null : hostView(packetBuffer.buffer());
            this.dstSize = dst.size();
            this.srcSize = src.size();
            this.packetSize = packetBuffer == null ? 0 : packetBuffer.size();
            this.context = context;
        }

        private static @Nullable MemorySegment hostView(DeviceBuffer buffer) {
            return buffer.hostAccessible() ? buffer.hostSegment() : null;
        }

        // --------------------------------------------------------------------------------------
        // copies

        /** Copies {@code bytes} from {@code src + originOffset} to the peer's {@code dst + targetOffset}. */
        public void put(long targetOffset, long originOffset, long bytes) {
            put(targetOffset, originOffset, bytes, 0, 1);
        }

        /** {@link #put(long, long, long)} with the same offset on both sides. */
        public void put(long offset, long bytes) {
            put(offset, offset, bytes, 0, 1);
        }

        /** This thread's share of {@link #put(long, long, long)}, as thread {@code threadId} of {@code numThreads}. */
        public void put(long targetOffset, long originOffset, long bytes, int threadId, int numThreads) {
            String phase = "memory channel put";
            checkGroup(threadId, numThreads, phase);
            Packets.checkRange(targetOffset, bytes, dstSize, "the peer's memory (dst)", context, phase);
            Packets.checkRange(originOffset, bytes, srcSize, "this rank's memory (src)", context, phase);
            copy(view(src, "src", phase), originOffset, view(dst, "dst", phase), targetOffset, bytes, threadId,
                    numThreads, phase);
        }

        /** {@link #put(long, long, long, int, int)} with the same offset on both sides. */
        public void put(long offset, long bytes, int threadId, int numThreads) {
            put(offset, offset, bytes, threadId, numThreads);
        }

        /** Copies {@code bytes} from the peer's {@code dst + targetOffset} to {@code src + originOffset}. */
        public void get(long targetOffset, long originOffset, long bytes) {
            get(targetOffset, originOffset, bytes, 0, 1);
        }

        /** {@link #get(long, long, long)} with the same offset on both sides. */
        public void get(long offset, long bytes) {
            get(offset, offset, bytes, 0, 1);
        }

        /** This thread's share of {@link #get(long, long, long)}, as thread {@code threadId} of {@code numThreads}. */
        public void get(long targetOffset, long originOffset, long bytes, int threadId, int numThreads) {
            String phase = "memory channel get";
            checkGroup(threadId, numThreads, phase);
            Packets.checkRange(targetOffset, bytes, dstSize, "the peer's memory (dst)", context, phase);
            Packets.checkRange(originOffset, bytes, srcSize, "this rank's memory (src)", context, phase);
            copy(view(dst, "dst", phase), targetOffset, view(src, "src", phase), originOffset, bytes, threadId,
                    numThreads, phase);
        }

        /** {@link #get(long, long, long, int, int)} with the same offset on both sides. */
        public void get(long offset, long bytes, int threadId, int numThreads) {
            get(offset, offset, bytes, threadId, numThreads);
        }

        private void copy(MemorySegment from, long fromOffset, MemorySegment to, long toOffset, long bytes, int threadId,
                          int numThreads, String phase) {
            long first = shareStart(bytes, COPY_UNIT, threadId, numThreads);
            long end = shareStart(bytes, COPY_UNIT, threadId + 1, numThreads);
            try {
                MemorySegment.copy(from, fromOffset + first, to, toOffset + first, end - first);
            } catch (IllegalStateException e) {
                throw Packets.closed(context, phase, e);
            }
        }

        // --------------------------------------------------------------------------------------
        // single values

        /** Loads the {@code index}-th 4-byte value of the peer's memory (byte offset {@code 4 * index}), opaque. */
        public int readInt(long index) {
            String phase = "memory channel readInt";
            long offset = element(index, Integer.BYTES, phase);
            try {
                return (int) INT.getOpaque(view(dst, "dst", phase), offset);
            } catch (IllegalStateException e) {
                throw Packets.closed(context, phase, e);
            }
        }

        /** Stores {@code value} as the {@code index}-th 4-byte value of the peer's memory, opaque. */
        public void writeInt(long index, int value) {
            String phase = "memory channel writeInt";
            long offset = element(index, Integer.BYTES, phase);
            try {
                INT.setOpaque(view(dst, "dst", phase), offset, value);
            } catch (IllegalStateException e) {
                throw Packets.closed(context, phase, e);
            }
        }

        /** Loads the {@code index}-th 8-byte value of the peer's memory (byte offset {@code 8 * index}), opaque. */
        public long readLong(long index) {
            String phase = "memory channel readLong";
            long offset = element(index, Long.BYTES, phase);
            try {
                return (long) Packets.WORD.getOpaque(view(dst, "dst", phase), offset);
            } catch (IllegalStateException e) {
                throw Packets.closed(context, phase, e);
            }
        }

        /** Stores {@code value} as the {@code index}-th 8-byte value of the peer's memory, opaque. */
        public void writeLong(long index, long value) {
            String phase = "memory channel writeLong";
            long offset = element(index, Long.BYTES, phase);
            try {
                Packets.WORD.setOpaque(view(dst, "dst", phase), offset, value);
            } catch (IllegalStateException e) {
                throw Packets.closed(context, phase, e);
            }
        }

        private long element(long index, int width, String phase) {
            if (index < 0 || index >= dstSize / width) {
                throw Packets.invalid(context, phase, "index " + index + " of a " + width + "-byte value is outside the "
                        + "peer's memory (dst) of " + dstSize + " bytes");
            }
            return index * width;
        }

        // --------------------------------------------------------------------------------------
        // semaphore

        /** Raises the peer's inbound token by one with release semantics: this thread's earlier stores are visible first. */
        public void signal() {
            semaphore.signal();
        }

        /** Raises the peer's inbound token by one; see {@link MemoryDevice2DeviceSemaphore.DeviceHandle#relaxedSignal()}. */
        public void relaxedSignal() {
            semaphore.relaxedSignal();
        }

        /**
         * Blocks until the peer's next signal has arrived (acquire) and consumes it.
         *
         * @throws JmscclppException {@link ErrorCode#TIMEOUT} naming the peer after {@code timeout}
         */
        public void await(Duration timeout) {
            semaphore.await(timeout);
        }

        /** {@link #await(Duration)} without ordering the loads that follow. */
        public void awaitRelaxed(Duration timeout) {
            semaphore.awaitRelaxed(timeout);
        }

        /** Consumes one signal if one has arrived that was not consumed yet; never blocks. */
        public boolean poll() {
            return semaphore.poll();
        }

        // --------------------------------------------------------------------------------------
        // packets

        /**
         * Packs {@code bytes} of {@code src} from {@code originOffset} into {@link LL16Packet}s with
         * {@code flag} and writes them into the peer's memory ({@code dst}, the peer's packet
         * buffer) at {@code targetOffset}: {@code 2 * bytes} bytes of packets. {@code bytes} and
         * {@code originOffset} are multiples of 8, {@code targetOffset} of 16; {@code flag} is not 0.
         */
        public void putPackets(long targetOffset, long originOffset, long bytes, int flag) {
            putPackets(true, targetOffset, originOffset, bytes, 0, 1, flag);
        }

        /** This thread's share of {@link #putPackets(long, long, long, int)}. */
        public void putPackets(long targetOffset, long originOffset, long bytes, int threadId, int numThreads, int flag) {
            putPackets(true, targetOffset, originOffset, bytes, threadId, numThreads, flag);
        }

        /**
         * {@link #putPackets(long, long, long, int)} with {@link LL8Packet}s: {@code bytes} and
         * {@code originOffset} multiples of 4, {@code targetOffset} of 8.
         */
        public void putLL8Packets(long targetOffset, long originOffset, long bytes, int flag) {
            putPackets(false, targetOffset, originOffset, bytes, 0, 1, flag);
        }

        /** This thread's share of {@link #putLL8Packets(long, long, long, int)}. */
        public void putLL8Packets(long targetOffset, long originOffset, long bytes, int threadId, int numThreads,
                                  int flag) {
            putPackets(false, targetOffset, originOffset, bytes, threadId, numThreads, flag);
        }

        /**
         * Waits for the {@link LL16Packet}s at {@code targetOffset} of this rank's packet buffer to
         * carry {@code flag} and unpacks their {@code bytes} of payload into {@code src} at
         * {@code originOffset}, packet by packet: spins, then parks with a growing delay while a
         * packet has not arrived. {@code timeout} bounds the whole call. Alignment as for
         * {@link #putPackets(long, long, long, int)}.
         *
         * @throws JmscclppException {@link ErrorCode#TIMEOUT} naming the peer and the first packet
         *                           that did not arrive (those before it are unpacked);
         *                           {@link ErrorCode#INVALID_USAGE} when the channel has no packet buffer
         */
        public void unpackPackets(long targetOffset, long originOffset, long bytes, int flag, Duration timeout) {
            unpackPackets(true, targetOffset, originOffset, bytes, 0, 1, flag, timeout);
        }

        /** This thread's share of {@link #unpackPackets(long, long, long, int, Duration)}. */
        public void unpackPackets(long targetOffset, long originOffset, long bytes, int threadId, int numThreads,
                                  int flag, Duration timeout) {
            unpackPackets(true, targetOffset, originOffset, bytes, threadId, numThreads, flag, timeout);
        }

        /** {@link #unpackPackets(long, long, long, int, Duration)} with {@link LL8Packet}s. */
        public void unpackLL8Packets(long targetOffset, long originOffset, long bytes, int flag, Duration timeout) {
            unpackPackets(false, targetOffset, originOffset, bytes, 0, 1, flag, timeout);
        }

        /** This thread's share of {@link #unpackLL8Packets(long, long, long, int, Duration)}. */
        public void unpackLL8Packets(long targetOffset, long originOffset, long bytes, int threadId, int numThreads,
                                     int flag, Duration timeout) {
            unpackPackets(false, targetOffset, originOffset, bytes, threadId, numThreads, flag, timeout);
        }

        private void putPackets(boolean ll16, long targetOffset, long originOffset, long bytes, int threadId,
                                int numThreads, int flag) {
            String phase = ll16 ? "memory channel putPackets" : "memory channel putLL8Packets";
            PacketFormat format = ll16 ? LL16Packet.FORMAT : LL8Packet.FORMAT;
            int packetBytes = format.packetBytes;
            int payloadBytes = format.payloadBytes;
            checkPacketCall(threadId, numThreads, flag, targetOffset, originOffset, bytes, packetBytes, payloadBytes,
                    phase);
            Packets.checkRange(originOffset, bytes, srcSize, "this rank's memory (src)", context, phase);
            Packets.checkRange(targetOffset, 2 * bytes, dstSize, "the peer's memory (dst)", context, phase);
            MemorySegment to = view(dst, "dst", phase);
            MemorySegment from = view(src, "src", phase);
            Packets.checkAligned(to, targetOffset, packetBytes, context, phase);
            long count = bytes / payloadBytes;
            long unit = COPY_UNIT / packetBytes;
            long first = shareStart(count, unit, threadId, numThreads);
            long end = shareStart(count, unit, threadId + 1, numThreads);
            long at = targetOffset + first * packetBytes;
            long origin = originOffset + first * payloadBytes;
            try {
                format.pack(to, at, from, origin, end - first, flag);
            } catch (IllegalStateException e) {
                throw Packets.closed(context, phase, e);
            }
        }

        private void unpackPackets(boolean ll16, long targetOffset, long originOffset, long bytes, int threadId,
                                   int numThreads, int flag, Duration timeout) {
            String phase = ll16 ? "memory channel unpackPackets" : "memory channel unpackLL8Packets";
            long deadline = Waiting.deadline(timeout);
            PacketFormat format = ll16 ? LL16Packet.FORMAT : LL8Packet.FORMAT;
            int packetBytes = format.packetBytes;
            int payloadBytes = format.payloadBytes;
            if (packetSize == 0) {
                throw Packets.invalid(context, phase, "this channel has no packet buffer to unpack from");
            }
            checkPacketCall(threadId, numThreads, flag, targetOffset, originOffset, bytes, packetBytes, payloadBytes,
                    phase);
            Packets.checkRange(targetOffset, 2 * bytes, packetSize, "this rank's packet buffer", context, phase);
            Packets.checkRange(originOffset, bytes, srcSize, "this rank's memory (src)", context, phase);
            MemorySegment from = view(packets, "the packet buffer", phase);
            MemorySegment to = view(src, "src", phase);
            Packets.checkAligned(from, targetOffset, packetBytes, context, phase);
            long count = bytes / payloadBytes;
            long unit = COPY_UNIT / packetBytes;
            long first = shareStart(count, unit, threadId, numThreads);
            long end = shareStart(count, unit, threadId + 1, numThreads);
            long at = targetOffset + first * packetBytes;
            try {
                long done = format.unpack(from, at, to, originOffset + first * payloadBytes, end - first, flag, deadline);
                if (done < end - first) {
                    long missing = at + done * packetBytes;
                    throw Packets.timeout(context, phase, first + done, missing, format.flags(from, missing), flag,
                            timeout);
                }
            } catch (IllegalStateException e) {
                throw Packets.closed(context, phase, e);
            }
        }

        private void checkPacketCall(int threadId, int numThreads, int flag, long targetOffset, long originOffset,
                                     long bytes, int packetBytes, int payloadBytes, String phase) {
            checkGroup(threadId, numThreads, phase);
            Packets.checkFlag(flag, context, phase);
            Packets.checkMultiple(bytes, payloadBytes, "payload size", context, phase);
            Packets.checkMultiple(originOffset, payloadBytes, "origin offset", context, phase);
            Packets.checkMultiple(targetOffset, packetBytes, "target offset", context, phase);
            if (bytes < 0 || bytes > Long.MAX_VALUE / 2) {
                throw Packets.invalid(context, phase, "payload size " + bytes + " is out of range");
            }
        }

        // --------------------------------------------------------------------------------------

        private void checkGroup(int threadId, int numThreads, String phase) {
            if (numThreads < 1 || threadId < 0 || threadId >= numThreads) {
                throw Packets.invalid(context, phase, "thread " + threadId + " of " + numThreads + ": a thread group "
                        + "has at least one thread, and ids from 0 to numThreads - 1");
            }
        }

        private MemorySegment view(@Nullable MemorySegment segment, String which, String phase) {
            if (segment == null) {
                throw Packets.invalid(context, phase, which + " is device memory that the host cannot reach: only GPU "
                        + "code can use this handle for it");
            }
            return segment;
        }

        @Override
        public String toString() {
            return "MemoryChannel.DeviceHandle[" + context + ", dst " + dstSize + " bytes, src " + srcSize + " bytes"
                    + (packetSize > 0 ? ", packets " + packetSize + " bytes" : "") + "]";
        }
    }
}
