package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import org.jmscclpp.cuda.CudaBackend;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The application samples on two GPUs, one rank each: {@code train-step} (the kernels of
 * {@code train_step.cu}, the CUDA collective communicator's allReduce on registered device
 * memory, the completions driving the updates; every weight of both ranks exact) and
 * {@code shuffle --backend cuda} (allToAll and a group of sends and receives on device memory;
 * every record checked). Each test prints every rank's output, the record of the run. Aborted,
 * with the reason, where fewer than two GPUs (or no NVRTC) are found. {@code bin/gpu-tests} runs
 * them from a bundle (the samples' test-jar is in it: {@code gpu-tests --select-class
 * org.jmscclpp.samples.AppSamplesGpuTest}); with Maven,
 * {@code ./mvnw -pl samples -am test -Dtest=AppSamplesGpuTest -Dsurefire.failIfNoSpecifiedTests=false}.
 */
@Tag("gpu")
class AppSamplesGpuTest {

    private static final Duration DEADLINE = Duration.ofMinutes(4);

    @BeforeAll
    static void needsTwoGpus() {
        CudaBackend.unavailableReason(2).ifPresent(reason -> Assumptions.abort("needs 2 GPUs: " + reason));
    }

    @Test
    @Timeout(300)
    void trainStepOnTwoGpusOverlapsAndEveryWeightIsExact() throws Exception {
        List<String> out = run(TrainStepSample.NAME, List.of("--backend", "cuda", "--buckets", "8", "--bucket-floats",
                "1M", "--steps", "5"));
        assertEquals(7, out.size(), String.join("\n", out));
        assertTrue(out.get(0).endsWith(", cuda backend"), String.join("\n", out));
        assertEquals("train-step: after 5 steps every weight on every rank equals its exact value (16777216 weights"
                + " checked): OK", out.get(6));
    }

    @Test
    @Timeout(300)
    void shuffleOnTwoGpusGivesEveryRankExactlyItsKeys() throws Exception {
        List<String> out = run(ShuffleSample.NAME, List.of("--backend", "cuda", "--records", "1000000"));
        assertTrue(out.getFirst().endsWith("cuda backend, registered buffers"), String.join("\n", out));
        assertEquals("shuffle: every rank received exactly its keys (2000000 records checked): OK", out.getLast());
    }

    /** Runs {@code sample} on 2 ranks, prints every line, and returns rank 0's standard output once every rank exited 0. */
    private static List<String> run(String sample, List<String> args) throws InterruptedException {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        List<String> jvm = new ArrayList<>();
        String jna = System.getProperty("jna.library.path");
        if (jna != null) {
            jvm.add("-Djna.library.path=" + jna);
        }
        try (Launcher.Job job = Launcher.builder(2).sample(sample, args).jvmArgs(jvm).output(lines::add).start()) {
            boolean finished = job.waitFor(DEADLINE);
            String all = lines.stream().map(l -> "[rank " + l.rank() + (l.stderr() ? " err" : "") + "] " + l.text())
                    .collect(Collectors.joining("\n"));
            System.out.println(all);
            assertTrue(finished, "ranks still running after " + DEADLINE + "\n" + all);
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + all);
        }
        return lines.stream().filter(l -> l.rank() == 0 && !l.stderr()).map(Launcher.OutputLine::text).toList();
    }
}
