package org.jmscclpp.cli;

import java.io.PrintStream;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import org.jmscclpp.bench.BootstrapBench;
import org.jmscclpp.bench.CollBench;
import org.jmscclpp.bench.CollOptions;
import org.jmscclpp.bench.CudaProxyBench;
import org.jmscclpp.bench.EthernetBench;
import org.jmscclpp.bench.ProxyBench;
import org.jmscclpp.bench.TuneCommand;
import org.jmscclpp.bench.WriteBench;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.samples.ExitCodes;

/**
 * The {@code jmscclpp} command line ({@code bin/jmscclpp} runs it):
 * <pre>
 * jmscclpp run -n N [--timeout SECONDS] SAMPLE [args...]   start N ranks of SAMPLE on this host
 * jmscclpp SAMPLE [args...]                                run one rank; who it is comes from the environment
 * jmscclpp bench bootstrap [options]                       TcpBootstrap latency table
 * jmscclpp bench write [options]                           HOST_IPC write bandwidth beside an in-process copy
 * jmscclpp bench ethernet [options]                        ETHERNET bandwidth and ping-pong beside raw TCP
 * jmscclpp bench proxy [options]                           proxy pollers, triggers and PortChannel ping-pong beside C
 * jmscclpp bench proxy --backend cuda [options]            the GPU paths between two GPUs beside MSCCL++ C++ 0.10
 * jmscclpp bench coll [options]                            a collective's sweep in nccl-tests' style, beside NCCL
 * jmscclpp bench plot --json RESULTS.json --plot FILE.png   draws a sweep that bench coll --json wrote
 * jmscclpp bench tune --json SWEEP.json ...                 the tuning table the sweeps measured
 * jmscclpp help                                            this text
 * </pre>
 * Exit codes: 0 success, 1 failure, 2 usage error.
 */
public final class Main {

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

    /** The command line without exiting: returns the exit code. */
    static int run(List<String> args, PrintStream out, PrintStream err, Map<String, String> env) {
        if (args.isEmpty()) {
            err.print(usage());
            return ExitCodes.USAGE;
        }
        String command = args.getFirst();
        List<String> rest = args.subList(1, args.size());
        return switch (command) {
            case "help", "-h", "--help" -> {
                out.print(usage());
                yield ExitCodes.OK;
            }
            case "run" -> RunCommand.run(rest, out, err);
            case "bench" -> bench(rest, out, err);
            default -> runRank(command, rest, err, env);
        };
    }

    private static int bench(List<String> args, PrintStream out, PrintStream err) {
        String which = args.isEmpty() ? "" : args.getFirst();
        List<String> rest = args.isEmpty() ? args : args.subList(1, args.size());
        return switch (which) {
            case "bootstrap" -> BootstrapBench.run(rest, out, err);
            case "write" -> WriteBench.run(rest, out, err);
            case "ethernet" -> EthernetBench.run(rest, out, err);
            case "proxy" -> ProxyBench.run(rest, out, err);
            case "coll" -> CollBench.run(rest, out, err);
            case "plot" -> CollBench.plot(rest, out, err);
            case "tune" -> TuneCommand.run(rest, out, err);
            case "native" -> org.jmscclpp.bench.NativeCallBench.run(rest, out, err);
            default -> {
                err.println("jmscclpp bench: which benchmark? one of: bootstrap, write, proxy, ethernet, coll, plot, tune");
                err.println("usage: " + BootstrapBench.SYNOPSIS);
                err.println("       " + WriteBench.SYNOPSIS);
                err.println("       " + EthernetBench.SYNOPSIS);
                err.println("       " + ProxyBench.SYNOPSIS);
                err.println("       " + CudaProxyBench.SYNOPSIS);
                err.println("       " + CollOptions.SYNOPSIS);
                err.println("       " + CollBench.PLOT_SYNOPSIS);
                err.println("       " + TuneCommand.SYNOPSIS);
                yield ExitCodes.USAGE;
            }
        };
    }

    private static int runRank(String name, List<String> args, PrintStream err, Map<String, String> env) {
        Samples.Entry entry = Samples.find(name).orElse(null);
        if (entry == null) {
            err.println("jmscclpp: unknown command or sample '" + name + "'; " + sampleNames());
            err.println("run 'jmscclpp help' for usage");
            return ExitCodes.USAGE;
        }
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

    static String usage() {
        StringBuilder sb = new StringBuilder();
        sb.append("usage: jmscclpp COMMAND\n\n");
        sb.append("  jmscclpp run -n N [--timeout SECONDS] SAMPLE [args...]\n");
        sb.append("      start N ranks of SAMPLE on this host (default timeout ")
                .append(RunCommand.DEFAULT_TIMEOUT.toSeconds()).append(" s); output lines get a [rank R] prefix\n");
        sb.append("  jmscclpp SAMPLE [args...]\n");
        sb.append("      run one rank of SAMPLE under a launcher: mpirun -np N (the id goes through its PMIx server),\n");
        sb.append("      torchrun --no-python (through its TCPStore), srun (PMIx, else the first node), or with\n");
        sb.append("      JMSCCLPP_RANK, JMSCCLPP_WORLD_SIZE and MSCCLPP_COMM_ID=ip:port (which overrides any launcher's);\n");
        sb.append("      where rank 0 hosts the root at an address, every rank needs the same MSCCLPP_BOOTSTRAP_SECRET\n");
        sb.append("      (16+ characters; run sets one) or MSCCLPP_BOOTSTRAP_INSECURE=1\n");
        sb.append("  jmscclpp ").append(BootstrapBench.SYNOPSIS.substring("jmscclpp ".length())).append('\n');
        sb.append("      TcpBootstrap latencies: separate processes and ranks in one JVM, beside Open MPI\n");
        sb.append("  jmscclpp ").append(WriteBench.SYNOPSIS.substring("jmscclpp ".length())).append('\n');
        sb.append("      HOST_IPC write bandwidth between two processes, beside an in-process copy of the same sizes\n");
        sb.append("  jmscclpp ").append(EthernetBench.SYNOPSIS.substring("jmscclpp ".length())).append('\n');
        sb.append("      ETHERNET write bandwidth and 1-int ping-pong between two processes, beside a raw TCP socket pair\n");
        sb.append("  jmscclpp ").append(ProxyBench.SYNOPSIS.substring("jmscclpp ".length())).append('\n');
        sb.append("      ProxyService and PortChannel between two processes: virtual- beside platform-thread poller\n");
        sb.append("      (trigger cost, triggers/s, ping-pong 1 to 4M ints), ping-pong beside a C shared-memory floor\n");
        sb.append("  jmscclpp ").append(CudaProxyBench.SYNOPSIS.substring("jmscclpp ".length())).append('\n');
        sb.append("      the same on two GPUs over CUDA_IPC: FIFO, d2d semaphore, PortChannel round trip and bandwidth,\n");
        sb.append("      LL8/LL16 packets beside MSCCL++ C++ 0.10's figures, and the hot driver bindings' cost per call\n");
        sb.append("  jmscclpp ").append(CollOptions.SYNOPSIS.substring("jmscclpp ".length())).append('\n');
        sb.append("      a collective's sweep over sizes in nccl-tests' style (time, algbw, busbw, #wrong per size,\n");
        sb.append("      out-of-place and in-place) on the library's CollectiveComm, any type and reduction;\n");
        sb.append("      --baseline nccl adds NCCL's time and the ratio (cuda backend), --staged on the time on\n");
        sb.append("      unregistered buffers; prints the Mono form's call overhead at 1 KiB\n");
        sb.append("  jmscclpp ").append(CollBench.PLOT_SYNOPSIS.substring("jmscclpp ".length())).append('\n');
        sb.append("      draws busbw and time against size from a sweep's --json (where a JDK with java.desktop is)\n");
        sb.append("  jmscclpp help\n\n");
        sb.append("samples:\n");
        for (Samples.Entry e : Samples.all()) {
            if (!e.internal()) {
                sb.append(String.format("  %-16s %s%n", e.name(), e.synopsis()));
            }
        }
        sb.append("\nexit codes: 0 success, 1 failure, 2 usage error\n");
        return sb.toString();
    }
}
