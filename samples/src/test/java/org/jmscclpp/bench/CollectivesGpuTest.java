package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import org.jmscclpp.bench.nccl.NcclCommunicator;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Launcher;
import org.jmscclpp.samples.TestRankMain;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The collective samples and {@code bench coll} on two GPUs: the library's CUDA engine through the
 * Mono form (the samples) and the stream form with CUDA-graph timing (the bench), every element
 * checked by the data kernels, beside NCCL where it loads. Skipped, with the reason, without two GPUs.
 */
@Tag("gpu")
class CollectivesGpuTest {

    @BeforeAll
    static void needsTwoGpus() {
        CudaBackend.unavailableReason(2).ifPresent(reason -> Assumptions.abort("needs 2 GPUs: " + reason));
    }

    private static String run(List<String> sampleAndArgs) throws InterruptedException {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(2).sample(sampleAndArgs.getFirst(),
                sampleAndArgs.subList(1, sampleAndArgs.size())).output(lines::add).start()) {
            assertTrue(job.waitFor(Duration.ofSeconds(150)), "ranks still running");
            String all = lines.stream().map(l -> "[rank " + l.rank() + "] " + l.text())
                    .collect(Collectors.joining("\n"));
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + all);
            return all;
        }
    }

    @Test
    @Timeout(600)
    void everySampleChecksEveryElementOnTheGpus() throws Exception {
        for (List<String> sample : List.of(List.of("allreduce"), List.of("allgather"), List.of("reducescatter"),
                List.of("broadcast", "--root", "1"), List.of("reduce", "--redop", "max"), List.of("alltoall"),
                List.of("sendrecv"), List.of("allreduce", "-d", "f8e4m3", "--redop", "avg", "--bytes", "100K"),
                List.of("reducescatter", "-d", "int64", "--redop", "prod", "--algo", "ll16", "--bytes", "4K"))) {
            List<String> args = new ArrayList<>(sample);
            args.addAll(List.of("--backend", "cuda"));
            String all = run(args);
            assertTrue(all.contains("[rank 0] " + sample.getFirst() + ": every element checked on every rank: OK"),
                    all);
        }
    }

    @Test
    @Timeout(600)
    void benchCollTimesTheStreamFormInAGraphBesideNccl() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> args = new ArrayList<>(List.of("--backend", "cuda", "--op", "reducescatter", "-b", "1K",
                "-e", "16M", "-f", "16", "-n", "5", "-w", "2", "--graph", "2", "--staged", "on", "--overhead", "200"));
        if (NcclCommunicator.unavailableReason().isEmpty()) {
            args.addAll(List.of("--baseline", "nccl"));
        }
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = CollBench.run(args, o, e, TestRankMain.class.getName(), List.of(), CollBench::hostLacks);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(ExitCodes.OK, code, text + err.toString(StandardCharsets.UTF_8));
        assertTrue(text.contains("# Out of bounds values : 0 OK"), text);
        assertTrue(text.lines().anyMatch(l -> l.startsWith("# Call overhead at 1 KiB") && l.contains("Mono - stream")),
                text);
        System.out.print(text);
    }
}
