package org.jmscclpp.bench;

import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.function.Predicate;
import org.jmscclpp.samples.Launcher;
import org.jspecify.annotations.Nullable;

/**
 * Runs the rank processes of one benchmark measurement: hands every output line to the caller,
 * which takes the result lines, and keeps the last lines of everything else to explain a failure.
 */
public final class BenchJob {

    /** How many lines of other output are kept. */
    private static final int KEPT_LINES = 40;

    private BenchJob() {
    }

    /**
     * What a run gave.
     *
     * @param error      what went wrong (no result in time, a rank that failed), or null
     * @param lastOutput the last lines the ranks printed that were not results, prefixed with their rank
     */
    public record Outcome(@Nullable String error, List<String> lastOutput) {

        /** Prints {@code error} for {@code what} and the kept output to {@code err}. */
        public void report(PrintStream err, String what, String error) {
            if (lastOutput.isEmpty()) {
                err.printf("bench: %s failed: %s; the ranks printed nothing else%n", what, error);
                return;
            }
            err.printf("bench: %s failed: %s; last output:%n", what, error);
            lastOutput.forEach(l -> err.println("  " + l));
        }
    }

    /**
     * Starts {@code job}, passes each output line to {@code result} (which returns whether it was a
     * result line) and waits for the ranks at most {@code timeout}.
     */
    public static Outcome run(Launcher.Builder job, Duration timeout, Predicate<Launcher.OutputLine> result) {
        ConcurrentLinkedDeque<String> chatter = new ConcurrentLinkedDeque<>();
        String error = null;
        try (Launcher.Job running = job.output(line -> {
            if (!result.test(line)) {
                chatter.add("[rank " + line.rank() + "] " + line.text());
                if (chatter.size() > KEPT_LINES) {
                    chatter.pollFirst();
                }
            }
        }).start()) {
            if (!running.waitFor(timeout)) {
                error = "no result within " + timeout.toSeconds() + " s";
            } else if (running.firstFailure().isPresent()) {
                Launcher.RankExit f = running.firstFailure().get();
                // 128 + N: the rank was killed by signal N (9: SIGKILL, the OOM killer's too); the others were stopped
                error = "rank " + f.rank() + " exited with " + f.exitCode() + (f.exitCode() > 128 && f.exitCode() < 160
                        ? " (killed by signal " + (f.exitCode() - 128) + ")" : "") + running.describeOthers(f.rank());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            error = "interrupted";
        } catch (RuntimeException e) {
            error = e.toString();
        }
        return new Outcome(error, List.copyOf(chatter));
    }
}
