package org.jmscclpp.samples;

import org.jmscclpp.core.ByteCount;

/** Byte counts on the command line ({@code 4096}, {@code 4K}, {@code 256M}, {@code 1G}: powers of 1024) and in tables. */
public final class ByteSizes {

    private ByteSizes() {
    }

    /**
     * Parses a count of bytes in {@link ByteCount}'s syntax: digits with an optional binary suffix K,
     * M, G or T (upper or lower case, an optional trailing {@code B} or {@code iB}).
     *
     * @throws IllegalArgumentException naming {@code option} when it is not such a count or overflows
     */
    public static long parse(String option, String value) {
        long n = ByteCount.parse(value);
        if (n >= 0) {
            return n;
        }
        throw new IllegalArgumentException(option + " needs a byte count such as 4096, 4K, 256M or 1G, got '"
                + value + "'");
    }

    /**
     * Digits with an optional suffix K, M, G or T (upper or lower case; powers of 1024, {@code 1M}
     * is 1048576) and no byte unit: the count, or -1 when {@code value} is not such a count or it
     * overflows.
     */
    static long scaled(String value) {
        String v = value.strip();
        return v.endsWith("b") || v.endsWith("B") ? -1 : ByteCount.parse(v);
    }

    /** {@code 4 KiB}, {@code 256 MiB}, {@code 1 GiB} for exact multiples, else {@code 3000 B}. */
    public static String label(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + " MiB";
        }
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + " KiB";
        }
        return bytes + " B";
    }
}
