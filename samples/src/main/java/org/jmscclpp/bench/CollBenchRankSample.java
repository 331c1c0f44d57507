package org.jmscclpp.samples;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import org.jmscclpp.bench.BenchArgs;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.cli.Main;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;

/**
 * {@code bench-coll-rank OPTIONS}: one rank of {@code jmscclpp bench coll} ({@link CollOptions},
 * with {@code --algo} always given). Opens the backend, a communicator over a {@link TcpBootstrap},
 * the collective of the registry ({@link CollectiveAlgorithms}) for the largest size, and runs the
 * sweep through {@link CollectiveRunner}; with {@code --baseline nccl} the same sweep again through
 * NCCL ({@link NcclCollective}); with {@code --graph G} the timed enqueues are replays of a CUDA
 * graph. Rank 0 prints, on stdout, lines that {@link CollBench} parses:
 * <pre>
 * COLL-DEV rank=0 pid=1234 host=h1 device=cuda CudaBackend[GPU 0 (NVIDIA H200, sm_90, 132 SMs), MEM_ALLOC]
 * COLL-VER name=nccl version=2.28.9
 * COLL-ROW impl=jmscclpp algo=ll16 size=1024 count=256 place=out time_us=3.1234 wrong=0
 * </pre>
 * Exits 0 when every check on every rank found every element right, 1 otherwise (every rank knows).
 */
public final class CollBenchRankSample implements Sample {

    public static final String NAME = "bench-coll-rank";

    /** The deadline of every setup step, synchronize and bootstrap exchange. */
    static final Duration TIMEOUT = Duration.ofSeconds(120);

    @Override
    public int run(RankEnvironment env, List<String> args) {
        CollOptions o = BenchArgs.parseForRank(NAME, args, CollOptions::parse);
        BenchArgs.requireRanks(NAME, env, o.ranks());
        String algorithm = o.algorithm();
        if (algorithm == null) {
            throw BenchArgs.usage(NAME, "--algo is required");
        }
        CollectiveAlgorithms.Entry entry = CollectiveAlgorithms.find(o.kind(), o.backend(), algorithm)
                .orElseThrow(() -> BenchArgs.usage(NAME, "no " + o.kind().label() + " algorithm '" + algorithm
                        + "' on the " + o.backend() + " backend"));
        int rank = env.rank();
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        try (TcpBootstrap bs = TcpBootstrap.create(rank, o.ranks(), options)) {
            Blocking.done(bs.initialize(env.rootAddress()), options.initTimeout().plusSeconds(5), rank, "initialize");
            try (Backend backend = Backends.named(o.backend()); Communicator comm = Communicator.create(bs, backend)) {
                CollectiveSetup setup = new CollectiveSetup(comm, maxSize(o), TIMEOUT);
                describe(setup);
                long wrong = 0;
                try (Collective c = entry.factory().apply(setup); CollectiveData data = CollectiveData.create(c, setup)) {
                    wrong += sweep(CollReport.JMSCCLPP, c, data, setup, o);
                }
                if (o.nccl()) {
                    try (NcclCollective c = NcclCollective.create(o.kind(), setup);
                         CollectiveData data = CollectiveData.create(c, setup)) {
                        if (rank == 0) {
                            say("COLL-VER name=nccl version=" + c.version());
                        }
                        wrong += sweep(CollReport.NCCL, c, data, setup, o);
                    }
                }
                // nobody releases memory a peer may still map
                CollectiveRunner.barrier(setup, "end");
                return wrong > 0 ? Main.FAILURE : Main.OK;
            }
        }
    }

    /** Runs the sweep of {@code o} through {@code c}; rank 0 prints the rows. Returns the wrong elements of every row. */
    static long sweep(String implementation, Collective c, CollectiveData data, CollectiveSetup setup, CollOptions o) {
        CollectiveRunner.Timing timing = o.graph() > 0 ? CollectiveRunner.Timing.graph(o.graph(), setup.timeout())
                : CollectiveRunner.Timing.direct(setup.timeout());
        List<CollectiveRunner.Measurement> rows = CollectiveRunner.run(implementation, c, data, setup, o.plan(),
                timing, m -> {
                    if (setup.rank() == 0) {
                        say(row(m));
                    }
                });
        return rows.stream().mapToLong(m -> Math.max(0, m.wrong())).sum();
    }

    /** The largest S of the sweep after the count's rounding (at least 1 byte). */
    static long maxSize(CollOptions o) {
        long max = 1;
        for (long s : o.sizes()) {
            long count = o.kind().count(s, o.ranks(), o.type());
            max = Math.max(max, o.kind().size(count, o.ranks(), o.type()));
        }
        return max;
    }

    /** Every rank's process, host and device, printed by rank 0. */
    private static void describe(CollectiveSetup setup) {
        String mine = "pid=" + ProcessHandle.current().pid() + " host=" + hostName() + " device="
                + device(setup.backend());
        byte[] bytes = mine.getBytes(StandardCharsets.UTF_8);
        // allGather needs equal sizes: pad to a fixed length
        byte[] padded = new byte[256];
        System.arraycopy(bytes, 0, padded, 0, Math.min(bytes.length, padded.length));
        byte[] all = Blocking.value(setup.bootstrap().allGather(padded, setup.timeout()),
                setup.timeout().plusSeconds(5), setup.rank(), "describe ranks");
        if (setup.rank() == 0) {
            for (int r = 0; r < setup.size(); r++) {
                String s = new String(all, r * padded.length, padded.length, StandardCharsets.UTF_8).strip();
                int end = s.indexOf('\0');
                say("COLL-DEV rank=" + r + " " + (end < 0 ? s : s.substring(0, end)));
            }
        }
    }

    static String device(Backend backend) {
        return backend.name().equals("host") ? "host CPU" : backend.name() + " " + backend;
    }

    static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            String h = System.getenv("HOSTNAME");
            return h == null || h.isBlank() ? "unknown-host" : h;
        }
    }

    /** The line of one row. */
    static String row(CollectiveRunner.Measurement m) {
        return String.format(Locale.ROOT, "COLL-ROW impl=%s algo=%s size=%d count=%d place=%s time_us=%.4f wrong=%d",
                m.implementation(), m.algorithm(), m.size(), m.count(), m.inPlace() ? "in" : "out", m.timeUs(),
                m.wrong());
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
