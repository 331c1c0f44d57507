package org.jmscclpp.bench;

import java.io.PrintStream;
import java.util.List;
import java.util.function.Supplier;

/**
 * The benchmarks that {@code jmscclpp bench NAME} runs, in the order its usage lists them: each with
 * a fresh object of its picocli options (its {@code --help}, and the check before it runs) and the
 * method that runs it.
 */
public final class BenchCommands {

    /** What runs one benchmark: its arguments, stdout, stderr; the exit code. */
    @FunctionalInterface
    public interface Runner {
        int run(List<String> args, PrintStream out, PrintStream err);
    }

    /**
     * One benchmark.
     *
     * @param name    the word after {@code bench}
     * @param options a fresh object of its picocli options
     * @param runner  runs it
     */
    public record Bench(String name, Supplier<Object> options, Runner runner) {

        /** Runs the benchmark with {@code args}. */
        public int run(List<String> args, PrintStream out, PrintStream err) {
            return runner.run(args, out, err);
        }
    }

    private BenchCommands() {
    }

    /** Every benchmark. */
    public static List<Bench> all() {
        return List.of(
                new Bench("bootstrap", BootstrapBench.Args::new, BootstrapBench::run),
                new Bench("write", WriteBenchRankSample.Args::new, WriteBench::run),
                new Bench("proxy", ProxyBench.Args::new, ProxyBench::run),
                new Bench("ethernet", EthernetBenchRankSample.Args::new, EthernetBench::run),
                new Bench("coll", CollOptions.Args::new, CollBench::run),
                new Bench("plot", CollBench.PlotArgs::new, CollBench::plot),
                new Bench("tune", TuneCommand.Args::new, TuneCommand::run),
                new Bench("native", NativeCallBench.Args::new, NativeCallBench::run));
    }
}
