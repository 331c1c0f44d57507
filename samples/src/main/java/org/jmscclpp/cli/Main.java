package org.jmscclpp.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.function.Supplier;
import org.jmscclpp.bench.BenchCommands;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.SampleArgs;
import org.jmscclpp.samples.Version;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ParameterException;

/**
 * The {@code jmscclpp} command line ({@code bin/jmscclpp} runs it):
 * <pre>
 * jmscclpp run -n N [--timeout SECONDS] SAMPLE [args...]   start N ranks of SAMPLE on this host
 * jmscclpp SAMPLE [args...]                                run one rank; who it is comes from the environment
 * jmscclpp bench bootstrap|write|ethernet|proxy|coll|plot|tune|native [options]   the benchmarks
 * jmscclpp help [COMMAND...], --help, --version
 * </pre>
 * Every command, benchmark and sample reads its options with picocli from an annotated class
 * ({@code --opt value} and {@code --opt=value}; {@code -h}/{@code --help} prints its usage on stdout
 * and exits 0; {@code -V}/{@code --version} prints the version). Exit codes: 0 success, 1 failure
 * (wrong data, a failed rank), 2 usage error (what is wrong goes to stderr).
 */
public final class Main {

    /** The name of a command and what runs it once picocli has read and checked its options. */
    private interface Action {
        int run(Object options, List<String> args, PrintStream out, PrintStream err, Map<String, String> env);
    }

    /** A command of the tree: a supplier of fresh options (help and checks) and its action. */
    private record Leaf(String name, Supplier<Object> options, Action action) {
    }

    private Main() {
    }

    /** Runs the command line and exits the JVM with its exit code (Netty and Reactor threads do not hold it up). */
    public static void main(String[] args) {
        int code;
        try {
            code = run(List.of(args), System.out, System.err, System.getenv());
        } catch (Throwable t) {
            // System.exit below must run even after an Error, or non-daemon threads could keep the JVM up
            t.printStackTrace();
            code = ExitCodes.FAILURE;
        }
        System.out.flush();
        System.err.flush();
        System.exit(code);
    }

    /** The top level: what {@code jmscclpp --help} shows. */
    @Command(name = "jmscclpp", mixinStandardHelpOptions = true, versionProvider = Version.class,
            customSynopsis = {"jmscclpp run -n N [--timeout SECONDS] SAMPLE [args...]",
                    "       jmscclpp SAMPLE [args...]",
                    "       jmscclpp bench bootstrap|write|ethernet|proxy|coll|plot|tune|native [options]",
                    "       jmscclpp help [COMMAND...] | --help | --version", ""},
            description = {"jmscclpp run starts N ranks of a sample on this host (default timeout 600 s); output"
                    + " lines get a [rank R] prefix.",
                    "jmscclpp SAMPLE runs one rank of it under a launcher: mpirun -np N (the id goes through its PMIx"
                    + " server), torchrun --no-python (through its TCPStore), srun (PMIx, else the first node), or"
                    + " with JMSCCLPP_RANK, JMSCCLPP_WORLD_SIZE and MSCCLPP_COMM_ID=ip:port (which overrides any"
                    + " launcher's); where rank 0 hosts the root at an address, every rank needs the same"
                    + " MSCCLPP_BOOTSTRAP_SECRET (16+ characters; run sets one) or MSCCLPP_BOOTSTRAP_INSECURE=1.",
                    "jmscclpp bench runs the benchmarks (jmscclpp bench --help lists them).", ""},
            footer = {"", "'jmscclpp COMMAND --help' (or 'jmscclpp help bench coll') shows a command's options.",
                    "Exit codes: 0 success, 1 failure (wrong data, a failed rank), 2 usage error."})
    static final class Top {
    }

    /** The bench group: what {@code jmscclpp bench --help} shows. */
    @Command(name = "bench", mixinStandardHelpOptions = true, versionProvider = Version.class,
            description = "Benchmarks: tables on stdout, progress on stderr.")
    static final class Bench {
    }

    /** The command line without exiting: returns the exit code. */
    static int run(List<String> args, PrintStream out, PrintStream err, Map<String, String> env) {
        if (args.isEmpty()) {
            err.print(usage());
            return ExitCodes.USAGE;
        }
        String command = args.getFirst();
        List<String> rest = args.subList(1, args.size());
        switch (command) {
            case "-h", "--help" -> {
                out.print(usage());
                return ExitCodes.OK;
            }
            case "-V", "--version" -> {
                printVersion(out);
                return ExitCodes.OK;
            }
            case "help" -> {
                return help(rest, out, err);
            }
            case "bench" -> {
                return bench(rest, out, err, env);
            }
            default -> {
                Leaf leaf = commands().get(command);
                if (leaf == null) {
                    err.println("jmscclpp: " + (command.startsWith("-") ? "unknown option '" + command + "'"
                            : "unknown command or sample '" + command + "'") + "; " + sampleNames());
                    err.println("run 'jmscclpp --help' for usage");
                    return ExitCodes.USAGE;
                }
                return execute("jmscclpp " + command, leaf, rest, out, err, env);
            }
        }
    }

    private static int bench(List<String> args, PrintStream out, PrintStream err, Map<String, String> env) {
        String which = args.isEmpty() ? "" : args.getFirst();
        if (which.equals("-h") || which.equals("--help")) {
            out.print(benchUsage());
            return ExitCodes.OK;
        }
        if (which.equals("-V") || which.equals("--version")) {
            printVersion(out);
            return ExitCodes.OK;
        }
        Leaf leaf = benches().get(which);
        if (leaf == null) {
            err.println("jmscclpp bench: " + (which.isEmpty() ? "which benchmark?" : "no benchmark '" + which + "'")
                    + " one of: " + String.join(", ", benches().keySet()));
            err.print(benchUsage());
            return ExitCodes.USAGE;
        }
        return execute("jmscclpp bench " + which, leaf, args.subList(1, args.size()), out, err, env);
    }

    /** {@code help [COMMAND...]}: the usage of the whole or of one command, on stdout. */
    private static int help(List<String> args, PrintStream out, PrintStream err) {
        if (args.isEmpty()) {
            out.print(usage());
            return ExitCodes.OK;
        }
        // help is a command of the usage too: 'help help' shows its own
        if (args.getFirst().equals("-h") || args.getFirst().equals("--help")
                || args.size() == 1 && args.getFirst().equals("help")) {
            new CommandLine(new HelpCommand()).setCommandName("jmscclpp help").usage(out);
            return ExitCodes.OK;
        }
        Leaf leaf;
        String name;
        if (args.getFirst().equals("bench")) {
            if (args.size() == 1) {
                out.print(benchUsage());
                return ExitCodes.OK;
            }
            leaf = args.size() == 2 ? benches().get(args.get(1)) : null;
            name = "jmscclpp bench " + args.get(1);
        } else {
            leaf = args.size() == 1 ? commands().get(args.getFirst()) : null;
            name = "jmscclpp " + args.getFirst();
        }
        if (leaf == null) {
            err.println("jmscclpp help: no command '" + String.join(" ", args) + "'; run 'jmscclpp --help'");
            return ExitCodes.USAGE;
        }
        commandLine(name, leaf).usage(out);
        return ExitCodes.OK;
    }

    /**
     * Reads {@code args} into the leaf's options with picocli: prints the usage or the version when
     * asked, a usage error (exit 2) when an option is wrong, else runs the leaf.
     */
    private static int execute(String name, Leaf leaf, List<String> args, PrintStream out, PrintStream err,
                               Map<String, String> env) {
        CommandLine cl = commandLine(name, leaf);
        Object options = cl.getCommand();
        try {
            cl.parseArgs(args.toArray(String[]::new));
            if (cl.isUsageHelpRequested()) {
                cl.usage(out);
                return ExitCodes.OK;
            }
            if (cl.isVersionHelpRequested()) {
                printVersion(out);
                return ExitCodes.OK;
            }
            if (options instanceof SampleArgs.Checked c) {
                c.check();
            }
        } catch (ParameterException | IllegalArgumentException e) {
            err.println(name + ": " + e.getMessage());
            err.print(cl.getHelp().synopsisHeading() + cl.getHelp().synopsis(0));
            err.println("run '" + name + " --help' for more");
            return ExitCodes.USAGE;
        }
        return leaf.action().run(options, args, out, err, env);
    }

    private static CommandLine commandLine(String name, Leaf leaf) {
        Object options = leaf.options().get();
        CommandLine cl = SampleArgs.commandLine(options).setCommandName(name);
        if (options instanceof RunCommand) {
            // the sample's arguments follow its name untouched
            cl.setStopAtPositional(true);
        }
        return cl;
    }

    private static void printVersion(PrintStream out) {
        for (String line : new Version().getVersion()) {
            out.println(line);
        }
    }

    /** {@code run} and every sample, by name. */
    private static Map<String, Leaf> commands() {
        Map<String, Leaf> m = new LinkedHashMap<>();
        m.put("run", new Leaf("run", RunCommand::new, (o, a, out, err, env) -> startRun((RunCommand) o, out, err,
                env)));
        for (Samples.Entry e : Samples.all()) {
            m.put(e.name(), sampleLeaf(e));
        }
        return m;
    }

    private static Leaf sampleLeaf(Samples.Entry e) {
        return new Leaf(e.name(), () -> e.sample().options(), (o, a, out, err, env) -> runRank(e, a, err, env));
    }

    /** The benchmarks, by name. */
    private static Map<String, Leaf> benches() {
        Map<String, Leaf> m = new LinkedHashMap<>();
        for (BenchCommands.Bench b : BenchCommands.all()) {
            m.put(b.name(), new Leaf(b.name(), b.options(), (o, a, out, err, env) -> b.run(a, out, err)));
        }
        return m;
    }

    /** {@code run}: checks the sample's arguments against its options (its --help and --version too), then starts the ranks. */
    private static int startRun(RunCommand run, PrintStream out, PrintStream err, Map<String, String> env) {
        Samples.Entry entry = Samples.find(run.sample).orElseThrow();
        String name = "jmscclpp " + entry.name();
        CommandLine sample = commandLine(name, sampleLeaf(entry));
        try {
            sample.parseArgs(run.sampleArgs.toArray(String[]::new));
            if (sample.isUsageHelpRequested()) {
                sample.usage(out);
                return ExitCodes.OK;
            }
            if (sample.isVersionHelpRequested()) {
                printVersion(out);
                return ExitCodes.OK;
            }
            if (sample.getCommand() instanceof SampleArgs.Checked c) {
                c.check();
            }
        } catch (ParameterException | IllegalArgumentException e) {
            err.println("jmscclpp run: " + entry.name() + ": " + e.getMessage());
            err.println("run '" + name + " --help' for its options");
            return ExitCodes.USAGE;
        }
        return run.start(out, err);
    }

    /** {@code jmscclpp run ARGS} as {@link #run} would run it (tests). */
    static int runCommand(List<String> args, PrintStream out, PrintStream err) {
        List<String> all = new ArrayList<>(List.of("run"));
        all.addAll(args);
        return run(all, out, err, Map.of());
    }

    private static int runRank(Samples.Entry entry, List<String> args, PrintStream err, Map<String, String> env) {
        String name = entry.name();
        RankEnvironment rank;
        try {
            rank = RankEnvironment.from(env);
        } catch (JmscclppException e) {
            err.println("jmscclpp " + name + ": " + e.getMessage());
            return ExitCodes.USAGE;
        }
        try {
            return entry.sample().run(rank, args);
        } catch (JmscclppException e) {
            err.println("jmscclpp " + name + ": rank " + rank.rank() + ": " + e.getMessage());
            if (e.code() == ErrorCode.INVALID_USAGE) {
                return ExitCodes.USAGE;
            }
            for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
                err.println("  caused by: " + c);
            }
            return ExitCodes.FAILURE;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("jmscclpp " + name + ": rank " + rank.rank() + ": interrupted");
            return ExitCodes.FAILURE;
        } catch (Exception e) {
            err.println("jmscclpp " + name + ": rank " + rank.rank() + ": failed:");
            e.printStackTrace(err);
            return ExitCodes.FAILURE;
        }
    }

    /** "samples: a, b, c" (public samples only). */
    static String sampleNames() {
        StringJoiner names = new StringJoiner(", ", "samples: ", "");
        for (Samples.Entry e : Samples.all()) {
            if (!e.internal()) {
                names.add(e.name());
            }
        }
        return names.toString();
    }

    /** The whole usage: picocli's for the top level, with the commands, benchmarks and public samples. */
    static String usage() {
        CommandLine top = new CommandLine(new Top());
        top.addSubcommand("run", commandLine("run", commands().get("run")));
        top.addSubcommand("bench", benchCommandLine());
        top.addSubcommand("help", new CommandLine(new HelpCommand()));
        for (Samples.Entry e : Samples.all()) {
            if (!e.internal()) {
                CommandLine s = commandLine(e.name(), sampleLeaf(e));
                s.getCommandSpec().usageMessage().description(e.synopsis());
                top.addSubcommand(e.name(), s);
            }
        }
        return top.getUsageMessage().replace("\nCommands:\n", "\nCommands and samples:\n");
    }

    private static String benchUsage() {
        return benchCommandLine().getUsageMessage();
    }

    private static CommandLine benchCommandLine() {
        CommandLine bench = new CommandLine(new Bench()).setCommandName("jmscclpp bench");
        for (Map.Entry<String, Leaf> b : benches().entrySet()) {
            bench.addSubcommand(b.getKey(), commandLine(b.getKey(), b.getValue()));
        }
        return bench;
    }

    /** {@code help [COMMAND...]} in the top-level usage (run by {@link #help}). */
    @Command(name = "help", description = "This text, or a command's usage: help bench coll, help allgather.")
    static final class HelpCommand {
        @picocli.CommandLine.Parameters(arity = "0..2", paramLabel = "COMMAND")
        List<String> command = new ArrayList<>();
    }
}
