package org.jmscclpp.samples;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The data set of the {@code shuffle} sample ({@link ShuffleSample}), defined so that any rank can
 * recompute any rank's records, and the check that a rank received exactly the records whose keys
 * hash to it.
 *
 * <h2>Records</h2>
 * Rank {@code q} holds {@code records} records; record {@code i} of rank {@code q} is
 * <pre>
 * offset  width  meaning
 *      0      8  key:   the i-th output of rank q's SplitMix64 stream, seeded from the job's seed and q
 *      8      8  value: q &lt;&lt; 40 | i (the record's origin: rank in the high 24 bits, index in the low 40)
 * </pre>
 * both little-endian int64, 16 bytes a record, records packed. A record belongs to rank
 * {@link #partition}{@code (key)}: the key hashed (SplitMix64's finalizer) modulo the rank count.
 *
 * @param seed    the job's seed
 * @param ranks   the ranks of the job
 * @param records the records of every rank, below 2^40
 */
record ShuffleDataSet(long seed, int ranks, long records) {

    static final int RECORD_BYTES = 16;
    static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Bits of a value that hold the record's index. */
    static final int INDEX_BITS = 40;
    private static final long INDEX_MASK = (1L << INDEX_BITS) - 1;
    /** SplitMix64's increment. */
    private static final long GAMMA = 0x9E3779B97F4A7C15L;
    /** How many problems a check describes; it counts them all. */
    static final int MAX_PROBLEMS = 5;

    ShuffleDataSet {
        if (ranks < 1 || ranks >= 1 << (Long.SIZE - 1 - INDEX_BITS)) {
            throw new IllegalArgumentException("ranks " + ranks);
        }
        if (records < 0 || records > INDEX_MASK) {
            throw new IllegalArgumentException("records " + records);
        }
    }

    /** SplitMix64's output function (Steele, Lea, Flood 2014): a bijection of 64-bit words that mixes every bit. */
    static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The key of record {@code index} of rank {@code origin}: SplitMix64 is counter-based, so any record is one call. */
    long key(int origin, long index) {
        long stream = mix64(seed ^ mix64(origin + 1L));
        return mix64(stream + (index + 1) * GAMMA);
    }

    static long value(int origin, long index) {
        return (long) origin << INDEX_BITS | index;
    }

    /** The rank {@code key} belongs to. */
    int partition(long key) {
        return (int) Long.remainderUnsigned(mix64(key), ranks);
    }

    /** A rank's verdict on what it received. */
    record Verdict(long expected, long received, long wrong, List<String> problems) {
        boolean ok() {
            return wrong == 0 && expected == received;
        }
    }

    /**
     * Checks that {@code received} (the first {@code count} records of it) is exactly the multiset
     * of the records of every rank whose keys hash to {@code rank}, element by element and in any
     * order: every received record must be a record of the data set (its value names an origin and
     * index whose key is the received key), hash to {@code rank} and come once; and as many must
     * come as the data set holds for {@code rank}. Since the values of the data set are distinct,
     * these together say the two multisets are equal. Counts every wrong record (a foreign,
     * corrupted or repeated one, and every one missing) and describes the first
     * {@value #MAX_PROBLEMS}.
     */
    Verdict check(MemorySegment received, long count, int rank) {
        List<String> problems = new ArrayList<>();
        long wrong = 0;
        long[][] seen = new long[ranks][];
        for (long j = 0; j < count; j++) {
            long key = received.get(WORD, j * RECORD_BYTES);
            long value = received.get(WORD, j * RECORD_BYTES + 8);
            long origin = value >>> INDEX_BITS;
            long index = value & INDEX_MASK;
            String problem = null;
            if (origin >= ranks || index >= records) {
                problem = "value " + hex(value) + " names no record of the data set";
            } else if (key(Math.toIntExact(origin), index) != key) {
                problem = "key " + hex(key) + " is not the key of rank " + origin + "'s record " + index + " ("
                        + hex(key(Math.toIntExact(origin), index)) + ")";
            } else if (partition(key) != rank) {
                problem = "key " + hex(key) + " (rank " + origin + "'s record " + index + ") belongs to rank "
                        + partition(key);
            } else {
                int q = Math.toIntExact(origin);
                if (seen[q] == null) {
                    seen[q] = new long[Math.toIntExact((records + 63) >>> 6)];
                }
                long bit = 1L << index;
                int word = Math.toIntExact(index >>> 6);
                if ((seen[q][word] & bit) != 0) {
                    problem = "rank " + origin + "'s record " + index + " came again";
                } else {
                    seen[q][word] |= bit;
                }
            }
            if (problem != null) {
                wrong++;
                if (problems.size() < MAX_PROBLEMS) {
                    problems.add("received record " + j + ": " + problem);
                }
            }
        }
        long expected = 0;
        for (int q = 0; q < ranks; q++) {
            for (long i = 0; i < records; i++) {
                if (partition(key(q, i)) != rank) {
                    continue;
                }
                expected++;
                if (seen[q] == null || (seen[q][(int) (i >>> 6)] & (1L << i)) == 0) {
                    wrong++;
                    if (problems.size() < MAX_PROBLEMS) {
                        problems.add("rank " + q + "'s record " + i + " (key " + hex(key(q, i)) + ") is missing");
                    }
                }
            }
        }
        return new Verdict(expected, count, wrong, List.copyOf(problems));
    }

    private static String hex(long v) {
        return String.format(Locale.ROOT, "0x%016x", v);
    }
}
