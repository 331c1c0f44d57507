package org.jmscclpp.bench;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Open MPI baseline of {@code jmscclpp bench bootstrap}: runs {@code bootstrap_mpi_bench.c} under
 * {@code mpirun} over TCP loopback and returns its numbers, so that the TcpBootstrap figures can be
 * read next to MPI's, measured on the same machine in the same run.
 *
 * <p>The C program uses the same method as the Java benchmark: a barrier before every timed
 * iteration, each rank timing its own call, the slowest rank per iteration, the median over the
 * iterations after the warm-up. Its keys are {@link #ALLGATHER_8B}, {@link #ALLGATHER_64KIB},
 * {@link #BARRIER}, {@link #BROADCAST_1MIB} (median microseconds) and, for two ranks only,
 * {@link #SENDRECV_RTT_8B} (microseconds) and {@link #SENDRECV_BW_1MIB} (GB/s, GB = 1e9 bytes).
 *
 * <p>The program is compiled with {@code mpicc} once per JVM into a temporary directory, from the
 * copy on the classpath (the samples jar carries {@code src/main/c}) or, failing that, from the
 * source tree.
 */
public final class MpiBaseline {

    private static final System.Logger LOG = System.getLogger(MpiBaseline.class.getName());

    /** MPI_Allgather of 8 bytes per rank, median µs. */
    public static final String ALLGATHER_8B = "allgather_8B";
    /** MPI_Allgather of 65536 bytes per rank, median µs. */
    public static final String ALLGATHER_64KIB = "allgather_64KiB";
    /** MPI_Barrier, median µs. */
    public static final String BARRIER = "barrier";
    /** MPI_Bcast of 1 MiB from rank 0, median µs. */
    public static final String BROADCAST_1MIB = "broadcast_1MiB";
    /** Two ranks only: 8-byte ping from rank 0 and 8-byte answer from rank 1, median round trip in µs. */
    public static final String SENDRECV_RTT_8B = "sendrecv_rtt_8B";
    /** Two ranks only: 1 MiB from rank 0 to rank 1 and a 1-byte ack, 1 MiB over the median time, GB/s. */
    public static final String SENDRECV_BW_1MIB = "sendrecv_bw_1MiB";

    static final String SOURCE_NAME = "bootstrap_mpi_bench.c";
    static final Duration MPIRUN_TIMEOUT = Duration.ofSeconds(120);
    private static final Duration COMPILE_TIMEOUT = Duration.ofSeconds(60);
    private static final int TAIL_LINES = 12;
    private static final Pattern RESULT_LINE =
            Pattern.compile("^MPI op=(\\S+) n=(\\d+) (median_us|value_GBps)=(\\S+)$");

    private MpiBaseline() {}

    /**
     * Runs the MPI benchmark with {@code nRanks} local processes and returns its numbers by key.
     * Blocks the calling thread until mpirun exits, at most {@link #MPIRUN_TIMEOUT} (plus the
     * one-time compilation); on timeout mpirun and its ranks are killed.
     *
     * @return the six keys for two ranks, the four collective keys otherwise; empty, after one
     *     line on stderr saying why, when {@code mpicc} or {@code mpirun} is not on the PATH, the
     *     compilation fails, mpirun fails or times out, or its output lacks an expected row
     * @throws IllegalArgumentException when {@code nRanks} or {@code iters} is below 1 or
     *     {@code warmup} is negative
     */
    public static Optional<Map<String, Double>> measure(int nRanks, int iters, int warmup) {
        if (nRanks < 1 || iters < 1 || warmup < 0) {
            throw new IllegalArgumentException(
                    "nRanks and iters must be >= 1 and warmup >= 0, got nRanks=" + nRanks + " iters=" + iters
                            + " warmup=" + warmup);
        }
        Optional<String> missing = missingTool();
        if (missing.isPresent()) {
            return unavailable(missing.get());
        }
        ExternalProgram.Compiled compiled = CompiledHolder.COMPILED;
        Path binary = compiled.binary();
        if (binary == null) {
            return unavailable(compiled.error());
        }
        List<String> command = List.of(
                "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", Integer.toString(nRanks),
                "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "pml", "ob1",
                binary.toString(), "--iters", Integer.toString(iters), "--warmup", Integer.toString(warmup));
        ExternalProgram.Run outcome;
        try {
            outcome = ExternalProgram.run(command, MPIRUN_TIMEOUT, ExternalProgram.Stop.TERMINATE_THEN_KILL,
                    line -> line.startsWith("MPI op="), TAIL_LINES, MpiBaseline::configureMpiEnvironment);
        } catch (IOException e) {
            return unavailable("cannot start mpirun: " + e.getMessage());
        }
        if (outcome.timedOut()) {
            return unavailable("mpirun -np " + nRanks + " did not finish within " + MPIRUN_TIMEOUT.toSeconds()
                    + " s and was killed; output tail: " + outcome.tail());
        }
        if (outcome.exitCode() != 0) {
            return unavailable("mpirun -np " + nRanks + " exited with " + outcome.exitCode() + "; output tail: "
                    + outcome.tail());
        }
        try {
            return Optional.of(parse(outcome.lines(), nRanks));
        } catch (IllegalStateException e) {
            return unavailable(e.getMessage() + "; output tail: " + outcome.tail());
        }
    }

    /** The reason the baseline cannot run here, when {@code mpicc} or {@code mpirun} is not on the PATH. */
    static Optional<String> missingTool() {
        for (String tool : List.of("mpicc", "mpirun")) {
            if (ExternalProgram.findOnPath(tool).isEmpty()) {
                return Optional.of(tool + " is not on the PATH (install openmpi-bin and libopenmpi-dev)");
            }
        }
        return Optional.empty();
    }

    /**
     * Reads the {@code MPI op=... n=... median_us|value_GBps=...} rows of the program's output,
     * ignoring every other line (mpirun's own notices).
     *
     * @throws IllegalStateException when a row is malformed, repeated, for another world size, or
     *     an expected key is missing
     */
    static Map<String, Double> parse(List<String> lines, int nRanks) {
        Map<String, Double> values = new LinkedHashMap<>();
        for (String line : lines) {
            Matcher m = RESULT_LINE.matcher(line.strip());
            if (!m.matches()) {
                continue;
            }
            String key = m.group(1);
            int n = Integer.parseInt(m.group(2));
            if (n != nRanks) {
                throw new IllegalStateException("row for n=" + n + " while running n=" + nRanks + ": " + line);
            }
            double value;
            try {
                value = Double.parseDouble(m.group(4));
            } catch (NumberFormatException e) {
                throw new IllegalStateException("unreadable value in row: " + line, e);
            }
            if (values.put(key, value) != null) {
                throw new IllegalStateException("row repeated for " + key);
            }
        }
        for (String key : expectedKeys(nRanks)) {
            if (!values.containsKey(key)) {
                throw new IllegalStateException("no row for " + key + " in mpirun's output");
            }
        }
        return Map.copyOf(values);
    }

    static List<String> expectedKeys(int nRanks) {
        List<String> keys = new ArrayList<>(List.of(ALLGATHER_8B, ALLGATHER_64KIB, BARRIER, BROADCAST_1MIB));
        if (nRanks == 2) {
            keys.add(SENDRECV_RTT_8B);
            keys.add(SENDRECV_BW_1MIB);
        }
        return List.copyOf(keys);
    }

    private static Optional<Map<String, Double>> unavailable(String reason) {
        LOG.log(Level.WARNING, "MPI baseline unavailable: {0}", reason);
        return Optional.empty();
    }

    /** The compiled program, or why there is none; initialised on first use, once per JVM. */
    private static final class CompiledHolder {
        static final ExternalProgram.Compiled COMPILED = compile();

        private CompiledHolder() {}
    }

    private static ExternalProgram.Compiled compile() {
        return ExternalProgram.compile("mpicc", SOURCE_NAME, "bootstrap_mpi_bench", "jmscclpp-mpi-", COMPILE_TIMEOUT);
    }

    /**
     * Makes mpirun work as root in a container and keeps every byte on loopback: the isolated
     * launcher forks the ranks locally (no ssh/rsh agent needed), the runtime's out-of-band channel
     * stays on lo, and ranks are not pinned to cores so that they share the CPUs the way the JVM
     * ranks of the Java benchmark do.
     */
    private static void configureMpiEnvironment(Map<String, String> env) {
        // A JVM that was itself started by mpirun or a resource manager would hand its job identity to
        // our mpirun, which then tries to join that job instead of starting its own.
        env.keySet().removeIf(k -> k.startsWith("PMIX_") || k.startsWith("SLURM_")
                || (k.startsWith("OMPI_") && !k.startsWith("OMPI_MCA_")));
        env.put("OMPI_ALLOW_RUN_AS_ROOT", "1");
        env.put("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        env.put("OMPI_MCA_plm", "isolated");
        env.put("OMPI_MCA_oob_tcp_if_include", "lo");
        env.put("OMPI_MCA_hwloc_base_binding_policy", "none");
    }
}
