package org.jmscclpp.samples;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * The one place where (collective, backend, algorithm) names are bound to implementations; the
 * samples' {@code --algo} and {@code jmscclpp bench coll} look them up here. The first algorithm
 * registered for a (kind, backend) is its default.
 */
final class CollectiveAlgorithms {

    /** An implementation: {@code backend} is a backend's {@code name()} ({@code host}, {@code cuda}). */
    record Entry(CollectiveKind kind, String backend, String algorithm, String synopsis,
                 Function<CollectiveSetup, Collective> factory) {
    }

    private static final List<Entry> ALL = new ArrayList<>();

    static {
        add(CollectiveKind.ALLREDUCE, "host", "auto", "ll16 up to 64 KiB, rsag above",
                s -> new HostAllReduce(s, HostAllReduce.Mode.AUTO));
        add(CollectiveKind.ALLREDUCE, "host", "ll16", "LL16 packets to every peer, summed locally (memory channels)",
                s -> new HostAllReduce(s, HostAllReduce.Mode.LL16));
        add(CollectiveKind.ALLREDUCE, "host", "rsag", "reduce-scatter by get, allgather by put (memory channels)",
                s -> new HostAllReduce(s, HostAllReduce.Mode.RSAG));
        add(CollectiveKind.ALLGATHER, "host", "memory", "put into every peer, signal, wait (memory channels)",
                HostMemoryAllGather::new);
        add(CollectiveKind.ALLGATHER, "host", "port", "putWithSignal, flush, wait (port channels, own proxy)",
                s -> new HostPortCollective(s, CollectiveKind.ALLGATHER));
        add(CollectiveKind.ALLTOALL, "host", "port", "putWithSignal, flush, wait (port channels, own proxy)",
                s -> new HostPortCollective(s, CollectiveKind.ALLTOALL));
        add(CollectiveKind.SENDRECV, "host", "port", "putWithSignal to rank+1, wait for rank-1 (port channels)",
                s -> new HostPortCollective(s, CollectiveKind.SENDRECV));
        add(CollectiveKind.ALLGATHER, "cuda", CudaMemoryCollective.ALGORITHM, "MemoryChannel: 16-byte stores into every"
                + " peer's output from many blocks, then signal and wait per block", CudaMemoryCollective::allGather);
        add(CollectiveKind.ALLGATHER, "cuda", CudaPortCollective.ALGORITHM, "PortChannel: one thread per peer puts "
                + "with a signal through the proxy, waits, flushes", CudaPortCollective::allGather);
        add(CollectiveKind.ALLTOALL, "cuda", CudaMemoryCollective.ALGORITHM, "MemoryChannel: chunk p stored into slot "
                + "rank of peer p's output, then signal and wait per block", CudaMemoryCollective::allToAll);
        add(CollectiveKind.ALLTOALL, "cuda", CudaPortCollective.ALGORITHM, "PortChannel localAlltoall: chunk p to slot"
                + " rank of peer p by putWithSignal, own chunk by a device copy", CudaPortCollective::allToAll);
        add(CollectiveKind.SENDRECV, "cuda", CudaMemoryCollective.ALGORITHM, "MemoryChannel: stores into rank+1's "
                + "output, signal per block, wait for rank-1's blocks", CudaMemoryCollective::sendRecv);
        add(CollectiveKind.SENDRECV, "cuda", CudaPortCollective.ALGORITHM, "PortChannel: putWithSignal to rank+1, wait"
                + " for rank-1, flush", CudaPortCollective::sendRecv);
        add(CollectiveKind.ALLREDUCE, "cuda", "auto", "ll16 up to "
                + ByteSizes.label(CudaAllReduce.DEFAULT_LL_MAX_BYTES) + " (-D" + CudaAllReduce.THRESHOLD_PROPERTY
                + "), rsag above",
                s -> CudaAllReduce.create(s, CudaAllReduce.Variant.AUTO));
        add(CollectiveKind.ALLREDUCE, "cuda", "ll16", "one-shot LL16 packets into every peer's scratch"
                + " (up to " + ByteSizes.label(CudaAllReduce.LL16_MAX_SIZE) + ")",
                s -> CudaAllReduce.create(s, CudaAllReduce.Variant.LL16));
        add(CollectiveKind.ALLREDUCE, "cuda", "rsag", "MemoryChannel reduce-scatter + allgather over"
                + " NVLink loads and stores", s -> CudaAllReduce.create(s, CudaAllReduce.Variant.RSAG));
    }

    private CollectiveAlgorithms() {
    }

    private static void add(CollectiveKind kind, String backend, String algorithm, String synopsis,
                            Function<CollectiveSetup, Collective> factory) {
        ALL.add(new Entry(kind, backend, algorithm, synopsis, factory));
    }

    /**
     * Adds an implementation after those of the table above: tests register theirs here (in every
     * rank process, before it looks one up).
     */
    static synchronized void add(Entry e) {
        ALL.add(e);
    }

    static Optional<Entry> find(CollectiveKind kind, String backend, String algorithm) {
        return ALL.stream().filter(e -> e.kind() == kind && e.backend().equals(backend)
                && e.algorithm().equals(algorithm)).findFirst();
    }

    /** Every implementation of {@code kind} on {@code backend}, default first. */
    static List<Entry> of(CollectiveKind kind, String backend) {
        return ALL.stream().filter(e -> e.kind() == kind && e.backend().equals(backend)).toList();
    }
}
