package org.jmscclpp.samples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.StringJoiner;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * Starts the N ranks of a job as N processes on this host: what {@code jmscclpp run -n N SAMPLE}
 * does, and what tests and benchmarks use to spawn rank processes.
 *
 * <p>Each rank is a new JVM from the same {@code java} executable and the same class path as this
 * one, started with {@code --enable-native-access=ALL-UNNAMED}, whose main class {@link LaunchedRank}
 * runs the rank's main class. It finds its identity in
 * {@code JMSCCLPP_RANK}, {@code JMSCCLPP_WORLD_SIZE}, {@code JMSCCLPP_LOCAL_RANK} and in
 * {@code MSCCLPP_COMM_ID=127.0.0.1:PORT}, a port that was free on the loopback interface a moment
 * before the ranks started (see {@link RankEnvironment}), with {@code MSCCLPP_BOOTSTRAP_SECRET} set
 * to 32 fresh random bytes in hex for the job (unless the caller's environment map gives one); the rank
 * variables of an {@code mpirun} or {@code torchrun} that started this process are not passed on.
 * Every line a rank writes on stdout or stderr is handed to an output consumer with the rank number; the command line prints it with a
 * {@code [rank R] } prefix.
 *
 * <p>A {@link Job} is fail-fast by default: as soon as one rank exits with a non-zero code, the
 * others are stopped (SIGTERM, then SIGKILL after {@link #KILL_GRACE}). A shutdown hook stops every
 * rank still running when this JVM exits first. When this JVM dies without running it
 * ({@code SIGKILL}, {@code Runtime.halt}), the ranks stop themselves: each runs through
 * {@link LaunchedRank}, which watches this process and exits (through its shutdown hooks) within a
 * fraction of a second of its death.
 *
 * <pre>{@code
 * try (Launcher.Job job = Launcher.start(4, "bootstrap-demo", List.of(), Map.of(), line -> ...)) {
 *     if (!job.waitFor(Duration.ofMinutes(1))) { ... }   // job.close() stops what still runs
 *     job.firstFailure().ifPresent(f -> ...);
 * }
 * }</pre>
 */
public final class Launcher {

    private static final System.Logger LOG = System.getLogger(Launcher.class.getName());

    /** One line per log record (time, level, logger, message) instead of java.util.logging's two. */
    static final String LOG_FORMAT = "%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n";

    /** Time a rank gets between SIGTERM and SIGKILL. */
    public static final Duration KILL_GRACE = Duration.ofSeconds(5);

    /**
     * The main class of the {@code jmscclpp} command, which runs one rank of the sample it is given
     * by name: what {@link Builder#sample} starts. Named here as a string because the command line
     * sits above this package and uses it.
     */
    public static final String SAMPLE_MAIN = "org.jmscclpp.cli.Main";

    private Launcher() {
    }

    /** One line a rank wrote, without its line terminator. */
    public record OutputLine(int rank, boolean stderr, String text) {
    }

    /** How a rank ended. */
    public record RankExit(int rank, int exitCode) {
    }

    /** A builder for a job of {@code nRanks} processes (at least 1). */
    public static Builder builder(int nRanks) {
        return new Builder(nRanks);
    }

    /**
     * Starts {@code nRanks} processes running the sample {@code sample} with {@code args}, with
     * {@code extraEnv} added to each one's environment, fail-fast.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} for a bad rank count,
     *                           {@link ErrorCode#SYSTEM_ERROR} when a process cannot be started (the ones
     *                           already started are killed)
     */
    public static Job start(int nRanks, String sample, List<String> args, Map<String, String> extraEnv,
                            Consumer<OutputLine> output) {
        return builder(nRanks).sample(sample, args).env(extraEnv).output(output).start();
    }

    /** Picks a port that is free on 127.0.0.1 now; another process may still take it before rank 0 binds. */
    static int freeLoopbackPort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot find a free port on the loopback "
                    + "interface: " + e.getMessage()).phase("launch").cause(e).build();
        }
    }

    /**
     * The command line of one rank: this JVM's java executable, class path and {@code jmscclpp.*}
     * properties, {@code jvmArgs}, then {@link LaunchedRank} with this process's pid, which runs
     * {@code mainClass programArgs...}.
     */
    static List<String> rankCommand(List<String> jvmArgs, String mainClass, List<String> programArgs) {
        List<String> command = new ArrayList<>();
        command.add(javaExecutable());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-Djava.util.logging.SimpleFormatter.format=" + LOG_FORMAT);
        // the job decodes lines as UTF-8, whatever the locale says
        command.add("-Dstdout.encoding=UTF-8");
        command.add("-Dstderr.encoding=UTF-8");
        // the launcher's own tuning properties (-Djmscclpp.*, JMSCCLPP_JAVA_OPTS) hold for every rank
        System.getProperties().stringPropertyNames().stream().filter(k -> k.startsWith("jmscclpp.")).sorted()
                .forEach(k -> command.add("-D" + k + "=" + System.getProperty(k)));
        command.addAll(jvmArgs);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        // every rank watches this process and exits when it dies, even by SIGKILL
        command.add(LaunchedRank.class.getName());
        command.add(Long.toString(ProcessHandle.current().pid()));
        command.add(mainClass);
        command.addAll(programArgs);
        return command;
    }

    private static String javaExecutable() {
        return ProcessHandle.current().info().command()
                .orElseGet(() -> Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }

    /** Settings of a job; {@link #start()} starts it. */
    public static final class Builder {
        private final int nRanks;
        private String mainClass = SAMPLE_MAIN;
        private List<String> programArgs = List.of();
        private final Map<String, String> env = new LinkedHashMap<>();
        private IntFunction<Map<String, String>> rankEnv = rank -> Map.of();
        private List<String> jvmArgs = List.of();
        private Consumer<OutputLine> output = line ->
                (line.stderr() ? System.err : System.out).println("[rank " + line.rank() + "] " + line.text());
        private boolean failFast = true;

        private Builder(int nRanks) {
            if (nRanks < 1) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a job has at least 1 rank, got " + nRanks)
                        .phase("launch").build();
            }
            this.nRanks = nRanks;
        }

        /** Runs {@link #SAMPLE_MAIN} {@code name args...}: one rank of a registered sample. */
        public Builder sample(String name, List<String> args) {
            this.mainClass = SAMPLE_MAIN;
            List<String> all = new ArrayList<>();
            all.add(Objects.requireNonNull(name, "name"));
            all.addAll(args);
            this.programArgs = List.copyOf(all);
            return this;
        }

        /**
         * Runs {@code className args...} in each process instead of a sample; the class must be on
         * this JVM's class path, public, with a {@code public static void main(String[])}, and can
         * read its rank with {@link RankEnvironment#fromEnvironment()}.
         */
        public Builder mainClass(String className, List<String> args) {
            this.mainClass = Objects.requireNonNull(className, "className");
            this.programArgs = List.copyOf(args);
            return this;
        }

        /** Adds variables to every rank's environment; the rank variables set by the launcher win. */
        public Builder env(Map<String, String> vars) {
            env.putAll(vars);
            return this;
        }

        /** Variables of one rank's process, set after {@link #env}'s (a rank's own host id, say). */
        public Builder rankEnv(IntFunction<Map<String, String>> varsOf) {
            this.rankEnv = Objects.requireNonNull(varsOf, "varsOf");
            return this;
        }

        /** Adds JVM options (before the main class), for example {@code -Xmx256m}. */
        public Builder jvmArgs(List<String> args) {
            this.jvmArgs = List.copyOf(args);
            return this;
        }

        /**
         * Receives every output line of every rank, on the rank's reader thread (one virtual thread per
         * rank and stream): it must be thread-safe and should not block. Default: print with a
         * {@code [rank R] } prefix to this JVM's stdout or stderr.
         */
        public Builder output(Consumer<OutputLine> consumer) {
            this.output = Objects.requireNonNull(consumer, "consumer");
            return this;
        }

        /** Whether the first non-zero exit stops the other ranks (default true). */
        public Builder failFast(boolean failFast) {
            this.failFast = failFast;
            return this;
        }

        /**
         * Starts every rank and returns without waiting for them.
         *
         * @throws JmscclppException {@link ErrorCode#SYSTEM_ERROR} when a process cannot be started; the ones
         *                           already started are killed
         */
        public Job start() {
            return new Job(this);
        }
    }

    /**
     * The running ranks of one job. {@link #close()} stops whatever still runs and waits (bounded) for
     * it to end.
     */
    public static final class Job implements AutoCloseable {
        private final int nRanks;
        private final String rootAddress;
        private final boolean failFast;
        private final Consumer<OutputLine> output;
        private final List<Process> processes = new CopyOnWriteArrayList<>();
        private final List<CompletableFuture<RankExit>> exits = new CopyOnWriteArrayList<>();
        private final AtomicReference<@Nullable RankExit> firstFailure = new AtomicReference<>();
        private final AtomicBoolean stopping = new AtomicBoolean();
        private final AtomicBoolean consumerFailed = new AtomicBoolean();
        private final Set<Integer> stopped = ConcurrentHashMap.newKeySet();
        private final CompletableFuture<Void> done;
        private final Thread shutdownHook;

        private Job(Builder b) {
            this.nRanks = b.nRanks;
            this.failFast = b.failFast;
            this.output = b.output;
            this.rootAddress = "127.0.0.1:" + freeLoopbackPort();
            this.shutdownHook = Thread.ofPlatform().name("jmscclpp-launcher-shutdown").unstarted(this::stopAndWait);
            Runtime.getRuntime().addShutdownHook(shutdownHook);
            List<String> command = rankCommand(b.jvmArgs, b.mainClass, b.programArgs);
            // a fresh job secret: only these ranks can check in with the root or reach each other
            byte[] secretBytes = new byte[32];
            new SecureRandom().nextBytes(secretBytes);
            String secret = b.env.getOrDefault(BootstrapOptions.SECRET_ENV, HexFormat.of().formatHex(secretBytes));
            List<CompletableFuture<?>> parts = new ArrayList<>();
            for (int rank = 0; rank < nRanks; rank++) {
                ProcessBuilder pb = new ProcessBuilder(command);
                Map<String, String> env = pb.environment();
                // this launcher's ranks are not the ranks of one that started it (jmscclpp run under mpirun or
                // torchrun, or in a pod that sets RANK and WORLD_SIZE): their rank variables would contradict these
                RankEnvironment.otherLaunchersRankVariables().forEach(env::remove);
                env.putAll(b.env);
                env.putAll(b.rankEnv.apply(rank));
                env.put(RankEnvironment.COMM_ID, rootAddress);
                env.put(BootstrapOptions.SECRET_ENV, secret);
                env.put(RankEnvironment.JMSCCLPP_RANK, Integer.toString(rank));
                env.put(RankEnvironment.JMSCCLPP_WORLD_SIZE, Integer.toString(nRanks));
                env.put(RankEnvironment.JMSCCLPP_LOCAL_RANK, Integer.toString(rank));
                Process p;
                try {
                    p = pb.start();
                    // ranks read nothing: end of input instead of a pipe nobody writes to
                    p.getOutputStream().close();
                } catch (IOException e) {
                    stopAndWait();
                    Runtime.getRuntime().removeShutdownHook(shutdownHook);
                    throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot start " + command.getFirst()
                            + ": " + e.getMessage()).rank(rank).phase("launch").cause(e).build();
                }
                processes.add(p);
                if (stopping.get()) {
                    // a rank started earlier already failed; stop() ran before this one existed
                    stop();
                }
                int r = rank;
                CompletableFuture<RankExit> exit = p.onExit().thenApply(exited -> onRankExit(r, exited.exitValue()));
                exits.add(exit);
                parts.add(exit);
                parts.add(pump(p.getInputStream(), r, false));
                parts.add(pump(p.getErrorStream(), r, true));
            }
            this.done = CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new))
                    .whenComplete((v, t) -> removeHook());
        }

        private CompletableFuture<Void> pump(InputStream in, int rank, boolean stderr) {
            CompletableFuture<Void> drained = new CompletableFuture<>();
            Thread.ofVirtual().name("jmscclpp-rank-" + rank + (stderr ? "-stderr" : "-stdout")).start(() -> {
                try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                    for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                        deliver(new OutputLine(rank, stderr, line));
                    }
                } catch (IOException e) {
                    // the pipe closes under us when a rank is killed: there is nothing more to copy
                } finally {
                    drained.complete(null);
                }
            });
            return drained;
        }

        private void deliver(OutputLine line) {
            try {
                output.accept(line);
            } catch (RuntimeException e) {
                // keep draining, or the rank blocks on a full pipe; say it once
                if (consumerFailed.compareAndSet(false, true)) {
                    LOG.log(Level.WARNING, "the output consumer failed; later lines are still offered to it", e);
                }
            }
        }

        private RankExit onRankExit(int rank, int code) {
            RankExit exit = new RankExit(rank, code);
            if (code != 0 && !stopping.get() && firstFailure.compareAndSet(null, exit) && failFast) {
                stop();
            }
            return exit;
        }

        private void removeHook() {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException e) {
                // the JVM is already shutting down and the hook is running or has run
            }
        }

        /** Number of ranks. */
        public int nRanks() {
            return nRanks;
        }

        /** The {@code MSCCLPP_COMM_ID} every rank was given: {@code 127.0.0.1:PORT}. */
        public String rootAddress() {
            return rootAddress;
        }

        /** Process id of {@code rank}. */
        public long pid(int rank) {
            return process(rank).pid();
        }

        /** Exit code of {@code rank}, empty while it runs. */
        public OptionalInt exitCode(int rank) {
            Process p = process(rank);
            return p.isAlive() ? OptionalInt.empty() : OptionalInt.of(p.exitValue());
        }

        /** Completes when {@code rank} has exited (its output may still be on its way to the consumer). */
        public CompletableFuture<RankExit> onExit(int rank) {
            Objects.checkIndex(rank, nRanks);
            return exits.get(rank).copy();
        }

        /**
         * The first rank that exited with a non-zero code by itself (or by {@link #kill(int)}), as opposed
         * to being stopped by the launcher; empty while there is none.
         */
        public Optional<RankExit> firstFailure() {
            return Optional.ofNullable(firstFailure.get());
        }

        /**
         * Waits until every rank has exited and all of its output has been handed to the consumer.
         *
         * @return true when that happened within {@code timeout}, false when ranks still run (they are left
         *         running: {@link #close()} stops them)
         */
        public boolean waitFor(Duration timeout) throws InterruptedException {
            try {
                done.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
                return true;
            } catch (TimeoutException e) {
                return false;
            } catch (ExecutionException e) {
                throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "watching the ranks failed")
                        .phase("launch").cause(e.getCause()).build();
            }
        }

        /** Kills {@code rank} at once (SIGKILL), as a crash would; with fail-fast the others are then stopped. */
        public void kill(int rank) {
            process(rank).destroyForcibly();
        }

        /**
         * Stops every rank still running: SIGTERM now, SIGKILL to those still alive after
         * {@link #KILL_GRACE}. Does not wait; exits caused by it are not reported as failures.
         */
        public void stop() {
            stopping.set(true);
            for (int r = 0; r < processes.size(); r++) {
                Process p = processes.get(r);
                if (p.isAlive()) {
                    stopped.add(r);
                    p.destroy();
                    p.onExit().copy().orTimeout(KILL_GRACE.toMillis(), TimeUnit.MILLISECONDS)
                            .whenComplete((exited, timedOut) -> {
                                if (timedOut != null) {
                                    p.destroyForcibly();
                                }
                            });
                }
            }
        }

        /** {@link #stop()}, then waits (at most {@link #KILL_GRACE} plus a second) for the ranks and their output. */
        @Override
        public void close() {
            stopAndWait();
            try {
                done.get(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                // the ranks are gone; a reader still blocked holds nothing but a pipe
            }
        }

        private void stopAndWait() {
            stop();
            long deadline = System.nanoTime() + KILL_GRACE.toNanos();
            for (Process p : processes) {
                try {
                    long left = deadline - System.nanoTime();
                    if (left <= 0 || !p.waitFor(left, TimeUnit.NANOSECONDS)) {
                        p.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    p.destroyForcibly();
                    Thread.currentThread().interrupt();
                }
            }
        }

        private Process process(int rank) {
            Objects.checkIndex(rank, nRanks);
            return processes.get(rank);
        }

        /** "ranks 0, 2": the ranks still running. */
        public String describeRunning() {
            StringJoiner running = new StringJoiner(", ", "ranks ", "");
            for (int r = 0; r < processes.size(); r++) {
                if (processes.get(r).isAlive()) {
                    running.add(Integer.toString(r));
                }
            }
            return running.toString();
        }

        /** "; other ranks: rank 0 stopped (exit 143), rank 2 exit 0": how the ranks but {@code failed} ended. */
        public String describeOthers(int failed) {
            if (nRanks == 1) {
                return "";
            }
            StringJoiner others = new StringJoiner(", ", "; other ranks: ", "");
            for (int r = 0; r < nRanks; r++) {
                if (r != failed) {
                    OptionalInt c = exitCode(r);
                    String how = c.isPresent() ? "exit " + c.getAsInt() : "running";
                    others.add("rank " + r + (stopped.contains(r) ? " stopped (" + how + ")" : " " + how));
                }
            }
            return others.toString();
        }
    }
}
