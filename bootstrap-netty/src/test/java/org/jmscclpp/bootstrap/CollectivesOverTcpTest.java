package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.host.HostBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The collective API over the real TCP bootstrap: the README's example, run as written on two
 * ranks of this JVM; allreduces between rank processes; and a rank killed with SIGKILL in the
 * middle of a loop of allreduces, which every survivor reports as REMOTE_ERROR long before its
 * 60-second deadline.
 */
class CollectivesOverTcpTest {

    static final Duration START = Duration.ofSeconds(60);

    @RegisterExtension
    final RankProcesses.Tracker jobs = new RankProcesses.Tracker();

    @TempDir
    Path shm;

    /** The README's "Collectives" example for CPU ranks, verbatim but for where the identity comes from. */
    static float[] readmeExample(RankEnvironment env) {
        Backend backend = Backends.named("host");
        float[] gradients = new float[1 << 20];                          // the service's own memory
        for (int i = 0; i < gradients.length; i++) {
            gradients[i] = env.rank() + i % 7;
        }
        DeviceBuffer mine = DeviceBuffer.wrap(MemorySegment.ofArray(gradients));
        float[] gathered = new float[env.worldSize() * 1024];
        Mono<Void> job = env.bootstrap()
            .flatMap(bootstrap -> {
                Communicator comm = Communicator.create(bootstrap, backend);
                DeviceBuffer shared = backend.allocate(4L * gradients.length);   // shared memory: zero-copy once registered
                shared.hostSegment().asSlice(4L * env.rank() * 1024, 4096).fill((byte) env.rank());
                return CollectiveComm.create(comm)
                    .flatMap(coll -> coll.register(shared)
                        .then(coll.allReduce(mine, mine, gradients.length,                 // staged, in place
                                DataType.FLOAT32, ReduceOp.AVG))
                        .then(coll.allGather(shared.slice(4L * env.rank() * 1024, 4096), shared, // in place, NCCL's layout
                                1024, DataType.FLOAT32))
                        .doOnSuccess(v -> MemorySegment.copy(shared.hostSegment(), ValueLayout.JAVA_FLOAT, 0,
                                gathered, 0, gathered.length))
                        .doFinally(s -> coll.close()))
                    .doFinally(s -> { comm.close(); shared.close(); bootstrap.close(); });
            });
        job.block();
        float[] out = new float[gradients.length + gathered.length];
        System.arraycopy(gradients, 0, out, 0, gradients.length);
        System.arraycopy(gathered, 0, out, gradients.length, gathered.length);
        return out;
    }

    @Test
    void theReadmeExampleRunsAsWritten() {
        int n = 2;
        String address = "127.0.0.1:" + freePort();
        List<float[]> results = Flux.range(0, n)
                .flatMap(r -> Mono.fromCallable(() -> readmeExample(new RankEnvironment(r, n, address, r)))
                        .subscribeOn(Schedulers.boundedElastic()))
                .collectList().block(Duration.ofSeconds(120));
        float[] expected = new float[(1 << 20) + n * 1024];
        for (int i = 0; i < 1 << 20; i++) {
            expected[i] = (0.5f * (n - 1) * n + n * (i % 7)) / n;
        }
        for (int q = 0; q < n; q++) {
            float v = Float.intBitsToFloat(q * 0x01010101);
            java.util.Arrays.fill(expected, (1 << 20) + q * 1024, (1 << 20) + (q + 1) * 1024, v);
        }
        for (float[] r : results) {
            assertArrayEquals(expected, r);
        }
    }

    @Test
    void allReducesBetweenRankProcesses() throws IOException {
        RankProcesses job = start(3, "rounds=20");
        for (int r = 0; r < 3; r++) {
            job.awaitLine(r, "OK"::equals, START);
            assertEquals(RankMain.EXIT_OK, job.waitFor(r, START), "exit code of rank " + r);
        }
        assertDirectoryEmpty();
    }

    @Test
    void aRankKilledDuringACollectiveLoopIsARemoteErrorOnEverySurvivor() throws IOException {
        int n = 4;
        int victim = 2;
        RankProcesses job = start(n, "rounds=0", "timeout-ms=60000");
        for (int r = 0; r < n; r++) {
            job.awaitLine(r, "ROUND 3"::equals, START);
        }
        long killedAt = System.nanoTime();
        job.kill(victim);
        assertNotEquals(0, job.waitFor(victim, START), "rank " + victim + " was killed");
        List<String> problems = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            if (r == victim) {
                continue;
            }
            RankProcesses.Line line = job.awaitLineStartingWith(r, "FAILED ", START);
            long ms = TimeUnit.NANOSECONDS.toMillis(line.nanos() - killedAt);
            System.out.printf("collective loop: rank %d failed %d ms after the kill: %s%n", r, ms, line.text());
            if (!line.text().startsWith("FAILED REMOTE_ERROR")) {
                problems.add("rank " + r + ": expected REMOTE_ERROR, got " + line.text());
            }
            if (ms > 15_000) {
                problems.add("rank " + r + " failed " + ms + " ms after the kill (deadline 60 s)");
            }
            assertEquals(RankMain.EXIT_FAILED, job.waitFor(r, START), "exit code of rank " + r);
        }
        assertTrue(problems.isEmpty(), String.join("\n", problems));
        // the survivors closed everything; what the killed process made stays (no exit hook runs on SIGKILL)
        try (var files = Files.list(shm)) {
            List<String> owners = files.map(p -> p.getFileName().toString().split("-")[1]).distinct().toList();
            assertTrue(owners.size() <= 1, "files of more than the killed process left: " + owners);
        }
        // until the next job on the host: its first buffer reclaims the dead process's files
        try (HostBackend next = HostBackend.open(shm); DeviceBuffer b = next.allocate(64)) {
            assertEquals(64, b.size());
        }
        assertDirectoryEmpty();
    }

    /**
     * Issue 19's shrink: four ranks allreduce in a loop; rank 2 is killed; each survivor's call
     * fails naming rank 2, and the survivors shrink the bootstrap without it (as NCCL's
     * ncclCommShrink) and finish three checked allreduces among the three of them, in the same
     * processes, renumbered 0, 1, 2 in the order of their old ranks.
     */
    @Test
    void theSurvivorsOfAKilledRankShrinkTheJobAndFinishTheirAllReduces() throws IOException {
        int n = 4;
        int victim = 2;
        RankProcesses job = start(n, "rounds=0", "timeout-ms=30000", "shrink=true");
        for (int r = 0; r < n; r++) {
            job.awaitLine(r, "ROUND 3"::equals, START);
        }
        job.kill(victim);
        assertNotEquals(0, job.waitFor(victim, START), "rank " + victim + " was killed");
        int newRank = 0;
        for (int r = 0; r < n; r++) {
            if (r == victim) {
                continue;
            }
            String lost = job.awaitLineStartingWith(r, "LOST ", START).text();
            assertTrue(lost.startsWith("LOST peer=" + victim + " "), "rank " + r + ": " + lost);
            job.awaitLine(r, ("SHRUNK rank=" + newRank + " of 3 round 2")::equals, START);
            job.awaitLine(r, "OK"::equals, START);
            assertEquals(RankMain.EXIT_OK, job.waitFor(r, START), "exit code of rank " + r);
            newRank++;
        }
    }

    private RankProcesses start(int n, String... more) {
        RankProcesses job = jobs.open("collectives-" + n, CollectiveRankMain.class);
        String address = "127.0.0.1:" + freePort();
        for (int r = 0; r < n; r++) {
            List<String> args = new ArrayList<>(List.of("rank=" + r, "nranks=" + n, "address=" + address,
                    "shm-dir=" + shm));
            args.addAll(List.of(more));
            job.start(r, args, Map.of());
        }
        return job;
    }

    private void assertDirectoryEmpty() throws IOException {
        try (var files = Files.list(shm)) {
            assertEquals(List.of(), files.map(p -> p.getFileName().toString()).sorted().toList(), "files left in " + shm);
        }
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
