package org.jmscclpp.bench;

import java.io.PrintStream;
import java.util.List;
import java.util.function.Function;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.SampleArgs;
import org.jspecify.annotations.Nullable;

/**
 * The options of the benchmarks, read the same way by a benchmark's command
 * ({@code jmscclpp bench write}) and by its rank sample ({@code bench-write-rank}) from one picocli
 * class ({@link SampleArgs#parse(Object, List)}): a parser throws {@link IllegalArgumentException}
 * naming the option, which the command prints with its synopsis and the rank reports as
 * {@link ErrorCode#INVALID_USAGE}.
 */
public final class BenchArgs {

    private BenchArgs() {
    }

    /**
     * {@code parser}'s options, or null after printing why they are wrong and {@code synopsis} to
     * {@code err} (the caller then exits with {@link ExitCodes#USAGE}).
     *
     * @param command names the command in the message ("jmscclpp bench write")
     */
    public static <T> @Nullable T parseOrPrintUsage(List<String> args, Function<List<String>, T> parser, String command,
                                             String synopsis, PrintStream err) {
        try {
            return parser.apply(args);
        } catch (IllegalArgumentException e) {
            err.println(command + ": " + e.getMessage());
            err.println("usage: " + synopsis);
            return null;
        }
    }

    /** {@code parser}'s options for the rank sample {@code sample}, or its complaint as {@link #usage}. */
    public static <T> T parseForRank(String sample, List<String> args, Function<List<String>, T> parser) {
        try {
            return parser.apply(args);
        } catch (IllegalArgumentException e) {
            throw usage(sample, e.getMessage());
        }
    }

    /** Refuses (as {@link #usage}) a job of other than {@code ranks} ranks. */
    public static void requireRanks(String sample, RankEnvironment env, int ranks) {
        if (env.worldSize() != ranks) {
            throw usage(sample, "runs with " + ranks + " ranks, got " + env.worldSize());
        }
    }

    /** The error of a rank sample's bad arguments: {@link ErrorCode#INVALID_USAGE}, naming the sample. */
    public static JmscclppException usage(String sample, String detail) {
        return SampleArgs.usage(sample, detail);
    }

    /**
     * Checks the {@code --min}/{@code --max} size range of a bandwidth bench: {@code min} at least
     * one word (a transfer's stamp), {@code max} not below it; otherwise an
     * {@link IllegalArgumentException}.
     */
    public static void checkSizeRange(long min, long max) {
        if (min < Long.BYTES) {
            throw new IllegalArgumentException("--min must be at least " + Long.BYTES + " bytes, got " + min);
        }
        if (max < min) {
            throw new IllegalArgumentException("--max (" + max + ") is below --min (" + min + ")");
        }
    }
}
