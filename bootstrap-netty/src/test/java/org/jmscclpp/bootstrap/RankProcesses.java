package org.jmscclpp.bootstrap;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The ranks of one job, each a separate JVM running a {@code main} class of the test classpath
 * (the same java binary and classpath as this JVM). Each rank's stdout and stderr are merged and
 * read line by line on a thread of its own; tests wait for a line with a deadline, kill a rank
 * with SIGKILL and wait for exit codes. {@link #close()} kills whatever is still alive.
 *
 * <p>Register groups with a {@link Tracker} so that they are closed after each test and their
 * output is printed when the test failed: the children's output is the only trace of what they did.
 */
public final class RankProcesses implements AutoCloseable {

    /**
     * Flags for short-lived children on a small machine: the C1 compiler only and the serial
     * collector keep a JVM start near half a CPU second.
     */
    private static final List<String> JVM_FLAGS = List.of("--enable-native-access=ALL-UNNAMED",
            "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-Xss1m");

    private final String name;
    private final Class<?> mainClass;
    private final Map<Integer, Rank> ranks = new TreeMap<>();
    /** {@code MSCCLPP_BOOTSTRAP_SECRET} of every rank of this group unless {@code env} sets it. */
    private final String secret = LocalJob.newSecret();

    RankProcesses(String name, Class<?> mainClass) {
        this.name = name;
        this.mainClass = mainClass;
    }

    /** One line of a rank's output and when this JVM read it ({@link System#nanoTime()}). */
    public record Line(long nanos, String text) {
        @Override
        public String toString() {
            return text;
        }
    }

    /** Starts {@code rank} with {@code args} and extra environment variables {@code env}. */
    void start(int rank, List<String> args, Map<String, String> env) {
        start(rank, List.of(), args, env);
    }

    /**
     * Starts {@code rank} under {@code prefix} (a command that runs the JVM, such as
     * {@code ip netns exec NS}), with {@code args} and extra environment variables {@code env}. The
     * child sees no {@code MSCCLPP_*} variable of this JVM's environment, only those in {@code env}
     * and {@code MSCCLPP_BOOTSTRAP_SECRET}, one fresh secret for the ranks of this group (an
     * {@code env} entry wins).
     */
    public synchronized void start(int rank, List<String> prefix, List<String> args, Map<String, String> env) {
        if (ranks.containsKey(rank)) {
            throw new IllegalStateException(name + " rank " + rank + " was already started");
        }
        List<String> command = new ArrayList<>(prefix);
        command.addAll(ChildJvm.command(JVM_FLAGS, mainClass, args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().keySet().removeIf(k -> k.startsWith("MSCCLPP_"));
        // the job's secret for explicit-address ranks, as jmscclpp run sets one; a test that wants
        // none names the variable with an empty value
        pb.environment().put(BootstrapOptions.SECRET_ENV, secret);
        pb.environment().putAll(env);
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + name + " rank " + rank, e);
        }
        Rank r = new Rank(p);
        ranks.put(rank, r);
        Thread.ofPlatform().daemon().name(name + "-rank-" + rank + "-output").start(r::pump);
    }

    /**
     * Waits until {@code rank} prints a line matching {@code wanted} and returns the first such line
     * (possibly one printed before this call).
     *
     * @throws AssertionError when the deadline passes or the rank's output ends first, with its output
     */
    Line awaitLine(int rank, Predicate<String> wanted, Duration timeout) {
        Rank r = rank(rank);
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (r) {
            int seen = 0;
            while (true) {
                for (; seen < r.lines.size(); seen++) {
                    if (wanted.test(r.lines.get(seen).text())) {
                        return r.lines.get(seen);
                    }
                }
                long left = deadline - System.nanoTime();
                if (r.ended || left <= 0) {
                    throw new AssertionError(name + " rank " + rank + ": no such line "
                            + (r.ended ? "before its output ended" : "within " + timeout.toMillis() + " ms")
                            + "; its output:\n" + output(rank));
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(r, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError("interrupted while waiting for " + name + " rank " + rank, e);
                }
            }
        }
    }

    /** Waits for the first line of {@code rank} that starts with {@code prefix}. */
    Line awaitLineStartingWith(int rank, String prefix, Duration timeout) {
        return awaitLine(rank, s -> s.startsWith(prefix), timeout);
    }

    /** The lines {@code rank} printed so far. */
    public List<Line> lines(int rank) {
        Rank r = rank(rank);
        synchronized (r) {
            return List.copyOf(r.lines);
        }
    }

    /** Kills {@code rank} with SIGKILL (no shutdown hooks run, its sockets are reset by the kernel). */
    void kill(int rank) {
        rank(rank).process.destroyForcibly();
    }

    /**
     * Waits for {@code rank} to exit and returns its exit code.
     *
     * @throws AssertionError if it is still running after {@code timeout}
     */
    public int waitFor(int rank, Duration timeout) {
        Process p = rank(rank).process;
        try {
            if (!p.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new AssertionError(name + " rank " + rank + " did not exit within " + timeout.toMillis()
                        + " ms; its output:\n" + output(rank));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting for " + name + " rank " + rank, e);
        }
        return p.exitValue();
    }

    /** Every rank's output, each under a header line. */
    public synchronized String allOutput() {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<Integer, Rank> e : ranks.entrySet()) {
            Process p = e.getValue().process;
            sb.append("===== ").append(name).append(" rank ").append(e.getKey()).append(" (pid ").append(p.pid())
                    .append(p.isAlive() ? ", running" : ", exit " + p.exitValue()).append(") =====\n")
                    .append(output(e.getKey()));
        }
        return sb.toString();
    }

    private String output(int rank) {
        StringBuilder sb = new StringBuilder();
        for (Line l : lines(rank)) {
            sb.append("  ").append(l.text()).append('\n');
        }
        return sb.toString();
    }

    private synchronized Rank rank(int rank) {
        Rank r = ranks.get(rank);
        if (r == null) {
            throw new IllegalStateException(name + " rank " + rank + " was not started");
        }
        return r;
    }

    /** Kills every rank still running and waits (bounded) for each to be gone and its output read. */
    @Override
    public void close() {
        List<Rank> all;
        synchronized (this) {
            all = List.copyOf(ranks.values());
        }
        for (Rank r : all) {
            r.process.destroyForcibly();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (Rank r : all) {
            try {
                r.process.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                r.awaitEnd(deadline);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static final class Rank {
        final Process process;
        final List<Line> lines = new ArrayList<>();
        boolean ended;

        Rank(Process process) {
            this.process = process;
        }

        /** Reads the child's output until it ends (the child exited or was killed). */
        void pump() {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String s;
                while ((s = in.readLine()) != null) {
                    Line line = new Line(System.nanoTime(), s);
                    synchronized (this) {
                        lines.add(line);
                        notifyAll();
                    }
                }
            } catch (IOException e) {
                synchronized (this) {
                    lines.add(new Line(System.nanoTime(), "[harness: reading the output failed: " + e + "]"));
                }
            } finally {
                synchronized (this) {
                    ended = true;
                    notifyAll();
                }
            }
        }

        synchronized void awaitEnd(long deadline) throws InterruptedException {
            long left;
            while (!ended && (left = deadline - System.nanoTime()) > 0) {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
    }

    /**
     * JUnit extension owning the groups a test starts: after each test it closes them and, if the
     * test failed, prints every rank's output.
     */
    public static final class Tracker implements AfterEachCallback {
        private final List<RankProcesses> groups = new ArrayList<>();

        /** Creates a group closed after the current test. */
        public synchronized RankProcesses open(String name, Class<?> mainClass) {
            RankProcesses g = new RankProcesses(name, mainClass);
            groups.add(g);
            return g;
        }

        @Override
        public void afterEach(ExtensionContext context) {
            List<RankProcesses> done;
            synchronized (this) {
                done = List.copyOf(groups);
                groups.clear();
            }
            for (RankProcesses g : done) {
                g.close();
            }
            Optional<Throwable> failure = context.getExecutionException();
            if (failure.isPresent()) {
                StringBuilder sb = new StringBuilder("----- " + context.getDisplayName()
                        + " failed; output of its processes -----\n");
                for (RankProcesses g : done) {
                    sb.append(g.allOutput());
                }
                System.out.print(sb);
                System.out.flush();
            }
        }
    }
}
