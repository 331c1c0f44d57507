package org.jmscclpp.core.metrics.probe;

import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * The collective probes one communicator feeds, found by op, type and bucket in an array (no map
 * look-up, no key object per call), and the timing of its calls.
 */
public final class CollectiveProbes {

    private static final int KINDS = CollectiveKind.values().length;
    private static final int TYPES = DataType.values().length;

    private final int rank;
    private final int ranks;
    private final AtomicReferenceArray<@Nullable CollectiveProbe> probes =
            new AtomicReferenceArray<>(KINDS * TYPES * CollectiveProbe.BUCKETS);

    CollectiveProbes(int rank, int ranks) {
        this.rank = rank;
        this.ranks = ranks;
    }

    /** Counts a call issued (its Mono, or its enqueue on a stream). */
    public void issued(CollectiveCall call) {
        long size = call.size(ranks);
        CollectiveProbe p = probe(call.kind(), call.type(), size);
        p.calls.increment();
        p.bytes.add(size);
    }

    /**
     * {@code run}, which runs {@code calls} (one call, or a group's), timed: each call counts as
     * completed (with the whole run's time) or failed, and becomes a {@link CollectiveEvent} while a
     * recording wants them.
     *
     * @param algorithms the algorithm names of the calls, in order
     */
    public Mono<Void> timed(Mono<Void> run, List<CollectiveCall> calls, List<String> algorithms, boolean group) {
        return new TimedMono(run, new TimedMono.Timing() {
            @Override
            public @Nullable Object start() {
                return Probes.JFR ? JfrEvents.beginCollectives(calls.size()) : null;
            }

            @Override
            public void end(@Nullable Object started, long nanos, @Nullable Throwable error) {
                for (int i = 0; i < calls.size(); i++) {
                    CollectiveCall call = calls.get(i);
                    long size = call.size(ranks);
                    CollectiveProbe p = probe(call.kind(), call.type(), size);
                    if (error == null) {
                        p.completed.increment();
                        p.nanos.add(nanos);
                    } else {
                        p.errors.increment();
                    }
                    if (started != null) {
                        JfrEvents.endCollective(started, i, rank, ranks, call, size, algorithms.get(i), group,
                                error == null);
                    }
                }
            }
        });
    }

    private CollectiveProbe probe(CollectiveKind kind, DataType type, long size) {
        int bucket = CollectiveProbe.bucket(size);
        int i = (kind.ordinal() * TYPES + type.ordinal()) * CollectiveProbe.BUCKETS + bucket;
        CollectiveProbe p = probes.getAcquire(i);
        if (p == null) {
            p = Probes.collectiveProbe(rank, kind, type, bucket);
            probes.setRelease(i, p);
        }
        return p;
    }
}
