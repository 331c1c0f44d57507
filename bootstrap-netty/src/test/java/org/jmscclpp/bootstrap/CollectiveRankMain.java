package org.jmscclpp.bootstrap;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.host.HostBackend;

/**
 * One rank of a multi-process collective test ({@link RankProcesses}): a {@link TcpBootstrap}, a
 * host backend over the test's directory, a {@link CollectiveComm}, and allreduces of
 * {@code count} int32 in a loop, each checked. Arguments {@code key=value}: {@code rank},
 * {@code nranks}, {@code address}, {@code shm-dir}, {@code rounds} (0: until killed or failed),
 * {@code timeout-ms} (each call's deadline), {@code shrink} ({@code true}: when a call fails naming a
 * peer, shrink the bootstrap without it and run three checked rounds on the survivors). Prints {@code ROUND k} after each checked round,
 * {@code OK} at the end, and {@code FAILED <code> peer=<peer> ms=<into the failing call> message=...}
 * on a {@link JmscclppException}.
 */
final class CollectiveRankMain {

    private CollectiveRankMain() {
    }

    public static void main(String[] args) {
        RankMain.exit(args, CollectiveRankMain::run);
    }

    private static int run(Map<String, String> a) {
        int rank = Integer.parseInt(RankMain.required(a, "rank"));
        int n = Integer.parseInt(RankMain.required(a, "nranks"));
        long rounds = Long.parseLong(a.getOrDefault("rounds", "0"));
        boolean shrink = a.getOrDefault("shrink", "false").equals("true");
        Duration timeout = Duration.ofMillis(Long.parseLong(a.getOrDefault("timeout-ms", "60000")));
        TcpBootstrap bs = TcpBootstrap.create(rank, n, BootstrapOptions.builder().initTimeout(Duration.ofSeconds(30))
                .operationTimeout(timeout).build());
        long[] callStart = {System.nanoTime()};
        try (HostBackend backend = HostBackend.open(Path.of(RankMain.required(a, "shm-dir")))) {
            bs.initialize(RankMain.required(a, "address")).block(Duration.ofSeconds(40));
            try {
                allReduces(bs, backend, rounds, timeout, callStart, "ROUND ");
                RankMain.say("OK");
                return RankMain.EXIT_OK;
            } catch (JmscclppException e) {
                if (!shrink || e.peer() == JmscclppException.NONE) {
                    throw e;
                }
                // NCCL's fault-tolerance recipe: drop the rank the error names, go on with the others
                RankMain.say("LOST peer=" + e.peer() + " message=" + e.getMessage().replace('\n', ' '));
                try (TcpBootstrap smaller = bs.shrink(List.of(e.peer()), Duration.ofSeconds(30))
                        .block(Duration.ofSeconds(40))) {
                    allReduces(smaller, backend, 3, timeout, callStart, "SHRUNK rank=" + smaller.rank() + " of "
                            + smaller.size() + " round ");
                    RankMain.say("OK");
                    return RankMain.EXIT_OK;
                }
            }
        } catch (JmscclppException e) {
            RankMain.say("FAILED " + e.code() + " peer=" + (e.peer() == JmscclppException.NONE ? "none" : e.peer())
                    + " ms=" + (System.nanoTime() - callStart[0]) / 1_000_000 + " message="
                    + e.getMessage().replace('\n', ' '));
            return RankMain.EXIT_FAILED;
        } finally {
            bs.close();
        }
    }

    /** Allreduces of {@code count} int32 over {@code bs}'s ranks, each checked; prints {@code say + k} after round k. */
    private static void allReduces(TcpBootstrap bs, HostBackend backend, long rounds, Duration timeout, long[] callStart,
                                   String say) {
        int rank = bs.rank();
        int n = bs.size();
        int count = 1 << 16;
        try (Communicator comm = Communicator.create(bs, backend);
             CollectiveComm coll = CollectiveComm.create(comm, CollectiveOptions.defaults().withTimeout(timeout))
                     .block(timeout.plusSeconds(10));
             DeviceBuffer buf = backend.allocate(4L * count)) {
            for (long k = 0; rounds == 0 || k < rounds; k++) {
                for (int i = 0; i < count; i++) {
                    buf.hostSegment().setAtIndex(ValueLayout.JAVA_INT, i, (int) (rank + k + i));
                }
                callStart[0] = System.nanoTime();
                coll.allReduce(buf, buf, count, DataType.INT32, ReduceOp.SUM).block(timeout.plusSeconds(10));
                for (int i = 0; i < count; i++) {
                    int expected = (int) (n * (k + i) + (long) n * (n - 1) / 2);
                    int got = buf.hostSegment().getAtIndex(ValueLayout.JAVA_INT, i);
                    if (got != expected) {
                        throw new AssertionError("round " + k + " element " + i + ": " + got + ", expected "
                                + expected);
                    }
                }
                RankMain.say(say + k);
            }
        }
    }
}
