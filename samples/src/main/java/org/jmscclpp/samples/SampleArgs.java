package org.jmscclpp.samples;

import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.TypeConversionException;

/**
 * Reading the options of a sample or a benchmark with picocli: each one declares them as an
 * annotated class ({@code @Option} fields with their defaults), which {@link #parse} fills from the
 * arguments ({@code --opt value} and {@code --opt=value} alike) and then {@linkplain Checked checks}.
 * A bad argument is an {@link IllegalArgumentException} naming the option (the benchmarks print it
 * with their usage) or, for a sample, {@link ErrorCode#INVALID_USAGE} naming the sample, which the
 * command line turns into exit code {@value ExitCodes#USAGE}. The command line builds its
 * {@code --help} from the same classes ({@link Sample#options()}).
 */
public final class SampleArgs {

    private SampleArgs() {
    }

    /** An options class whose values are checked together once picocli has filled it. */
    public interface Checked {

        /**
         * Checks the values picocli set.
         *
         * @throws IllegalArgumentException naming the option that is wrong
         */
        void check();
    }

    /** The options of a sample that takes none. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class)
    public static final class None {
    }

    /** A picocli command line over {@code options} as every jmscclpp command configures it. */
    public static CommandLine commandLine(Object options) {
        return new CommandLine(options)
                // nccl-tests' habit: a later -n overrides an earlier one
                .setOverwrittenOptionsAllowed(true)
                .setCaseInsensitiveEnumValuesAllowed(true);
    }

    /**
     * {@code options} filled from {@code args} and {@linkplain Checked#check() checked} (unless
     * {@code --help} or {@code --version} was asked for).
     *
     * @throws IllegalArgumentException with picocli's or the check's message naming the option
     */
    public static <T> T parse(T options, List<String> args) {
        CommandLine cl = commandLine(options);
        try {
            cl.parseArgs(args.toArray(String[]::new));
        } catch (ParameterException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        if (options instanceof Checked c && !cl.isUsageHelpRequested() && !cl.isVersionHelpRequested()) {
            c.check();
        }
        return options;
    }

    /** {@link #parse(Object, List)} for the sample {@code sample}: a bad argument is its {@link #usage}. */
    public static <T> T parse(String sample, T options, List<String> args) {
        try {
            return parse(options, args);
        } catch (IllegalArgumentException e) {
            throw usage(sample, e.getMessage());
        }
    }

    /** {@code v} if it lies from {@code least} to {@code most}; otherwise an {@link IllegalArgumentException} naming it. */
    public static long range(String opt, long v, long least, long most) {
        if (v >= least && v <= most) {
            return v;
        }
        throw new IllegalArgumentException(opt + " needs an integer " + (most == Long.MAX_VALUE
                || most == Integer.MAX_VALUE ? "of at least " + least : "from " + least + " to " + most) + ", got "
                + v);
    }

    /** {@link #range(String, long, long, long)} for an int. */
    public static int range(String opt, int v, int least, int most) {
        return (int) range(opt, (long) v, least, most);
    }

    /** {@code v} as an integer of at least {@code least}; otherwise an {@link IllegalArgumentException} naming {@code opt}. */
    public static int count(String opt, String v, int least) {
        return count(opt, v, least, Integer.MAX_VALUE);
    }

    /** {@code v} as an integer from {@code least} to {@code most}; otherwise an {@link IllegalArgumentException} naming {@code opt}. */
    public static int count(String opt, String v, int least, int most) {
        try {
            return range(opt, Integer.parseInt(v), least, most);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(opt + " needs an integer " + (most == Integer.MAX_VALUE
                    ? "of at least " + least : "from " + least + " to " + most) + ", got '" + v + "'");
        }
    }

    /** The error of a rank sample's bad arguments: {@link ErrorCode#INVALID_USAGE}, naming the sample. */
    public static JmscclppException usage(String sample, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, sample + ": " + detail).phase("sample arguments")
                .build();
    }

    /** A byte count: digits, an optional K, M, G or T (powers of 1024), an optional B or iB ({@link ByteSizes#parse}). */
    public static final class Bytes implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                return ByteSizes.parse("a byte count", value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException("needs a byte count such as 4096, 4K, 256M or 1G, got '" + value
                        + "'");
            }
        }
    }

    /** A count: digits with an optional K, M, G or T (powers of 1024: {@code 1M} is 1048576). */
    public static final class Count implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            long x = ByteSizes.scaled(value);
            if (x < 0) {
                throw new TypeConversionException("needs a count such as 1000, 4K or 1M (powers of 1024), got '"
                        + value + "'");
            }
            return x;
        }
    }

    /** A 64-bit integer: decimal, or hexadecimal after {@code 0x}. */
    public static final class Word implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            String v = value.strip();
            try {
                return v.startsWith("0x") || v.startsWith("0X") ? Long.parseUnsignedLong(v.substring(2), 16)
                        : Long.parseLong(v);
            } catch (NumberFormatException e) {
                throw new TypeConversionException("needs a 64-bit integer, got '" + v + "'");
            }
        }
    }

    /** One of NCCL's types by nccl-tests' name ({@code float, half, bfloat16, int32, ...}: {@link DataType#parse}). */
    public static final class Type implements ITypeConverter<DataType> {
        @Override
        public DataType convert(String value) {
            try {
                return DataType.parse(value);
            } catch (JmscclppException e) {
                throw new TypeConversionException(e.detail());
            }
        }
    }

    /** A reduction by name ({@code sum, prod, min, max, avg}: {@link ReduceOp#parse}). */
    public static final class Reduction implements ITypeConverter<ReduceOp> {
        @Override
        public ReduceOp convert(String value) {
            try {
                return ReduceOp.parse(value);
            } catch (JmscclppException e) {
                throw new TypeConversionException(e.detail());
            }
        }
    }
}
