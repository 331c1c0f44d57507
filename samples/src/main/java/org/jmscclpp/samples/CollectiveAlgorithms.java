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
    }

    private CollectiveAlgorithms() {
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
