package org.jmscclpp.samples;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * What the samples' option parsers share with the benchmarks' ({@code org.jmscclpp.bench.BenchArgs}
 * builds on it): numbers within bounds, and the error of a rank's bad arguments.
 */
public final class SampleArgs {

    private SampleArgs() {
    }

    /** {@code v} as an integer of at least {@code least}; otherwise an {@link IllegalArgumentException} naming {@code opt}. */
    public static int count(String opt, String v, int least) {
        return count(opt, v, least, Integer.MAX_VALUE);
    }

    /** {@code v} as an integer from {@code least} to {@code most}; otherwise an {@link IllegalArgumentException} naming {@code opt}. */
    public static int count(String opt, String v, int least, int most) {
        try {
            int x = Integer.parseInt(v);
            if (x >= least && x <= most) {
                return x;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(opt + " needs an integer " + (most == Integer.MAX_VALUE ? "of at least "
                + least : "from " + least + " to " + most) + ", got '" + v + "'");
    }

    /** The error of a rank sample's bad arguments: {@link ErrorCode#INVALID_USAGE}, naming the sample. */
    public static JmscclppException usage(String sample, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, sample + ": " + detail).phase("sample arguments")
                .build();
    }
}
