package org.jmscclpp.core;

import java.util.Locale;

/**
 * Byte counts as people write them in configuration: {@code 4096}, {@code 4K}, {@code 256M},
 * {@code 1G}, {@code 2T} (powers of 1024, either case, with an optional {@code B} or {@code iB}
 * after the unit: {@code 64KiB}, {@code 7B}). The one parser of every count jmscclpp reads from
 * the environment ({@code JMSCCLPP_SCRATCH_BYTES}), a tuning table or a command line; each caller
 * decides what it accepts beyond the syntax (0, say) and how it reports a value that is not one.
 */
public final class ByteCount {

    private static final String UNITS = "KMGT";

    private ByteCount() {
    }

    /**
     * The count {@code value} writes (surrounding white space ignored), or -1 when it is not such a
     * count: empty, a sign, other characters, or more than {@link Long#MAX_VALUE} bytes.
     */
    public static long parse(String value) {
        String v = value.strip().toUpperCase(Locale.ROOT);
        if (v.endsWith("IB")) {
            v = v.substring(0, v.length() - 2);
        } else if (v.endsWith("B")) {
            v = v.substring(0, v.length() - 1);
        }
        int shift = 0;
        if (!v.isEmpty()) {
            int unit = UNITS.indexOf(v.charAt(v.length() - 1));
            if (unit >= 0) {
                shift = 10 * (unit + 1);
                v = v.substring(0, v.length() - 1);
            }
        }
        if (v.isEmpty() || !v.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return -1;
        }
        try {
            long n = Long.parseLong(v);
            return n <= Long.MAX_VALUE >> shift ? n << shift : -1;
        } catch (NumberFormatException e) {
            return -1;   // more digits than a long holds
        }
    }
}
