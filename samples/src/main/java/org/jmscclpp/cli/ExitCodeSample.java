package org.jmscclpp.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.samples.Sample;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * Internal samples that exercise the launcher without any communication: {@code exit-code} exits with
 * a chosen code per rank, {@code wait-forever} waits until it is killed.
 *
 * <p>{@code exit-code CODES [TEXT]}: {@code CODES} is a comma list indexed by rank whose last entry
 * applies to the remaining ranks ({@code 0}, {@code 0,3}, {@code wait,3,wait}); {@code wait} makes
 * the rank wait to be killed like {@code wait-forever}. With {@code TEXT}, the rank first prints
 * {@code rank R of N: TEXT} on stdout and {@code rank R of N: TEXT (stderr)} on stderr, so a test can
 * match every line with the rank prefix the launcher put in front of it.
 */
public final class ExitCodeSample implements Sample {

    static final String EXIT_CODE = "exit-code";
    static final String WAIT_FOREVER = "wait-forever";

    /**
     * How long a waiting rank stays up when nobody kills it: an orphan of a crashed launcher must
     * not live forever.
     */
    static final Duration WAIT_LIMIT = Duration.ofSeconds(60);

    /** Exit code of a waiting rank that reached {@link #WAIT_LIMIT}, as timeout(1) uses. */
    public static final int WAIT_EXPIRED = 124;

    private static final String WAIT = "wait";

    private final boolean forever;

    private ExitCodeSample(boolean forever) {
        this.forever = forever;
    }

    static ExitCodeSample exitCode() {
        return new ExitCodeSample(false);
    }

    static ExitCodeSample waitForever() {
        return new ExitCodeSample(true);
    }

    /** The arguments of {@code exit-code} (wait-forever takes none), for its usage. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class)
    static final class Args {
        @Parameters(arity = "0..2", paramLabel = "CODES [TEXT]", description = "exit codes by rank, then a text to"
                + " print")
        List<String> args = new ArrayList<>();
    }

    @Override
    public Object options() {
        return forever ? new SampleArgs.None() : new Args();
    }

    @Override
    public int run(RankEnvironment env, List<String> args) throws InterruptedException {
        String who = "rank " + env.rank() + " of " + env.worldSize();
        if (forever) {
            if (!args.isEmpty()) {
                throw usage(WAIT_FOREVER + " takes no arguments, got " + args);
            }
            return waitToBeKilled(who);
        }
        if (args.isEmpty() || args.size() > 2) {
            throw usage("usage: " + EXIT_CODE + " CODES [TEXT], got " + args);
        }
        String[] codes = args.getFirst().split(",", -1);
        String mine = codes[Math.min(env.rank(), codes.length - 1)].strip();
        if (args.size() == 2) {
            System.out.println(who + ": " + args.get(1));
            System.out.flush();
            System.err.println(who + ": " + args.get(1) + " (stderr)");
            System.err.flush();
        }
        if (mine.equals(WAIT)) {
            return waitToBeKilled(who);
        }
        try {
            int code = Integer.parseInt(mine);
            if (code < 0 || code > 255) {
                throw usage("exit codes are in [0, 255], got " + code);
            }
            return code;
        } catch (NumberFormatException e) {
            throw usage("'" + mine + "' is neither an exit code nor '" + WAIT + "'");
        }
    }

    private static int waitToBeKilled(String who) throws InterruptedException {
        System.out.println(who + ": waiting to be killed (at most " + WAIT_LIMIT.toSeconds() + " s)");
        System.out.flush();
        // nothing to synchronise with: the launcher ends this process; the limit only bounds an orphan's life
        Thread.sleep(WAIT_LIMIT);
        System.err.println(who + ": nobody killed me within " + WAIT_LIMIT.toSeconds() + " s");
        return WAIT_EXPIRED;
    }

    private static JmscclppException usage(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("sample arguments").build();
    }
}
