package org.jmscclpp.cli;

import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.samples.Launcher;
import org.jmscclpp.samples.Launcher.Job;
import org.jmscclpp.samples.Launcher.OutputLine;
import org.jmscclpp.samples.Launcher.RankExit;

/** The {@code run} command: N ranks of a registered sample as processes of this host, through the {@link Launcher}. */
final class RunCommand {

    /** Deadline of {@code jmscclpp run} when {@code --timeout} is not given. */
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(600);

    private RunCommand() {
    }

    /**
     * {@code jmscclpp run -n N [--timeout SECONDS] SAMPLE [args...]}: starts the ranks, copies their
     * output to {@code out}/{@code err} with a {@code [rank R] } prefix and waits for them.
     *
     * @return 0 when every rank exited with 0; 1 when a rank failed (the others are stopped), the
     *         deadline passed or this thread was interrupted; 2 for bad arguments
     */
    static int run(List<String> args, PrintStream out, PrintStream err) {
        int n = -1;
        Duration timeout = DEFAULT_TIMEOUT;
        int i = 0;
        try {
            for (; i < args.size() && args.get(i).startsWith("-"); i++) {
                String opt = args.get(i);
                if (i + 1 >= args.size()) {
                    return usage(err, opt + " needs a value");
                }
                String value = args.get(++i);
                switch (opt) {
                    case "-n", "-np", "--nranks" -> n = Integer.parseInt(value);
                    case "--timeout" -> {
                        double s = Double.parseDouble(value);
                        if (!(s > 0) || Double.isInfinite(s)) {
                            return usage(err, "--timeout must be a positive number of seconds, got " + value);
                        }
                        timeout = Duration.ofNanos((long) (s * 1e9));
                    }
                    default -> {
                        return usage(err, "unknown option " + opt);
                    }
                }
            }
        } catch (NumberFormatException e) {
            return usage(err, args.get(i - 1) + " needs a number, got '" + args.get(i) + "'");
        }
        if (n < 1) {
            return usage(err, n == -1 ? "-n N is required" : "-n must be at least 1, got " + n);
        }
        if (i >= args.size()) {
            return usage(err, "which sample? " + Main.sampleNames());
        }
        String sample = args.get(i);
        if (Samples.find(sample).isEmpty()) {
            return usage(err, "unknown sample '" + sample + "'; " + Main.sampleNames());
        }
        Consumer<OutputLine> printer = line ->
                (line.stderr() ? err : out).println("[rank " + line.rank() + "] " + line.text());
        Job job;
        try {
            job = Launcher.builder(n).sample(sample, args.subList(i + 1, args.size())).output(printer).start();
        } catch (JmscclppException e) {
            err.println("jmscclpp: " + e.getMessage());
            return 1;
        }
        try (job) {
            if (!job.waitFor(timeout)) {
                err.println("jmscclpp: timeout: " + job.describeRunning() + " still running after "
                        + seconds(timeout) + "; stopping every rank");
                return 1;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("jmscclpp: interrupted; stopping every rank");
            return 1;
        }
        Optional<RankExit> failed = job.firstFailure();
        if (failed.isPresent()) {
            RankExit f = failed.get();
            err.println("jmscclpp: rank " + f.rank() + " failed first, with exit code " + f.exitCode()
                    + job.describeOthers(f.rank()));
            return 1;
        }
        return 0;
    }

    private static int usage(PrintStream err, String problem) {
        err.println("jmscclpp run: " + problem);
        err.println("usage: jmscclpp run -n N [--timeout SECONDS] SAMPLE [args...]");
        return 2;
    }

    private static String seconds(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() / 1000.0 + " s";
    }
}
