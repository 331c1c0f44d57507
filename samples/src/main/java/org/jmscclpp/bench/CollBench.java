package org.jmscclpp.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.bench.nccl.NcclCommunicator;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.hierarchy.HierarchicalComm;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.samples.ByteSizes;
import org.jmscclpp.samples.CollectiveJob;
import org.jmscclpp.samples.CollectiveRun;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Launcher;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code jmscclpp bench coll}: a collective's sweep over sizes in nccl-tests' style, optionally
 * beside NCCL, on N rank processes of this host ({@link Launcher}, {@link CollBenchRankSample}).
 * Prints nccl-tests' header (with the command, host, devices and versions), one row per size and
 * the average bus bandwidth ({@link CollTable}); {@code --json} writes the report
 * ({@link CollJson}), {@code --plot} draws it ({@link CollPlot}).
 *
 * <p>And {@code jmscclpp bench plot --json RESULTS.json --plot FILE.png}: draws (and prints) a
 * report that a sweep wrote where nothing can draw: the bundle of the GPU hosts has no
 * {@code java.desktop} and no XChart.
 *
 * <p>Exit codes: 0 when every row's check found every element right; 1 when one did not, a rank
 * failed or gave no result; 2 for bad arguments or what this host lacks (GPUs, NCCL, plotting).
 */
public final class CollBench {

    public static final String PLOT_SYNOPSIS = "jmscclpp bench plot --json RESULTS.json --plot FILE.png";

    /** NCCL's environment in the ranks: NVLink multicast (NVLS) stays off on the GPU hosts. */
    static final Map<String, String> NCCL_ENV = Map.of("NCCL_NVLS_ENABLE", "0");

    private static final Duration JOB_TIMEOUT = Duration.ofMinutes(30);
    /** How often a long sweep says on stderr how far it is. */
    static final Duration PROGRESS_EVERY = Duration.ofSeconds(10);
    private static final Pattern ROW = Pattern.compile("COLL-ROW impl=(\\S+) algo=(\\S+) size=(\\d+) count=(\\d+)"
            + " place=(in|out) time_us=(\\S+) wrong=(-?\\d+)");
    private static final Pattern DEV = Pattern.compile("COLL-DEV rank=(\\d+) pid=(\\d+) host=(\\S+) device=(.*)");
    private static final Pattern VER = Pattern.compile("COLL-VER name=(\\S+) version=(.*)");
    private static final Pattern OVERHEAD = Pattern.compile("COLL-OVERHEAD algo=(\\S+) size=(\\d+) count=(\\d+)"
            + " calls=(\\d+) mono_block_us=(\\S+) mono_pipelined_us=(\\S+) stream_us=(\\S+) stream_sync_us=(\\S+)");

    private CollBench() {
    }

    /** Runs {@code jmscclpp bench coll ARGS}. */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        return run(args, out, err, Launcher.SAMPLE_MAIN, List.of(), CollBench::hostLacks);
    }

    /**
     * {@link #run(List, PrintStream, PrintStream)} with the ranks started as {@code rankMain}
     * (a class whose main method runs the command line's after registering wrappers
     * ({@link CollectiveJob#wrap}), in tests) with {@code jvmArgs}, and {@code lacks} telling what
     * this host lacks for the options, if anything.
     */
    static int run(List<String> args, PrintStream out, PrintStream err, String rankMain, List<String> jvmArgs,
                   Function<CollOptions, Optional<String>> lacks) {
        CollOptions o = BenchArgs.parseOrPrintUsage(args, CollOptions::parse, "jmscclpp bench coll",
                CollOptions.SYNOPSIS, err);
        if (o == null) {
            return ExitCodes.USAGE;
        }
        String algorithm = algorithm(o, err);
        if (algorithm == null) {
            return ExitCodes.USAGE;
        }
        Optional<String> missing = lacks.apply(o);
        if (missing.isPresent()) {
            err.println("jmscclpp bench coll: " + missing.get());
            return ExitCodes.USAGE;
        }
        String command = "jmscclpp bench coll " + String.join(" ", args);
        err.println("bench: " + CollectiveRun.label(o.kind()) + " (" + algorithm + ") on the " + o.backend()
                + " backend, " + o.ranks() + " processes" + (o.hosts() > 1 ? " as " + o.hosts() + " hosts" : "")
                + " ...");
        Streamed lines = new Streamed(command, o, algorithm, out, err);
        List<String> rankArgs = new ArrayList<>(List.of(CollBenchRankSample.NAME));
        rankArgs.addAll(o.rankArgs());
        Map<String, String> env = new LinkedHashMap<>(NCCL_ENV);
        // each rank takes its local GPU: an inherited explicit device would put all on one
        env.put(CudaBackend.DEVICE_ENV, "");
        BenchJob.Outcome outcome = BenchJob.run(Launcher.builder(o.ranks()).mainClass(rankMain, rankArgs).env(env)
                        .rankEnv(o::hostEnv).jvmArgs(jvmArgs),
                JOB_TIMEOUT, line -> !line.stderr() && line.rank() == 0 && line.text().startsWith("COLL-")
                        && lines.add(line.text()));
        String error = outcome.error();
        CollReport report = lines.finish(error);
        int code = ExitCodes.OK;
        if (error != null) {
            outcome.report(err, "coll", error);
            code = ExitCodes.FAILURE;
        }
        if (report.wrong() > 0) {
            err.println("bench coll: " + report.wrong() + " wrong elements");
            code = ExitCodes.FAILURE;
        }
        if (report.rows().isEmpty() && code == ExitCodes.OK) {
            err.println("bench coll: the ranks gave no rows");
            code = ExitCodes.FAILURE;
        }
        return Math.max(code, save(report, o.json(), o.plot(), err));
    }

    /** {@code jmscclpp bench plot --json RESULTS.json --plot FILE.png}: prints the report's table and draws it. */
    public static int plot(List<String> args, PrintStream out, PrintStream err) {
        PlotArgs a;
        try {
            a = SampleArgs.parse(new PlotArgs(), args);
        } catch (IllegalArgumentException e) {
            return plotUsage(err, e.getMessage());
        }
        Path json = a.json;
        Path plot = a.plot;
        Optional<String> lacking = plotUnavailableReason();
        if (lacking.isPresent()) {
            err.println("jmscclpp bench plot: cannot draw here: " + lacking.get());
            return ExitCodes.USAGE;
        }
        CollReport report;
        try {
            report = CollJson.read(Files.readString(json, StandardCharsets.UTF_8));
        } catch (IOException e) {
            err.println("jmscclpp bench plot: cannot read " + json + ": " + e);
            return ExitCodes.USAGE;
        } catch (IllegalArgumentException e) {
            err.println("jmscclpp bench plot: " + json + ": " + e.getMessage());
            return ExitCodes.USAGE;
        }
        out.print(CollTable.render(report));
        return save(report, null, plot, err);
    }

    /** The options of {@code jmscclpp bench plot}. */
    @Command(name = "plot", mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false,
            description = "Draws busbw and time against size from a sweep's --json (where a JDK with java.desktop"
                    + " is), and prints its table.")
    static final class PlotArgs {
        @Option(names = "--json", paramLabel = "RESULTS.json", required = true,
                description = "the report bench coll --json wrote")
        Path json = Path.of("");
        @Option(names = "--plot", paramLabel = "FILE.png", required = true, description = "the picture to write")
        Path plot = Path.of("");
    }

    private static int plotUsage(PrintStream err, String problem) {
        err.println("jmscclpp bench plot: " + problem);
        err.println("usage: " + PLOT_SYNOPSIS);
        return ExitCodes.USAGE;
    }

    /** Writes the JSON and the plot that were asked for; FAILURE when one cannot be written. */
    private static int save(CollReport report, @Nullable Path json, @Nullable Path plot, PrintStream err) {
        int code = ExitCodes.OK;
        if (json != null) {
            try {
                Path parent = json.toAbsolutePath().getParent();
                if (parent != null) {
                    Files.createDirectories(parent);
                }
                Files.writeString(json, CollJson.write(report), StandardCharsets.UTF_8);
                err.println("bench: wrote " + json);
            } catch (IOException e) {
                err.println("bench: cannot write " + json + ": " + e);
                code = ExitCodes.FAILURE;
            }
        }
        if (plot != null) {
            try {
                CollPlot.write(report, plot);
                err.println("bench: wrote " + plot);
            } catch (JmscclppException e) {
                err.println("bench: " + e.getMessage());
                code = ExitCodes.FAILURE;
            }
        }
        return code;
    }

    /**
     * The algorithm the report names: {@code --algo} when the backend's engine has it (or it names a
     * wrapper), {@value CollReport#AUTO} without {@code --algo} (the tuning table's choice, per size in
     * the rows); null after printing why the asked one is unknown.
     */
    private static @Nullable String algorithm(CollOptions o, PrintStream err) {
        List<String> known = CollectiveJob.algorithms(o.backend(), o.kind());
        String asked = o.algorithm();
        if (asked == null) {
            return CollReport.AUTO;
        }
        if (known.contains(asked)) {
            // the algorithms of jobs that span hosts refuse ranks of one host: every rank would exit with 2
            if (o.hosts() == 1 && HierarchicalComm.ALGORITHMS.stream().anyMatch(a -> a.kind() == o.kind()
                    && a.name().equals(asked))) {
                err.println("jmscclpp bench coll: '" + asked + "' runs where the ranks span hosts; add --hosts H"
                        + " (H dividing --ranks, at least 2) to make the ranks act as H hosts");
                return null;
            }
            return asked;
        }
        err.println("jmscclpp bench coll: no '" + asked + "' " + CollectiveRun.label(o.kind()) + " algorithm on the "
                + o.backend() + " backend (known: " + known + ")");
        return null;
    }

    /** What this host lacks for {@code o}: GPUs and NCCL for cuda runs, plotting for {@code --plot}. */
    static Optional<String> hostLacks(CollOptions o) {
        if (o.plot() != null) {
            Optional<String> plot = plotUnavailableReason();
            if (plot.isPresent()) {
                return Optional.of("--plot cannot draw here: " + plot.get() + "; write --json FILE and draw it"
                        + " where a JDK is with '" + PLOT_SYNOPSIS + "'");
            }
        }
        if (o.backend().equals("cuda")) {
            Optional<String> cuda = CudaBackend.unavailableReason(o.ranks());
            if (cuda.isPresent()) {
                return Optional.of("the cuda backend is unavailable here: " + cuda.get());
            }
        }
        if (o.nccl()) {
            Optional<String> nccl = NcclCommunicator.unavailableReason();
            if (nccl.isPresent()) {
                return Optional.of("--baseline nccl: NCCL is unavailable here: " + nccl.get());
            }
        }
        return Optional.empty();
    }

    /** Why this JVM cannot draw (no java.desktop, no XChart on the class path), or empty when it can. */
    static Optional<String> plotUnavailableReason() {
        if (ModuleLayer.boot().findModule("java.desktop").isEmpty()) {
            return Optional.of("this Java runtime has no java.desktop module (the jmscclpp bundle leaves it out)");
        }
        try {
            Class.forName("org.knowm.xchart.XYChart", false, CollBench.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            return Optional.of("XChart is not on the class path (bin/jmscclpp takes it from samples/target/plot-lib/;"
                    + " the bundle leaves it out)");
        }
        return Optional.empty();
    }

    /** The report of rank 0's lines (others ignored). */
    static CollReport report(String command, CollOptions o, String algorithm, List<String> lines) {
        Map<Integer, String> devices = new TreeMap<>();
        Map<String, String> versions = new LinkedHashMap<>();
        List<CollectiveRunner.Measurement> rows = new ArrayList<>();
        String host = CollBenchRankSample.hostName();
        String ncclVersion = null;
        CallOverhead overhead = null;
        for (String line : lines) {
            Matcher row = ROW.matcher(line);
            Matcher dev = DEV.matcher(line);
            Matcher ver = VER.matcher(line);
            Matcher over = OVERHEAD.matcher(line);
            try {
                if (over.matches()) {
                    overhead = new CallOverhead(over.group(1), Long.parseLong(over.group(2)),
                            Long.parseLong(over.group(3)), Integer.parseInt(over.group(4)),
                            Double.parseDouble(over.group(5)), Double.parseDouble(over.group(6)),
                            Double.parseDouble(over.group(7)), Double.parseDouble(over.group(8)));
                } else if (row.matches()) {
                    rows.add(new CollectiveRunner.Measurement(row.group(1), row.group(2), o.kind(),
                            Long.parseLong(row.group(3)), Long.parseLong(row.group(4)), o.type(),
                            row.group(5).equals("in"), Double.parseDouble(row.group(6)), Long.parseLong(row.group(7))));
                } else if (dev.matches()) {
                    int rank = Integer.parseInt(dev.group(1));
                    devices.put(rank, String.format(Locale.ROOT, "Rank %2d Group  0 Pid %6s on %10s device"
                            + " %2d %s", rank, dev.group(2), dev.group(3), rank, dev.group(4)));
                    if (rank == 0) {
                        host = dev.group(3);
                    }
                } else if (ver.matches()) {
                    if (ver.group(1).equals("nccl")) {
                        ncclVersion = ver.group(2);
                    }
                }
            } catch (NumberFormatException e) {
                // not a result line after all
            }
        }
        versions.putAll(CollTable.versions(ncclVersion));
        return new CollReport(command, host, o.backend(), o.kind(), o.type(), o.reduction(),
                o.kind().rooted() ? o.root() : -1, o.ranks(), algorithm, o.minBytes(), o.maxBytes(), o.factor(),
                o.iters(), o.warmup(), o.check(), o.graph(), List.copyOf(devices.values()), versions, rows, overhead);
    }

    /**
     * Rank 0's result lines as they come, printed in nccl-tests' way: the header and each size's row
     * on {@code out} as soon as the size is done (its rows of every implementation and placement have
     * come, which the next size's first row or the overhead line tells), flushed; on long sweeps a
     * progress line on {@code err} every {@link CollBench#PROGRESS_EVERY}; the summary at the end. The whole
     * output is {@link CollTable#render} of the final report.
     */
    private static final class Streamed {
        private final String command;
        private final CollOptions o;
        private final String algorithm;
        private final PrintStream out;
        private final PrintStream err;
        private final int sizes;
        private final long start = System.nanoTime();
        private final List<String> lines = new ArrayList<>();
        private long lastProgress = start;
        private boolean headed;
        private long pending = -1;
        private int done;

        Streamed(String command, CollOptions o, String algorithm, PrintStream out, PrintStream err) {
            this.command = command;
            this.o = o;
            this.algorithm = algorithm;
            this.out = out;
            this.err = err;
            // a size whose count rounds to 0 elements is skipped without a row (as nccl-tests does)
            this.sizes = (int) o.sizes().stream().filter(s -> o.run(s).count() > 0).count();
        }

        /** Takes a line from a rank's reader thread. */
        synchronized boolean add(String line) {
            lines.add(line);
            Matcher row = ROW.matcher(line);
            if (row.matches()) {
                long size = Long.parseLong(row.group(3));
                if (pending != -1 && size != pending) {
                    flushPending();
                }
                pending = size;
            } else if (OVERHEAD.matcher(line).matches()) {
                flushPending();
            }
            return true;
        }

        /** The report of every line; prints what is not printed yet, and the footer of a run {@code failure} ended. */
        synchronized CollReport finish(@Nullable String failure) {
            flushPending();
            CollReport report = report(command, o, algorithm, List.copyOf(lines));
            if (!headed) {
                out.print(CollTable.header(report));
                headed = true;
            }
            out.print(CollTable.footer(report, failure));
            out.flush();
            return report;
        }

        private void flushPending() {
            if (pending == -1) {
                return;
            }
            CollReport report = report(command, o, algorithm, List.copyOf(lines));
            if (!headed) {
                out.print(CollTable.header(report));
                headed = true;
            }
            for (CollReport.Line line : report.lines()) {
                if (line.size() == pending) {
                    out.println(CollTable.row(report, line));
                }
            }
            out.flush();
            long size = pending;
            pending = -1;
            done++;
            long now = System.nanoTime();
            if (now - lastProgress >= PROGRESS_EVERY.toNanos() && done < sizes) {
                lastProgress = now;
                err.printf(Locale.ROOT, "bench coll: size %d/%d done (%s), %.0f s%n", done, sizes,
                        ByteSizes.label(size), (now - start) / 1e9);
                err.flush();
            }
        }
    }
}
