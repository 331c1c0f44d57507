package org.jmscclpp.cli;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Launcher;
import org.jmscclpp.samples.Launcher.Job;
import org.jmscclpp.samples.Launcher.OutputLine;
import org.jmscclpp.samples.Launcher.RankExit;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The {@code run} command: N ranks of a registered sample as processes of this host, through the
 * {@link Launcher}. Its options come before the sample's name; everything after the name is the
 * sample's (picocli stops there), checked against the sample's own options before any rank starts.
 */
@Command(name = "run", mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false,
        description = {"Starts N ranks of SAMPLE as processes of this host, like mpirun or torchrun: each gets"
                + " JMSCCLPP_RANK, JMSCCLPP_WORLD_SIZE, JMSCCLPP_LOCAL_RANK, MSCCLPP_COMM_ID=127.0.0.1:port and a"
                + " fresh MSCCLPP_BOOTSTRAP_SECRET; output lines get a [rank R] prefix; when a rank fails the"
                + " others are stopped.", "'jmscclpp SAMPLE --help' shows a sample's options."},
        footer = "Exit codes: 0 every rank exited 0, 1 a rank failed or the deadline passed, 2 usage error.")
final class RunCommand implements SampleArgs.Checked {

    /** Deadline of {@code jmscclpp run} when {@code --timeout} is not given. */
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(600);

    @Option(names = {"-n", "-np", "--nranks"}, paramLabel = "N", required = true, description = "ranks to start")
    int n;

    @Option(names = "--timeout", paramLabel = "SECONDS", description = "stop every rank after this long (default:"
            + " 600)")
    double timeoutSeconds = DEFAULT_TIMEOUT.toSeconds();

    @Parameters(index = "0", paramLabel = "SAMPLE", description = "the sample to run")
    String sample = "";

    @Parameters(index = "1..*", paramLabel = "ARGS", description = "the sample's arguments")
    List<String> sampleArgs = new ArrayList<>();

    @Override
    public void check() {
        if (n < 1) {
            throw new IllegalArgumentException("-n must be at least 1, got " + n);
        }
        if (!(timeoutSeconds > 0) || Double.isInfinite(timeoutSeconds)) {
            throw new IllegalArgumentException("--timeout must be a positive number of seconds, got "
                    + timeoutSeconds);
        }
        // below a nanosecond the deadline would be zero: every rank stopped at once as 'still running after 0 s'
        if (timeout().isZero()) {
            throw new IllegalArgumentException("--timeout must be at least a nanosecond (1e-9 s), got "
                    + timeoutSeconds);
        }
        if (Samples.find(sample).isEmpty()) {
            throw new IllegalArgumentException("unknown sample '" + sample + "'; " + Main.sampleNames());
        }
    }

    /** {@code jmscclpp run ARGS}: what {@link Main} runs for them (tests). */
    static int run(List<String> args, PrintStream out, PrintStream err) {
        return Main.runCommand(args, out, err);
    }

    Duration timeout() {
        return Duration.ofNanos((long) (timeoutSeconds * 1e9));
    }

    /**
     * Starts the ranks, copies their output to {@code out}/{@code err} with a {@code [rank R] } prefix
     * and waits for them.
     *
     * @return 0 when every rank exited with 0; 1 when a rank failed (the others are stopped), the
     *         deadline passed or this thread was interrupted
     */
    int start(PrintStream out, PrintStream err) {
        Duration timeout = timeout();
        Consumer<OutputLine> printer = line ->
                (line.stderr() ? err : out).println("[rank " + line.rank() + "] " + line.text());
        Job job;
        try {
            job = Launcher.builder(n).sample(sample, sampleArgs).output(printer).start();
        } catch (JmscclppException e) {
            err.println("jmscclpp: " + e.getMessage());
            return ExitCodes.FAILURE;
        }
        try (job) {
            if (!job.waitFor(timeout)) {
                err.println("jmscclpp: timeout: " + job.describeRunning() + " still running after "
                        + seconds(timeout) + "; stopping every rank");
                return ExitCodes.FAILURE;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("jmscclpp: interrupted; stopping every rank");
            return ExitCodes.FAILURE;
        }
        Optional<RankExit> failed = job.firstFailure();
        if (failed.isPresent()) {
            RankExit f = failed.get();
            err.println("jmscclpp: rank " + f.rank() + " failed first, with exit code " + f.exitCode()
                    + job.describeOthers(f.rank()));
            // a rank that refused its arguments (exit 2) makes the job's a usage error too, as the launcher's own checks
            return f.exitCode() == ExitCodes.USAGE ? ExitCodes.USAGE : ExitCodes.FAILURE;
        }
        return ExitCodes.OK;
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() / 1000.0 + " s";
    }
}
