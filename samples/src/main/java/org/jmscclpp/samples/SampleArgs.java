package org.jmscclpp.samples;

import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * Reading a sample's {@code --option value} pairs: each reader returns the value or throws the
 * sample's usage error ({@link ErrorCode#INVALID_USAGE} naming the sample and the option), which
 * the command line prints and turns into exit code {@value ExitCodes#USAGE}. The static
 * {@link #count(String, String, int, int)} and {@link #usage(String, String)} are what the
 * benchmarks' option parsers ({@code org.jmscclpp.bench.BenchArgs}) build on.
 */
public final class SampleArgs {

    private final String sample;
    private final List<String> args;

    SampleArgs(String sample, List<String> args) {
        this.sample = sample;
        this.args = List.copyOf(args);
    }

    /** The arguments' count; options are at even indexes. */
    int size() {
        return args.size();
    }

    /** The option at {@code i}. */
    String option(int i) {
        return args.get(i);
    }

    /** The value of the option at {@code i}; a usage error when it is the last argument. */
    String value(int i) {
        if (i + 1 >= args.size()) {
            throw usage(args.get(i) + " needs a value");
        }
        return args.get(i + 1);
    }

    /**
     * The value of the option at {@code i} as a count from {@code least} to {@code most}: digits
     * with an optional suffix K, M or G (powers of 1024: {@code 1M} is 1048576).
     */
    long count(int i, long least, long most) {
        String opt = args.get(i);
        String v = value(i);
        long x = ByteSizes.scaled(v);
        if (x >= 0 && x >= least && x <= most) {
            return x;
        }
        throw usage(opt + " needs a count from " + least + " to " + most + " (K, M, G: powers of 1024), got '" + v
                + "'");
    }

    /** The value of the option at {@code i} as an int from {@code least} to {@code most}. */
    int integer(int i, int least, int most) {
        return Math.toIntExact(count(i, least, most));
    }

    /** The value of the option at {@code i} as any 64-bit integer (decimal, or hexadecimal after {@code 0x}). */
    long word(int i) {
        String v = value(i).strip();
        try {
            return v.startsWith("0x") || v.startsWith("0X") ? Long.parseUnsignedLong(v.substring(2), 16)
                    : Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw usage(args.get(i) + " needs a 64-bit integer, got '" + v + "'");
        }
    }

    /** The value of the option at {@code i}, which must be one of {@code choices}. */
    String choice(int i, List<String> choices) {
        String v = value(i);
        if (!choices.contains(v)) {
            throw usage(args.get(i) + " is one of " + String.join(", ", choices) + ", got '" + v + "'");
        }
        return v;
    }

    /** The sample's usage error: {@link ErrorCode#INVALID_USAGE}, naming the sample. */
    JmscclppException usage(String detail) {
        return usage(sample, detail);
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
