package org.jmscclpp.bench;

import java.nio.ByteBuffer;
import java.util.Arrays;

/** Arithmetic of the benchmarks: slowest rank per iteration, medians, and the long[] exchange. */
public final class BenchStats {

    private BenchStats() {
    }

    /** Median of {@code values} (mean of the two middle values for an even count); the array is not changed. */
    public static double median(long[] values) {
        return median(Arrays.stream(values).asDoubleStream().toArray());
    }

    /** Median of {@code values} (mean of the two middle values for an even count); the array is not changed. */
    public static double median(double[] values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("median of nothing");
        }
        double[] s = values.clone();
        Arrays.sort(s);
        int mid = s.length / 2;
        return s.length % 2 == 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2.0;
    }

    /**
     * For each iteration {@code i} in {@code [0, count)}, the largest of {@code perRank[r][offset + i]}
     * over the ranks r (the slowest rank), then the median of those maxima.
     */
    public static double medianOfSlowest(long[][] perRank, int offset, int count) {
        long[] slowest = new long[count];
        for (int i = 0; i < count; i++) {
            long max = Long.MIN_VALUE;
            for (long[] rank : perRank) {
                max = Math.max(max, rank[offset + i]);
            }
            slowest[i] = max;
        }
        return median(slowest);
    }

    public static byte[] toBytes(long[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * Long.BYTES);
        b.asLongBuffer().put(values);
        return b.array();
    }

    /** Splits an allGather result of {@code nRanks} equal long[] contributions. */
    public static long[][] split(byte[] gathered, int nRanks) {
        int perRank = gathered.length / nRanks / Long.BYTES;
        if (perRank * Long.BYTES * nRanks != gathered.length) {
            throw new IllegalArgumentException(gathered.length + " bytes do not split into " + nRanks + " long arrays");
        }
        long[][] out = new long[nRanks][perRank];
        ByteBuffer b = ByteBuffer.wrap(gathered);
        for (int r = 0; r < nRanks; r++) {
            b.asLongBuffer().get(out[r]);
            b.position(b.position() + perRank * Long.BYTES);
        }
        return out;
    }
}
