package org.jmscclpp.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.nativebridge.CudaDriver;
import org.jmscclpp.nativebridge.CudaHotCalls;
import org.jmscclpp.nativebridge.Verbs;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Launcher;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code jmscclpp bench native}: issue 15's native-call target. For each hot CUDA driver call
 * ({@code cuEventQuery}, {@code cuCtxSetCurrent}, {@code cuStreamWriteValue64_v2},
 * {@code cuMemcpyDtoDAsync_v2}, {@code cuLaunchKernel}) the cost per call from C ({@code native_calls.c},
 * compiled here and run first, on the same GPU), from Java through JNA (the binding before) and through the
 * JDK's foreign-function API (after), each binding in a JVM of its own ({@link NativeCallJava}:
 * {@link CudaHotCalls#jna()}, {@link CudaHotCalls#ffm()}) measured the way the C program measures: ROUNDS
 * rounds of ITERS calls after an untimed round (in Java two or more, until the JIT has settled), the median
 * round's ns per call, calls that enqueue work in batches of 512 with the context synchronized between batches
 * outside the timed part. Target: Java (FFM) at most 1.1× C. InfiniBand verbs are not measured
 * (no hot verbs call goes through FFM yet); the table says whether libibverbs loads here.
 *
 * <p>Then, unless {@code --idle-seconds 0}: the CPU an idle {@link ProxyService} takes (issue 15: below 5% of a
 * core), started with no trigger for the window, for each poller: the process's CPU time over the window (an
 * upper bound: the JIT, the GC and every other thread count too), beside the same window with no service, and
 * for the platform-thread poller that thread's own CPU time. {@code --backend host} measures that alone, on the
 * host backend, where there is no GPU.
 *
 * <p>Without a GPU or the CUDA driver ({@code --backend cuda}, the default) it prints
 * {@code the cuda backend is unavailable here: <reason>} and exits with 2.
 */
public final class NativeCallBench {

    /** The command line. */
    public static final String SYNOPSIS = "jmscclpp bench native [--iters N] [--rounds R] [--device ORDINAL] "
            + "[--idle-seconds S] [--backend cuda|host]";

    /** The issue's bound on Java's cost per call, as a multiple of C's. */
    static final double TARGET_RATIO = 1.1;
    /** The issue's bound on an idle proxy's CPU use, percent of one core. */
    static final double IDLE_TARGET_PERCENT = 5.0;

    /** The empty kernel both sides launch, the PTX of {@code native_calls.c}. */
    static final String PTX = ".version 7.0\n.target sm_75\n.address_size 64\n"
            + ".visible .entry jmscclpp_empty(.param .u64 jmscclpp_empty_param_0)\n{\n    ret;\n}\n";

    private static final String NAME = "jmscclpp bench native";
    private static final String SOURCE = "native_calls.c";
    private static final Duration COMPILE_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(300);
    private static final Pattern CALL_LINE = Pattern.compile(
            "CALL name=(\\S+) iters=(\\d+) rounds=(\\d+) median_ns=(\\S+) min_ns=(\\S+)");
    private static final Pattern SKIP_LINE = Pattern.compile("SKIP name=(\\S+) reason=(.*)");

    private NativeCallBench() {
    }

    /** The hot calls, in the order of the C program. */
    enum Call {
        EVENT_QUERY("cuEventQuery", "completed event"),
        CTX_SET_CURRENT("cuCtxSetCurrent", "context already current"),
        WRITE_VALUE("cuStreamWriteValue64_v2", "one enqueue"),
        MEMCPY("cuMemcpyDtoDAsync_v2", "64 B, one enqueue"),
        LAUNCH("cuLaunchKernel", "empty kernel, one enqueue"),
        /** Not a driver call: an empty C function, the floor under each binding's calls. */
        NOTHING("native_calls_nothing", "an empty C function: the call alone");

        final String symbol;
        final String note;

        Call(String symbol, String note) {
            this.symbol = symbol;
            this.note = note;
        }

        boolean enqueues() {
            return this == WRITE_VALUE || this == MEMCPY || this == LAUNCH;
        }

        /** The call whose driver symbol is {@code symbol}, if one is. */
        static Optional<Call> bySymbol(String symbol) {
            return Arrays.stream(values()).filter(c -> c.symbol.equals(symbol)).findFirst();
        }
    }

    /** The options. */
    record Options(long iters, int rounds, int device, int idleSeconds, boolean cuda) {
    }

    /**
     * The C program's figures: median ns per call by call, those it skipped with why, or why there are none; and
     * its library build for the Java side's JVMs, or null.
     */
    record CSide(Map<Call, Double> medianNs, Map<Call, String> skipped, @Nullable String problem,
                 @Nullable Path library) {

        CSide(Map<Call, Double> medianNs, Map<Call, String> skipped, @Nullable String problem) {
            this(medianNs, skipped, problem, null);
        }

        CSide withLibrary(@Nullable Path built) {
            return new CSide(medianNs, skipped, problem, built);
        }
    }

    /** Runs the benchmark; returns the exit code. */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        Options o = BenchArgs.parseOrPrintUsage(args, NativeCallBench::parse, NAME, SYNOPSIS, err);
        if (o == null) {
            return ExitCodes.USAGE;
        }
        if (o.cuda()) {
            Optional<String> reason = CudaBackend.unavailableReason(o.device() + 1);
            if (reason.isPresent()) {
                err.println(NAME + ": the cuda backend is unavailable here: " + reason.get());
                return ExitCodes.USAGE;
            }
        }
        try {
            if (o.cuda()) {
                err.println("bench: native calls on GPU " + o.device() + ", " + o.iters() + " calls x " + o.rounds()
                        + " rounds, C first, then Java (JNA, FFM) ...");
                CSide c = measureC(o);
                JavaSide java = measureJava(o, c);
                out.print(callTable(o, c, java.byBinding(), java.cInFfmJvm()));
                out.println("Java's warm-up: " + java.warmUps().describe());
                out.print(threadTable(o, java));
            }
            if (o.idleSeconds() > 0) {
                err.println("bench: idle proxy service, " + o.idleSeconds() + " s per poller ...");
                out.print(idleTable(o));
            }
            return ExitCodes.OK;
        } catch (JmscclppException e) {
            err.println(NAME + ": " + e.getMessage());
            return ExitCodes.FAILURE;
        }
    }

    /** The options of {@code jmscclpp bench native}. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false, name = "native",
            description = "hot CUDA driver calls from C, JNA and FFM, and the CPU an idle proxy takes")
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--iters", paramLabel = "N", description = "calls per round (default: 20000)")
        long iters = 20_000;
        @Option(names = "--rounds", paramLabel = "R", description = "rounds, the median shown (default: 7)")
        int rounds = 7;
        @Option(names = "--device", paramLabel = "ORDINAL", description = "the GPU (default: 0)")
        int device;
        @Option(names = "--idle-seconds", paramLabel = "S", description = "seconds of idle proxy per poller, 0 skips"
                + " (default: 3)")
        int idleSeconds = 3;
        @Option(names = "--backend", paramLabel = "cuda|host", description = "cuda (default), or host: the idle"
                + " proxy only")
        String backend = "cuda";

        @Override
        public void check() {
            options();
        }

        Options options() {
            boolean cuda = switch (backend) {
                case "cuda" -> true;
                case "host" -> false;
                default -> throw new IllegalArgumentException("--backend is cuda or host, not " + backend);
            };
            if (!cuda && idleSeconds == 0) {
                // the host backend measures the idle proxy alone: nothing would run, and exit 0 with no table
                throw new IllegalArgumentException("--backend host measures only the idle proxy, which"
                        + " --idle-seconds 0 skips: nothing to measure");
            }
            return new Options(SampleArgs.range("--iters", iters, 1, Long.MAX_VALUE),
                    SampleArgs.range("--rounds", rounds, 1, Integer.MAX_VALUE),
                    SampleArgs.range("--device", device, 0, Integer.MAX_VALUE),
                    SampleArgs.range("--idle-seconds", idleSeconds, 0, 600), cuda);
        }
    }

    static Options parse(List<String> args) {
        return SampleArgs.parse(new Args(), args).options();
    }

    // ---------------------------------------------------------------------------------------------
    // C

    static CSide measureC(Options o) {
        Optional<Path> cc = ShmPingPongFloor.compiler();
        if (cc.isEmpty()) {
            return new CSide(Map.of(), Map.of(), "no C compiler (" + String.join(", ", ShmPingPongFloor.COMPILERS)
                    + ") on the PATH");
        }
        ExternalProgram.Compiled compiled = ExternalProgram.compile(cc.get().toString(), SOURCE, "native_calls",
                "jmscclpp-native-", COMPILE_TIMEOUT, List.of("-ldl"));
        if (compiled.binary() == null) {
            return new CSide(Map.of(), Map.of(), compiled.error());
        }
        // the same source as a library: the Java side's JVMs call its empty function and time its loops
        ExternalProgram.Compiled library = ExternalProgram.compile(cc.get().toString(), SOURCE, "libnative_calls.so",
                "jmscclpp-native-lib-", COMPILE_TIMEOUT, List.of("-shared", "-fPIC", "-DNATIVE_CALLS_LIBRARY", "-ldl"));
        return runC(compiled.binary(), o).withLibrary(library.binary());
    }

    private static CSide runC(Path binary, Options o) {
        ExternalProgram.Run run;
        try {
            run = ExternalProgram.run(List.of(binary.toString(), Integer.toString(o.device()),
                    Long.toString(o.iters()), Integer.toString(o.rounds())), RUN_TIMEOUT, ExternalProgram.Stop.KILL_TREE,
                    line -> line.startsWith("CALL ") || line.startsWith("SKIP "), 8, env -> { });
        } catch (IOException e) {
            return new CSide(Map.of(), Map.of(), "cannot run " + binary + ": " + e.getMessage());
        }
        if (run.timedOut() || run.exitCode() != 0) {
            return new CSide(Map.of(), Map.of(), (run.timedOut() ? "did not finish within " + RUN_TIMEOUT.toSeconds()
                    + " s" : "exited with " + run.exitCode()) + "; output tail: " + run.tail());
        }
        try {
            return parseC(run.lines(), o);
        } catch (IllegalStateException e) {
            return new CSide(Map.of(), Map.of(), e.getMessage() + "; output tail: " + run.tail());
        }
    }

    /**
     * The C program's {@code CALL} and {@code SKIP} lines.
     *
     * @throws IllegalStateException for a line of an unknown call or of other iterations, or a call with no line
     */
    static CSide parseC(List<String> lines, Options o) {
        Map<Call, Double> ns = new EnumMap<>(Call.class);
        Map<Call, String> skipped = new EnumMap<>(Call.class);
        for (String line : lines) {
            Matcher m = CALL_LINE.matcher(line.strip());
            if (m.matches()) {
                Call call = call(m.group(1), line);
                if (Long.parseLong(m.group(2)) != o.iters() || Integer.parseInt(m.group(3)) != o.rounds()) {
                    throw new IllegalStateException("asked for " + o.iters() + " calls x " + o.rounds()
                            + " rounds, the line says: " + line);
                }
                ns.put(call, Double.parseDouble(m.group(4)));
                continue;
            }
            Matcher s = SKIP_LINE.matcher(line.strip());
            if (s.matches()) {
                skipped.put(call(s.group(1), line), s.group(2));
            }
        }
        for (Call call : Call.values()) {
            if (!ns.containsKey(call) && !skipped.containsKey(call)) {
                throw new IllegalStateException("no line for " + call.symbol);
            }
        }
        return new CSide(ns, skipped, null);
    }

    private static Call call(String symbol, String line) {
        return Call.bySymbol(symbol)
                .orElseThrow(() -> new IllegalStateException("a line for an unknown call: " + line));
    }

    // ---------------------------------------------------------------------------------------------
    // Java

    /**
     * The Java side: each binding's calls on this (platform) thread, the FFM binding's again on a virtual thread
     * (what the default proxy poller runs on), and C's loops timed in FFM's JVM, in rounds alternated with its own.
     */
    record JavaSide(Map<CudaHotCalls.Binding, Map<Call, Double>> byBinding, Map<Call, Double> ffmOnVirtualThread,
                    Map<Call, Double> cInFfmJvm, WarmUps warmUps) {
    }

    /** How the untimed rounds before each measured call went: the most any took, how many did not settle. */
    static final class WarmUps {
        private int measured;
        private int mostRounds;
        private int unsettled;

        synchronized void add(int rounds, boolean settled) {
            measured++;
            mostRounds = Math.max(mostRounds, rounds);
            unsettled += settled ? 0 : 1;
        }

        synchronized String describe() {
            return String.format(Locale.ROOT, "%d to %d untimed rounds before each of the %d measured (binding, call)"
                    + " pairs, until two rounds in a row in which the JIT compiled at most %d ms (at most %d rounds): "
                    + "%s", NativeCallJava.JIT_WARMUP_ROUNDS, mostRounds, measured, JitSettle.QUIET_MILLIS,
                    NativeCallJava.JIT_WARMUP_MAX_ROUNDS,
                    unsettled == 0 ? "settled before every one" : "still compiling before " + unsettled);
        }
    }

    /**
     * Each binding's calls, each in a JVM of its own ({@link NativeCallJava}, as C runs in its own
     * process): a loop that one binding's calls trained is not the other's, whose calls would run it
     * while the JIT was still undoing the first one's assumptions.
     */
    private static JavaSide measureJava(Options o, CSide c) {
        Set<Call> skipped = EnumSet.noneOf(Call.class);
        skipped.addAll(c.skipped().keySet());
        if (c.library() == null) {
            skipped.add(Call.NOTHING);
        }
        String library = c.library() == null ? null : c.library().toString();
        Map<CudaHotCalls.Binding, Map<Call, Double>> byBinding = new EnumMap<>(CudaHotCalls.Binding.class);
        Map<Call, Double> virtual = new EnumMap<>(Call.class);
        Map<Call, Double> cInJvm = new EnumMap<>(Call.class);
        WarmUps warmUps = new WarmUps();
        for (CudaHotCalls.Binding binding : CudaHotCalls.Binding.values()) {
            Map<Call, Double> platform = new EnumMap<>(Call.class);
            List<String> problems = new ArrayList<>();
            BenchJob.Outcome outcome = BenchJob.run(Launcher.builder(1).mainClass(NativeCallJava.class.getName(),
                    NativeCallJava.args(binding, o, skipped, library)), RUN_TIMEOUT, line -> {
                        if (line.stderr()) {
                            return false;
                        }
                        NativeCallJava.Line l = NativeCallJava.Line.parse(line.text());
                        if (l == null) {
                            return false;
                        }
                        synchronized (problems) {
                            if (l.call() == null) {
                                warmUps.add(l.rounds(), l.settled());
                            } else if (l.binding() != binding) {
                                problems.add("a line of another binding: " + line.text());
                            } else {
                                (switch (l.where()) {
                                    case PLATFORM -> platform;
                                    case VIRTUAL -> virtual;
                                    case C_IN_JVM -> cInJvm;
                                }).put(l.call(), l.ns());
                            }
                        }
                        return true;
                    });
            synchronized (problems) {
                String error = outcome.error() != null ? outcome.error()
                        : !problems.isEmpty() ? String.join("; ", problems) : null;
                if (error != null) {
                    throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "the Java side through " + binding
                            + ": " + error + "; its last output: " + String.join(" | ", outcome.lastOutput()))
                            .phase("bench native").build();
                }
                byBinding.put(binding, platform);
            }
        }
        return new JavaSide(byBinding, virtual, cInJvm, warmUps);
    }

    /** The FFM calls on this platform thread beside the same on a virtual thread. */
    static String threadTable(Options o, JavaSide java) {
        StringBuilder sb = new StringBuilder();
        sb.append("\n| call, FFM | platform thread ns | virtual thread ns | virtual/platform |\n");
        sb.append("|---|---:|---:|---:|\n");
        Map<Call, Double> platform = java.byBinding().getOrDefault(CudaHotCalls.Binding.FFM, Map.of());
        for (Call call : Call.values()) {
            Double p = platform.get(call);
            Double v = java.ffmOnVirtualThread().get(call);
            sb.append(String.format(Locale.ROOT, "| %s | %s | %s | %s |%n", call.symbol, ns(p), ns(v), ratio(v, p)));
        }
        sb.append(String.format(Locale.ROOT, "%nthe same %d calls x %d rounds; the virtual thread's carrier made the"
                + " context current once before them%n", o.iters(), o.rounds()));
        return sb.toString();
    }

    /**
     * The calls' table: C's program, each binding, and C's loops in FFM's JVM ({@code cInJvm}, alternated with
     * FFM's rounds), judged against the target both ways; then what a call itself costs through each binding.
     */
    static String callTable(Options o, CSide c, Map<CudaHotCalls.Binding, Map<Call, Double>> java,
                            Map<Call, Double> cInJvm) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%nnative calls on GPU %d: ns per call, median of %d rounds of %d calls "
                + "(Java %s; the library's binding: %s)%n%n", o.device(), o.rounds(), o.iters(),
                Runtime.version(), CudaDriver.hotCalls().binding()));
        sb.append("| call | C ns | Java JNA ns | Java FFM ns | JNA/C | FFM/C | FFM ≤ 1.1× C | C in FFM's JVM ns "
                + "| FFM / C in its JVM | FFM ≤ 1.1× C in its JVM |\n");
        sb.append("|---|---:|---:|---:|---:|---:|---|---:|---:|---|\n");
        Map<Call, Double> jna = java.getOrDefault(CudaHotCalls.Binding.JNA, Map.of());
        Map<Call, Double> ffm = java.getOrDefault(CudaHotCalls.Binding.FFM, Map.of());
        for (Call call : Call.values()) {
            String skip = c.skipped().get(call);
            if (skip != null) {
                sb.append("| ").append(call.symbol).append(" | skipped: ").append(skip).append(" | | | | | | | | |\n");
                continue;
            }
            Double cNs = c.medianNs().get(call);
            Double f = ffm.get(call);
            Double j = jna.get(call);
            Double same = cInJvm.get(call);
            sb.append(String.format(Locale.ROOT, "| %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    call.symbol, call.note, ns(cNs), ns(j), ns(f), ratio(j, cNs), ratio(f, cNs), verdict(call, f, cNs),
                    ns(same), ratio(f, same), verdict(call, f, same)));
        }
        if (c.problem() != null) {
            sb.append("\nC side not measured: ").append(c.problem()).append('\n');
        }
        sb.append(bindingCost(c, jna, ffm, cInJvm));
        sb.append("\nibv_post_send, ibv_poll_cq: ").append(verbs()).append('\n');
        sb.append("\nC: native_calls.c, calls through dlsym'd pointers into the same libcuda; Java: CudaHotCalls.jna() "
                + "(JNA direct mapping) and CudaHotCalls.ffm() (java.lang.foreign; cuEventQuery and cuCtxSetCurrent "
                + "critical), each in a JVM of its own, measured as C measures (after untimed rounds: C one, Java as the"
                + " next line says). C in FFM's JVM: the same C loops built as a library and timed in FFM's JVM, on its"
                + " thread and objects, each timed round of FFM's followed by one of C's: the pair differs by the"
                + " binding alone, not by the process, the core or the moment. native_calls_nothing: an empty C"
                + " function of the same file, FFM critical and JNA direct as the driver's calls are bound: the last "
                + "columns' difference is what a call costs the binding itself.\n");
        return sb.toString();
    }

    /** Whether Java's {@code ns} is within the target of C's; the empty function is a floor, not a hot call. */
    private static String verdict(Call call, @Nullable Double ns, @Nullable Double c) {
        if (call == Call.NOTHING) {
            return "(floor)";
        }
        return c == null || ns == null ? "n/a" : ns <= TARGET_RATIO * c ? "yes" : "no";
    }

    /**
     * What the bindings add to a call (their figure for the empty C function less C's: FFM's against C in its JVM
     * where measured), beside what 1.1× of C's {@code cuCtxSetCurrent} leaves; empty without the figures.
     */
    static String bindingCost(CSide c, Map<Call, Double> jna, Map<Call, Double> ffm, Map<Call, Double> cInJvm) {
        Double floor = cInJvm.getOrDefault(Call.NOTHING, c.medianNs().get(Call.NOTHING));
        Double f = ffm.get(Call.NOTHING);
        Double j = jna.get(Call.NOTHING);
        Double set = cInJvm.getOrDefault(Call.CTX_SET_CURRENT, c.medianNs().get(Call.CTX_SET_CURRENT));
        if (floor == null || f == null) {
            return "";
        }
        return String.format(Locale.ROOT, "%nthe binding's own cost per call (its empty-function figure less C's, "
                + "%.1f ns): FFM critical %+.1f ns, JNA %s; 1.1× of cuCtxSetCurrent's C figure (%s ns) leaves %s ns%n",
                floor, f - floor, j == null ? "n/a" : String.format(Locale.ROOT, "%+.1f ns", j - floor), ns(set),
                set == null ? "n/a" : String.format(Locale.ROOT, "%.1f", (TARGET_RATIO - 1) * set));
    }

    /** Whether the verbs calls could be measured here, and why they are not. */
    private static String verbs() {
        Optional<String> reason = Verbs.unavailableReason();
        if (reason.isPresent()) {
            return "skipped, no libibverbs here (" + reason.get() + ")";
        }
        int[] count = new int[1];
        long list = Verbs.ibv_get_device_list(count);
        if (list != 0) {
            Verbs.ibv_free_device_list(list);
        }
        return count[0] == 0 ? "skipped, no RDMA device here"
                : "not measured: " + count[0] + " RDMA device(s) here, but this bench sets up no queue pair (the verbs "
                + "calls stay on JNA)";
    }

    private static String ns(@Nullable Double v) {
        return v == null ? "n/a" : String.format(Locale.ROOT, "%.1f", v);
    }

    private static String ratio(@Nullable Double v, @Nullable Double c) {
        return v == null || c == null || c <= 0 ? "n/a" : String.format(Locale.ROOT, "%.2f×", v / c);
    }

    // ---------------------------------------------------------------------------------------------
    // idle proxy

    /**
     * One window: the process's CPU and the poller's threads' ({@link CpuTime#proxyThreads}; -1 without a
     * proxy), in percent of a core.
     */
    record Idle(String what, double seconds, double processPercent, double pollerPercent) {
    }

    private static String idleTable(Options o) {
        List<Idle> rows = new ArrayList<>();
        Duration window = Duration.ofSeconds(o.idleSeconds());
        try (Backend backend = o.cuda() ? CudaBackend.open(o.device(), CudaBackend.Allocation.MEM_ALLOC)
                : HostBackend.open()) {
            rows.add(idle("no proxy service (the JVM at rest)", backend, null, window));
            for (ProxyService.Poller poller : ProxyService.Poller.values()) {
                rows.add(idle(poller.name(), backend, poller, window));
            }
            StringBuilder sb = new StringBuilder();
            sb.append(String.format(Locale.ROOT, "%nidle proxy service on the %s backend (%s): CPU over %d s with no "
                    + "trigger, percent of one core%n%n", o.cuda() ? "cuda" : "host", backend, o.idleSeconds()));
            sb.append("| poller | process CPU % | process − at rest % | poller threads CPU % | below 5% |\n"
                    + "|---|---:|---:|---:|---|\n");
            double rest = rows.getFirst().processPercent();
            for (Idle r : rows) {
                boolean baseline = r == rows.getFirst();
                double above = Math.max(0, r.processPercent() - rest);
                // the poller's threads' own figure; the process's rise over the JVM at rest where there is none
                double measure = r.pollerPercent() >= 0 ? r.pollerPercent() : above;
                sb.append(String.format(Locale.ROOT, "| %s | %.2f | %s | %s | %s |%n", r.what(), r.processPercent(),
                        baseline ? "" : String.format(Locale.ROOT, "%.2f", above),
                        r.pollerPercent() >= 0 ? String.format(Locale.ROOT, "%.2f", r.pollerPercent()) : "n/a",
                        baseline ? "" : measure < IDLE_TARGET_PERCENT ? "yes" : "no"));
            }
            sb.append("\nprocess CPU: ProcessHandle's total CPU time over the window (every thread of the JVM); "
                    + "poller threads: ThreadMXBean's CPU time of the threads the loop runs on: jmscclpp-proxy-N for the "
                    + "platform poller, the virtual-thread scheduler's carriers (ForkJoinPool-N-worker-M), delay "
                    + "scheduler (which ends timed parks) and unblocker for the virtual one.\n");
            return sb.toString();
        }
    }

    private static Idle idle(String what, Backend backend, ProxyService.@Nullable Poller poller, Duration window) {
        if (poller == null) {
            long cpu = CpuTime.processNanos();
            long start = System.nanoTime();
            rest(window);
            return new Idle(what, window.toSeconds(), percent(CpuTime.processNanos() - cpu, System.nanoTime() - start),
                    -1);
        }
        try (ProxyService proxy = ProxyService.builder(backend).poller(poller).build()) {
            proxy.start();
            // let the loop pass its idle spin and settle into parking before the window opens
            rest(Duration.ofMillis(200));
            Predicate<String> pollerThreads = CpuTime.proxyThreads(poller);
            long threadCpu = CpuTime.threadsNanos(pollerThreads);
            long cpu = CpuTime.processNanos();
            long start = System.nanoTime();
            rest(window);
            long wall = System.nanoTime() - start;
            double process = percent(CpuTime.processNanos() - cpu, wall);
            double thread = percent(CpuTime.threadsNanos(pollerThreads) - threadCpu, wall);
            proxy.stop().block(ProxyService.DEFAULT_STOP_TIMEOUT.plusSeconds(1));
            return new Idle(what, window.toSeconds(), process, thread);
        }
    }

    private static double percent(long cpuNanos, long wallNanos) {
        return 100 * CpuTime.cores(cpuNanos, wallNanos);
    }

    /** Parks the calling thread for the measurement window itself (this is what is measured, not a wait for something). */
    private static void rest(Duration d) {
        long deadline = System.nanoTime() + d.toNanos();
        for (long left = d.toNanos(); left > 0; left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }
}
