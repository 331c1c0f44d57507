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
        // entries are added here, one line per implementation
        ALL.add(new Entry(CollectiveKind.ALLREDUCE, "cuda", "auto", "ll16 up to "
                + ByteSizes.label(CudaAllReduce.DEFAULT_LL_MAX_BYTES) + " (-D" + CudaAllReduce.THRESHOLD_PROPERTY
                + "), rsag above",
                s -> CudaAllReduce.create(s, CudaAllReduce.Variant.AUTO)));
        ALL.add(new Entry(CollectiveKind.ALLREDUCE, "cuda", "ll16", "one-shot LL16 packets into every peer's scratch"
                + " (up to " + ByteSizes.label(CudaAllReduce.LL16_MAX_SIZE) + ")",
                s -> CudaAllReduce.create(s, CudaAllReduce.Variant.LL16)));
        ALL.add(new Entry(CollectiveKind.ALLREDUCE, "cuda", "rsag", "MemoryChannel reduce-scatter + allgather over"
                + " NVLink loads and stores", s -> CudaAllReduce.create(s, CudaAllReduce.Variant.RSAG)));
    }

    private CollectiveAlgorithms() {
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
