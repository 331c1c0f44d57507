package org.jmscclpp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Ranks started by the launchers a cluster already has, for real, each running {@code bin/jmscclpp allreduce}
 * with no jmscclpp variable: {@code mpirun} (Open MPI; CI installs it) shares the unique id through its PMIx
 * server, {@code srun} through PMIx or the step's first node (CI starts a single-node Slurm with
 * {@code .ci/start-slurm}), {@code torchrun} through its own c10d TCPStore (torch is not installed in CI, too
 * large for its budget: that test is skipped there, saying so). Needs the packaged jar, hence an integration test.
 */
class LaunchersIT {

    private static final Path SAMPLES = Path.of("").toAbsolutePath();
    private static final Path ROOT = SAMPLES.getParent();
    private static final Path SCRIPT = ROOT.resolve("bin/jmscclpp");
    private static final String CHECKED = "allreduce: every element checked on every rank: OK";

    private record Result(int code, String out, String err) {
    }

    private static boolean onPath(String tool) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(":"))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Path.of(dir, tool)));
    }

    private static Result run(Map<String, String> env, List<String> command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(SAMPLES.toFile());
        // the jar was packaged moments ago by this build; never start a nested build from a test
        pb.environment().put("JMSCCLPP_NO_BUILD", "1");
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        // this test's own launcher variables (a CI run inside some launcher) must not reach the ranks
        for (String v : List.of("JMSCCLPP_RANK", "JMSCCLPP_WORLD_SIZE", "MSCCLPP_COMM_ID", "RANK", "WORLD_SIZE",
                "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID",
                "MSCCLPP_BOOTSTRAP_SECRET", "MSCCLPP_BOOTSTRAP_INSECURE")) {
            pb.environment().remove(v);
        }
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()));
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", command) + " still running after 120 s");
        }
        return new Result(p.exitValue(), out.get(10, TimeUnit.SECONDS), err.get(10, TimeUnit.SECONDS));
    }

    private static String read(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "<unreadable: " + e + ">";
        }
    }

    private static List<String> mpirun(int ranks, String... more) {
        List<String> command = new ArrayList<>(List.of("mpirun", "--allow-run-as-root", "--oversubscribe",
                "-np", Integer.toString(ranks)));
        command.addAll(List.of(more));
        return command;
    }

    @Test
    void mpirunStartsFourRanksThatShareTheIdThroughPmixWithNoExtraVariable() throws Exception {
        Assumptions.assumeTrue(onPath("mpirun"), "mpirun is not installed (apt-get install openmpi-bin)");
        Result r = run(Map.of(), mpirun(4, SCRIPT.toString(), "allreduce", "--backend", "host"));
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("allreduce: 4 ranks"), r.out());
        assertTrue(r.out().contains(CHECKED), r.out());
    }

    @Test
    void mpirunWithoutLibpmixSaysWhatIsMissingAndHowToDoWithout() throws Exception {
        Assumptions.assumeTrue(onPath("mpirun"), "mpirun is not installed (apt-get install openmpi-bin)");
        Result r = run(Map.of(), mpirun(2, "-x", "JMSCCLPP_PMIX_LIBRARY=/nonexistent/libpmix.so.2",
                SCRIPT.toString(), "allreduce", "--backend", "host"));
        assertNotEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.err().contains("PMIx (libpmix) cannot be loaded"), r.err());
        assertTrue(r.err().contains("JMSCCLPP_PMIX_LIBRARY=/nonexistent/libpmix.so.2"), r.err());
        assertTrue(r.err().contains("MSCCLPP_COMM_ID"), r.err());
    }

    @Test
    void aRankThatNeverJoinsEndsThePmixFenceWithATimeoutAtTheDeadline() throws Exception {
        Assumptions.assumeTrue(onPath("mpirun"), "mpirun is not installed (apt-get install openmpi-bin)");
        // rank 1 is not a jmscclpp rank at all: it outlives rank 0's 2 s bootstrap deadline, then leaves
        long t0 = System.nanoTime();
        Result r = run(Map.of(), mpirun(2, "-x", "MSCCLPP_BOOTSTRAP_TIMEOUT=2", "bash", "-c",
                "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then sleep 15; exit 0; fi; exec " + SCRIPT
                        + " allreduce --backend host"));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertNotEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.err().contains("jmscclpp allreduce: rank 0: TIMEOUT"), r.err());
        assertTrue(r.err().contains("PMIx_Fence"), r.err());
        // mpirun ends the job when rank 0 exits 1: long before rank 1's 15 s are up
        assertTrue(ms < 14_000, "the job ended " + ms + " ms after it began");
    }

    @Test
    void mpirunWithAnExplicitCommIdUsesIt() throws Exception {
        Assumptions.assumeTrue(onPath("mpirun"), "mpirun is not installed (apt-get install openmpi-bin)");
        int port;
        try (var s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        // rank 0 hosts the root at an address: every rank needs the job's secret
        Result r = run(Map.of(), mpirun(2, "-x", "MSCCLPP_COMM_ID=127.0.0.1:" + port, "-x",
                "MSCCLPP_BOOTSTRAP_SECRET=" + secret(), SCRIPT.toString(), "allreduce", "--backend", "host"));
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.out().contains(CHECKED), r.out());
    }

    /** A fresh job secret, as a launcher would make one. */
    private static String secret() {
        byte[] b = new byte[32];
        new java.security.SecureRandom().nextBytes(b);
        return java.util.HexFormat.of().formatHex(b);
    }

    /** Whether a Slurm cluster answers here with a node that can run jobs. */
    private static boolean slurmUp() throws Exception {
        if (!onPath("sinfo") || !onPath("srun")) {
            return false;
        }
        Result r = run(Map.of(), List.of("sinfo", "-h", "-o", "%T"));
        return r.code() == 0 && r.out().lines().anyMatch(l -> l.matches("idle|mixed|allocated"));
    }

    private static final String NO_SLURM = "no Slurm node answers here (as root, .ci/start-slurm starts a "
            + "single-node Slurm: munged, slurmctld, slurmd from Debian's slurm-wlm and munge)";

    @Test
    void srunWithPmixStartsFourRanksThatShareTheIdThroughIt() throws Exception {
        Assumptions.assumeTrue(slurmUp(), NO_SLURM);
        Result r = run(Map.of(), List.of("srun", "--mpi=pmix", "-n", "4", "--overcommit", SCRIPT.toString(),
                "allreduce", "--backend", "host"));
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("allreduce: 4 ranks"), r.out());
        assertTrue(r.out().contains(CHECKED), r.out());
    }

    @Test
    void srunWithoutPmixHostsTheRootOnTheStepsFirstNode() throws Exception {
        Assumptions.assumeTrue(slurmUp(), NO_SLURM);
        // rank 0 hosts the root at an address: every rank needs the job's secret (srun exports the environment)
        Result r = run(Map.of("MSCCLPP_BOOTSTRAP_SECRET", secret()), List.of("srun", "--mpi=none", "-n", "2",
                "--overcommit", SCRIPT.toString(), "allreduce", "--backend", "host"));
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("allreduce: 2 ranks"), r.out());
        assertTrue(r.out().contains(CHECKED), r.out());
    }

    @Test
    void torchrunStartsTwoRanksThatShareTheIdThroughItsOwnStore() throws Exception {
        Assumptions.assumeTrue(onPath("torchrun"), "torchrun is not installed (pip install torch gives the CPU "
                + "wheel); CI does not install torch, the wheel is too large for its budget");
        Result r = run(Map.of(), List.of("torchrun", "--nproc-per-node=2", "--no-python", SCRIPT.toString(),
                "allreduce", "--backend", "host"));
        assertEquals(0, r.code(), r.out() + r.err());
        assertTrue(r.out().contains("allreduce: 2 ranks"), r.out());
        assertTrue(r.out().contains(CHECKED), r.out());
        assertTrue(!r.err().contains("Address already in use"), r.err());
    }
}
