package org.jmscclpp.samples;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.LL16Packet;
import org.jmscclpp.core.MemoryChannel;
import org.jmscclpp.core.RegisteredMemory;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * Allreduce (sum) on the host backend, with the channel verbs GPU kernels use, played by the
 * calling thread:
 * <ul>
 *   <li>{@code ll16}: every rank packs its data into {@link LL16Packet}s and puts them into every
 *       peer's packet scratch ({@link MemoryChannel.DeviceHandle#putPackets}), then unpacks every
 *       peer's packets ({@code unpackPackets}) and sums them onto its own. Data goes in chunks of
 *       {@value #LL16_CHUNK} bytes, each with a flag one above the last (kept across runs): chunks
 *       alternate between two halves of the scratch, and a rank writes a half again only after it
 *       received the next chunk from every peer, which each peer sent after it had unpacked that
 *       half; so no semaphore is needed, and nobody touches another rank's output.</li>
 *   <li>{@code rsag}: after a ready round (signal and wait on every peer), rank r owns slice r of
 *       the elements: it reads slice r of every peer's input through the memory channel
 *       ({@code get}), sums it onto its own, writes the reduced slice into every peer's output
 *       ({@code put}), signals, and waits for every peer's signal. In place, slice r of a peer's
 *       buffer is read and then written by rank r alone, so the phases need no barrier between
 *       them.</li>
 *   <li>{@code auto}: {@code ll16} up to {@value #AUTO_LL16_LIMIT} bytes, {@code rsag} above.</li>
 * </ul>
 */
final class HostAllReduce extends HostCollective {

    enum Mode { LL16, RSAG, AUTO }

    static final int LL16_CHUNK = 1 << 16;
    static final long AUTO_LL16_LIMIT = 1 << 16;

    private final Mode mode;
    private final List<Integer> peers;
    // ll16
    private final List<MemoryChannel.DeviceHandle> sendFromInput = new ArrayList<>();
    private final List<MemoryChannel.DeviceHandle> sendFromOutput = new ArrayList<>();
    private final List<MemoryChannel.DeviceHandle> receive = new ArrayList<>();
    private @Nullable DeviceBuffer unpacked;
    private int flag;
    // rsag
    private final List<MemoryChannel.DeviceHandle> getInput = new ArrayList<>();
    private final List<MemoryChannel.DeviceHandle> getOutput = new ArrayList<>();
    private final List<MemoryChannel.DeviceHandle> putOutput = new ArrayList<>();
    private @Nullable DeviceBuffer scratch;
    private long scratchSlot;

    HostAllReduce(CollectiveSetup setup, Mode mode) {
        super(setup, CollectiveKind.ALLREDUCE, mode.name().toLowerCase(java.util.Locale.ROOT), "allreduce");
        this.mode = mode;
        this.peers = links.peers();
        int n = links.n;
        long maxSize = setup.maxSize();
        try {
            RegisteredMemory in = own(links.register(input()));
            RegisteredMemory out = own(links.register(output()));
            boolean ll16 = mode != Mode.RSAG;
            boolean rsag = mode != Mode.LL16;
            RegisteredMemory packets = null;
            RegisteredMemory unpackedMemory = null;
            if (ll16) {
                long chunk = Math.min(LL16_CHUNK, (maxSize + 7) & ~7L);
                unpacked = own(links.allocate(chunk * n));
                unpackedMemory = own(links.register(unpacked));
                packets = own(links.register(own(links.allocate(2L * n * LL16Packet.bufferBytes(chunk)))));
            }
            RegisteredMemory scratchMemory = null;
            if (rsag) {
                scratchSlot = (maxSize / n + 8 + 15) & ~15L;
                scratch = own(links.allocate(scratchSlot * Math.max(1, n - 1)));
                scratchMemory = own(links.register(scratch));
            }
            RegisteredMemory p = packets;
            RegisteredMemory u = unpackedMemory;
            RegisteredMemory s = scratchMemory;
            Map<Integer, List<MemoryChannel>> channels = links.perPeer(peers, peer -> links.connect(peer)
                    .flatMap(c -> {
                        Mono<List<MemoryChannel>> none = Mono.just(List.of());
                        Mono<List<MemoryChannel>> l = ll16 ? links.memoryChannel(c, p, in, p).map(List::of) : none;
                        return l.flatMap(first -> (rsag ? links.memoryChannel(c, in, s)
                                .flatMap(g -> links.memoryChannel(c, out, out).map(o -> List.of(g, o))) : none)
                                .map(second -> {
                                    List<MemoryChannel> all = new ArrayList<>(first);
                                    all.addAll(second);
                                    return all;
                                }));
                    }), "allreduce setup");
            for (int peer : peers) {
                List<MemoryChannel> ch = channels.get(peer);
                int at = 0;
                if (ll16) {
                    MemoryChannel built = ch.get(at++);
                    sendFromInput.add(built.deviceHandle());
                    sendFromOutput.add(new MemoryChannel(built.semaphore(), built.dst(), out, p).deviceHandle());
                    receive.add(new MemoryChannel(built.semaphore(), built.dst(), u, p).deviceHandle());
                }
                if (rsag) {
                    MemoryChannel fromInput = ch.get(at++);
                    MemoryChannel toOutput = ch.get(at);
                    getInput.add(fromInput.deviceHandle());
                    putOutput.add(toOutput.deviceHandle());
                    getOutput.add(new MemoryChannel(toOutput.semaphore(), toOutput.dst(), s, null).deviceHandle());
                }
            }
        } catch (RuntimeException e) {
            throw failed(e);
        }
    }

    @Override
    public void enqueue(long count, DataType type, boolean inPlace) {
        links.checkRun(this, count, type, inPlace);
        if (count == 0) {
            return;
        }
        boolean packets = mode == Mode.LL16 || (mode == Mode.AUTO && count * type.bytes() <= AUTO_LL16_LIMIT);
        if (packets) {
            ll16(count, type, inPlace);
        } else {
            rsag(count, type, inPlace);
        }
    }

    private void ll16(long count, DataType type, boolean inPlace) {
        int n = links.n;
        int w = type.bytes();
        long total = count * w;
        long chunk = Math.min(LL16_CHUNK, (maxSize() + 7) & ~7L);
        long region = LL16Packet.bufferBytes(chunk);
        Duration timeout = links.timeout;
        MemorySegment out = output().hostSegment();
        MemorySegment received = java.util.Objects.requireNonNull(unpacked).hostSegment();
        List<MemoryChannel.DeviceHandle> send = inPlace ? sendFromOutput : sendFromInput;
        for (long off = 0; off < total; off += chunk) {
            long len = Math.min(chunk, total - off);
            long padded = (len + 7) & ~7L;
            int f = nextFlag();
            int half = f & 1;
            for (int i = 0; i < peers.size(); i++) {
                send.get(i).putPackets((half * (long) n + links.rank) * region, off, padded, f);
            }
            if (!inPlace) {
                links.backend.copy(output(), off, input(), off, len);
            }
            for (int i = 0; i < peers.size(); i++) {
                int peer = peers.get(i);
                receive.get(i).unpackPackets((half * (long) n + peer) * region, i * chunk, padded, f, timeout);
                HostReduce.accumulate(type, out, off, received, i * chunk, len / w);
            }
        }
    }

    /** The next packet flag: one above the last, never 0. */
    private int nextFlag() {
        flag++;
        if (flag == 0) {
            flag = 1;
        }
        return flag;
    }

    private void rsag(long count, DataType type, boolean inPlace) {
        int n = links.n;
        int r = links.rank;
        int w = type.bytes();
        long lo = count * r / n;
        long hi = count * (r + 1) / n;
        long offset = lo * w;
        long bytes = (hi - lo) * w;
        Duration timeout = links.timeout;
        HostLinks.ready(putOutput, timeout);
        if (!inPlace && bytes > 0) {
            links.backend.copy(output(), offset, input(), offset, bytes);
        }
        MemorySegment out = output().hostSegment();
        MemorySegment gathered = java.util.Objects.requireNonNull(scratch).hostSegment();
        List<MemoryChannel.DeviceHandle> get = inPlace ? getOutput : getInput;
        for (int i = 0; i < peers.size(); i++) {
            if (bytes > 0) {
                get.get(i).get(offset, i * scratchSlot, bytes);
                HostReduce.accumulate(type, out, offset, gathered, i * scratchSlot, hi - lo);
            }
        }
        for (MemoryChannel.DeviceHandle h : putOutput) {
            if (bytes > 0) {
                h.put(offset, offset, bytes);
            }
            h.signal();
        }
        for (MemoryChannel.DeviceHandle h : putOutput) {
            h.wait(timeout);
        }
    }

}
