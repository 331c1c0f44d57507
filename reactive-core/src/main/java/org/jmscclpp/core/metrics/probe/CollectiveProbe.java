package org.jmscclpp.core.metrics.probe;

import java.util.concurrent.atomic.LongAdder;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.metrics.CollectiveMetrics;

/** The figures of one rank, op, type and size bucket. Any thread. */
final class CollectiveProbe implements CollectiveMetrics {

    /** Buckets 0..10: at most 1 KiB << 2b; bucket 11: above 1 GiB. */
    static final int BUCKETS = 12;

    private final int rank;
    private final CollectiveKind op;
    private final DataType type;
    private final int bucket;
    final LongAdder calls = new LongAdder();
    final LongAdder bytes = new LongAdder();
    final LongAdder completed = new LongAdder();
    final LongAdder errors = new LongAdder();
    final LongAdder nanos = new LongAdder();

    CollectiveProbe(int rank, CollectiveKind op, DataType type, int bucket) {
        this.rank = rank;
        this.op = op;
        this.type = type;
        this.bucket = bucket;
    }

    /** The bucket of a call of {@code bytes}. */
    static int bucket(long bytes) {
        int b = 0;
        for (long bound = 1024; b < BUCKETS - 1 && bytes > bound; bound <<= 2) {
            b++;
        }
        return b;
    }

    static String bucketName(int bucket) {
        if (bucket >= BUCKETS - 1) {
            return "over1GiB";
        }
        long kib = 1L << (2 * bucket);
        return kib >= 1024 * 1024 ? kib / (1024 * 1024) + "GiB" : kib >= 1024 ? kib / 1024 + "MiB" : kib + "KiB";
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public CollectiveKind op() {
        return op;
    }

    @Override
    public DataType type() {
        return type;
    }

    @Override
    public String size() {
        return bucketName(bucket);
    }

    @Override
    public long calls() {
        return calls.sum();
    }

    @Override
    public long bytes() {
        return bytes.sum();
    }

    @Override
    public long completed() {
        return completed.sum();
    }

    @Override
    public long errors() {
        return errors.sum();
    }

    @Override
    public long nanos() {
        return nanos.sum();
    }

    @Override
    public String toString() {
        return "CollectiveMetrics[rank " + rank + ", " + op.label() + " " + type.label() + " " + size() + ": "
                + calls() + " calls]";
    }
}
