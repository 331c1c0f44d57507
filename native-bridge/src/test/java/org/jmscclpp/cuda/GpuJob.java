package org.jmscclpp.cuda;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.jmscclpp.testkit.ChildJvm;
import org.junit.jupiter.api.Assumptions;

/**
 * A job of one process per GPU on this host, each a JVM like this one running {@link GpuRankMain}
 * (or another main that calls {@link GpuRankMain#run}) with {@code JMSCCLPP_CUDA_DEVICE} set to its
 * rank (and {@code NCCL_NVLS_ENABLE=0}), bootstrapped over TCP on loopback. Waits for every rank
 * with a deadline, kills what is left, and fails with every rank's output when a rank failed;
 * returns the outputs otherwise (tests print them: they are the record of a GPU run). Public for
 * the GPU tests of other packages and modules.
 */
public final class GpuJob {

    private static final List<String> FLAGS = List.of("--enable-native-access=ALL-UNNAMED", "-Xmx1g", "-Xss1m");

    private GpuJob() {
    }

    /** How a rank's JVM is started: a process builder running {@code rankMain} with {@code flags} and {@code args}. */
    @FunctionalInterface
    interface RankProcess {
        ProcessBuilder builder(int rank, List<String> flags, Class<?> rankMain, List<String> args);
    }

    /** Every rank a JVM like this one, of this user. */
    static final RankProcess SAME_USER = (rank, flags, rankMain, args) ->
            new ProcessBuilder(ChildJvm.command(flags, rankMain, args));

    /**
     * {@code JMSCCLPP_TEST_SHARE_GPUS=1}: the tests that ask for more GPUs than this host has run anyway, their
     * ranks sharing the GPUs in turn ({@link #run}): a check of what the code computes on fewer GPUs, where
     * their kernels take turns on a GPU, so that no time they take means anything.
     */
    public static final String SHARE_ENV = "JMSCCLPP_TEST_SHARE_GPUS";

    /**
     * Aborts the calling tests, with the reason, where this host has no usable GPU or fewer than {@code n} (unless
     * {@value #SHARE_ENV}{@code =1} lets ranks share them).
     */
    public static void assumeGpus(int n) {
        assumeGpus(n, "1".equals(System.getenv(SHARE_ENV)));
    }

    /** A rank per GPU of this host, at most 8, and at least {@code least} (ranks share GPUs then, see {@link #SHARE_ENV}). */
    public static int ranks(int least) {
        return Math.max(least, Math.min(8, CudaContext.deviceCount()));
    }

    /** {@link #assumeGpus(int)} for jobs whose ranks cannot share a GPU (NCCL refuses two ranks on one GPU). */
    public static void assumeOwnGpus(int n) {
        assumeGpus(n, false);
    }

    private static void assumeGpus(int n, boolean share) {
        new CudaBackendProvider().unavailableReason().ifPresent(reason -> Assumptions.abort("no GPU here: " + reason));
        int gpus = CudaContext.deviceCount();
        Assumptions.assumeTrue(gpus >= n || share && gpus >= 1, "these tests need " + n + " GPUs, this host has "
                + gpus + (share ? "" : " (" + SHARE_ENV + "=1 runs them with ranks sharing the GPUs)"));
    }

    /** {@link #run}, then prints every rank's output under {@code [label rank R]}: the record of a GPU run. */
    static void runAndPrint(String label, int nRanks, Duration timeout, Path logs, String scenario, String... args) {
        runAndPrint(GpuRankMain.class, label, nRanks, timeout, logs, scenario, args);
    }

    /** {@link #runAndPrint(String, int, Duration, Path, String, String...)} with the ranks running {@code rankMain}. */
    public static void runAndPrint(Class<?> rankMain, String label, int nRanks, Duration timeout, Path logs,
                                   String scenario, String... args) {
        runAndPrint(rankMain, rank -> Map.of(), label, nRanks, timeout, logs, scenario, args);
    }

    /**
     * {@link #runAndPrint(Class, String, int, Duration, Path, String, String...)} with {@code envOf(rank)}
     * added to each rank's environment (a host id per rank, say).
     */
    public static void runAndPrint(Class<?> rankMain, IntFunction<Map<String, String>> envOf, String label,
                                   int nRanks, Duration timeout, Path logs, String scenario, String... args) {
        RankProcess start = (rank, flags, main, a) -> {
            ProcessBuilder pb = SAME_USER.builder(rank, flags, main, a);
            pb.environment().putAll(envOf.apply(rank));
            return pb;
        };
        List<String> outputs = run(start, rankMain, nRanks, timeout, logs, scenario, args);
        for (int rank = 0; rank < outputs.size(); rank++) {
            System.out.print("[" + label + " rank " + rank + "]\n" + outputs.get(rank));
        }
    }

    static List<String> run(int nRanks, Duration timeout, Path logs, String scenario, String... args) {
        return run(GpuRankMain.class, nRanks, timeout, logs, scenario, args);
    }

    /**
     * Runs {@code scenario} on {@code nRanks} processes, each running {@code rankMain}'s {@code main}
     * (one that calls {@link GpuRankMain#run}), and returns every rank's output, in rank order.
     */
    public static List<String> run(Class<?> rankMain, int nRanks, Duration timeout, Path logs, String scenario,
                                   String... args) {
        return run(SAME_USER, rankMain, nRanks, timeout, logs, scenario, args);
    }

    /** {@link #run(Class, int, Duration, Path, String, String...)} with each rank's process started as {@code start} says. */
    static List<String> run(RankProcess start, Class<?> rankMain, int nRanks, Duration timeout, Path logs,
                            String scenario, String... args) {
        String address = "127.0.0.1:" + freePort();
        // a fresh job secret, as jmscclpp run sets one: only these ranks can join
        byte[] secretBytes = new byte[16];
        new java.security.SecureRandom().nextBytes(secretBytes);
        String secret = java.util.HexFormat.of().formatHex(secretBytes);
        List<Process> processes = new ArrayList<>();
        List<Path> outputs = new ArrayList<>();
        // a GPU per rank; where there are fewer (a test that asked for fewer), ranks share them in turn
        int gpus = Math.max(1, CudaContext.deviceCount());
        try {
            for (int rank = 0; rank < nRanks; rank++) {
                List<String> a = new ArrayList<>(List.of("rank=" + rank, "nranks=" + nRanks, "address=" + address,
                        "scenario=" + scenario));
                a.addAll(List.of(args));
                Path out = logs.resolve(scenario + "-rank" + rank + ".log");
                ProcessBuilder pb = start.builder(rank, FLAGS, rankMain, a)
                        .redirectErrorStream(true).redirectOutput(out.toFile());
                pb.environment().put(CudaBackend.DEVICE_ENV, Integer.toString(rank % gpus));
                pb.environment().put("MSCCLPP_BOOTSTRAP_SECRET", secret);
                // NCCL must never use NVLink multicast on the shared GPU hosts
                pb.environment().put("NCCL_NVLS_ENABLE", "0");
                processes.add(pb.start());
                outputs.add(out);
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            boolean failed = false;
            for (Process p : processes) {
                long left = deadline - System.nanoTime();
                if (!p.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                    failed = true;
                    break;
                }
                failed |= p.exitValue() != 0;
            }
            List<String> texts = new ArrayList<>();
            for (int rank = 0; rank < nRanks; rank++) {
                processes.get(rank).destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                texts.add(Files.readString(outputs.get(rank), StandardCharsets.UTF_8));
            }
            if (failed) {
                StringBuilder all = new StringBuilder(scenario + " failed or ran past " + timeout + ":\n");
                for (int rank = 0; rank < nRanks; rank++) {
                    Process p = processes.get(rank);
                    all.append("--- rank ").append(rank).append(" exit ")
                            .append(p.isAlive() ? "none" : Integer.toString(p.exitValue())).append(" ---\n")
                            .append(texts.get(rank));
                }
                fail(all.toString());
            }
            return texts;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        } finally {
            processes.forEach(Process::destroyForcibly);
        }
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
