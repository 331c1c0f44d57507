package org.jmscclpp.bench;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.spi.Closeables;
import org.jmscclpp.samples.Blocking;
import org.jmscclpp.samples.CollectiveBuffers;
import org.jmscclpp.samples.CollectiveJob;
import org.jmscclpp.samples.CollectiveRun;
import org.jmscclpp.samples.ExitCodes;
import org.jmscclpp.samples.Sample;

/**
 * {@code bench-coll-rank OPTIONS}: one rank of {@code jmscclpp bench coll} ({@link CollOptions}).
 * Opens the backend, a communicator over a {@link TcpBootstrap} and the library's collective
 * communicator ({@link CollectiveJob}: {@code --algo} or the tuning table), allocates a send and a
 * receive buffer of the sweep's largest S and registers them, and runs the sweep through
 * {@link CollectiveRunner} on them ({@link JmscclppTarget}: the stream form on CUDA, with
 * {@code --graph G} the timed enqueues are replays of a CUDA graph; the Mono form on the host
 * backend), taking turns per size with jmscclpp on unregistered buffers ({@code --staged on}: native
 * memory of this process on the host backend, device memory on CUDA) and with NCCL
 * ({@code --baseline nccl}, {@link NcclCollective}, on the registered buffers); then measures the
 * Mono form's call overhead at 1 KiB ({@link CallOverhead}). Rank 0 prints, on stdout, lines that
 * {@link CollBench} parses:
 * <pre>
 * COLL-DEV rank=0 pid=1234 host=h1 device=cuda CudaBackend[GPU 0 (NVIDIA H200, sm_90, 132 SMs), MEM_ALLOC]
 * COLL-VER name=nccl version=2.28.9
 * COLL-ROW impl=jmscclpp algo=ll16 size=1024 count=256 place=out time_us=3.1234 wrong=0
 * COLL-OVERHEAD algo=ll16 size=1024 count=256 calls=1000 mono_block_us=9.1 mono_pipelined_us=5.2 stream_us=4.9 stream_sync_us=8.7
 * </pre>
 * Exits 0 when every check on every rank found every element right, 1 otherwise (every rank knows).
 */
public final class CollBenchRankSample implements Sample {

    public static final String NAME = "bench-coll-rank";

    /** The deadline of every setup step, call and bootstrap exchange. */
    static final Duration TIMEOUT = Duration.ofSeconds(120);

    @Override
    public Object options() {
        return new CollOptions.Args();
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        CollOptions o = BenchArgs.parseForRank(NAME, args, CollOptions::parse);
        BenchArgs.requireRanks(NAME, env, o.ranks());
        int rank = env.rank();
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        try (TcpBootstrap bs = TcpBootstrap.create(rank, o.ranks(), options)) {
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            try (Backend backend = Backends.named(o.backend()); Communicator comm = Communicator.create(bs, backend)) {
                describe(bs, backend);
                long bytes = Math.max(maxSize(o), o.overhead() > 0 ? CollOptions.OVERHEAD_BYTES : 1);
                long wrong;
                try (CollectiveBuffers registered = CollectiveBuffers.allocate(backend, bytes)) {
                    try (CollectiveJob job = CollectiveJob.open(comm, o.kind(), o.algorithm(), TIMEOUT)) {
                        Blocking.done(registered.register(job.comm()), TIMEOUT.plusSeconds(5), rank, "register");
                        wrong = measure(job, registered, o);
                        // every rank is done with every call before any unmaps a peer's buffers ...
                        job.barrier("end");
                    }
                    // ... and every rank has unmapped the others' before any frees its own
                    Blocking.done(bs.barrier(TIMEOUT), TIMEOUT.plusSeconds(5), rank, "barrier (closed)");
                }
                return wrong > 0 ? ExitCodes.FAILURE : ExitCodes.OK;
            }
        }
    }

    /**
     * The sweep through every target {@code o} asks for, then the call overhead; rank 0 prints the
     * lines. Returns the wrong elements of every row.
     */
    private static long measure(CollectiveJob job, CollectiveBuffers registered, CollOptions o) {
        List<AutoCloseable> owned = new ArrayList<>();
        try {
            JmscclppTarget target = own(owned, JmscclppTarget.create(job, registered));
            List<CollTarget> targets = new ArrayList<>(List.of(target));
            if (o.staged()) {
                long bytes = registered.bytes();
                CollectiveBuffers unregistered = own(owned, job.backend().name().equals("host")
                        ? CollectiveBuffers.hostMemory(bytes) : CollectiveBuffers.allocate(job.backend(), bytes));
                targets.add(own(owned, JmscclppTarget.create(job, unregistered)));
            }
            if (o.nccl()) {
                NcclCollective nccl = own(owned, NcclCollective.create(job, registered));
                if (job.rank() == 0) {
                    say("COLL-VER name=nccl version=" + nccl.version());
                }
                targets.add(nccl);
            }
            long wrong = sweep(targets, job, o);
            CollectiveRun small = o.run(CollOptions.OVERHEAD_BYTES);
            if (o.overhead() > 0 && small.count() > 0) {
                CallOverhead measured = CallOverhead.measure(job, target, small, o.overhead());
                if (job.rank() == 0) {
                    say(measured.line());
                }
            }
            return wrong;
        } finally {
            Closeables.closeAll(owned.reversed());
        }
    }

    private static <T extends AutoCloseable> T own(List<AutoCloseable> owned, T resource) {
        owned.add(resource);
        return resource;
    }

    /** Runs the sweep of {@code o} through {@code targets}; rank 0 prints the rows. Returns the wrong elements of every row. */
    static long sweep(List<CollTarget> targets, CollectiveJob job, CollOptions o) {
        CollectiveRunner.Timing timing = o.graph() > 0 ? CollectiveRunner.Timing.graph(o.graph())
                : CollectiveRunner.Timing.direct();
        List<CollectiveRunner.Measurement> rows = CollectiveRunner.run(targets, job, o.plan(), o::run, timing, m -> {
            if (job.rank() == 0) {
                say(row(m));
            }
        });
        return rows.stream().mapToLong(m -> Math.max(0, m.wrong())).sum();
    }

    /** The largest S of the sweep after the count's rounding (at least 1 byte). */
    static long maxSize(CollOptions o) {
        long max = 1;
        for (long s : o.sizes()) {
            max = Math.max(max, o.run(s).size());
        }
        return max;
    }

    /** Every rank's process, host and device, printed by rank 0. */
    private static void describe(TcpBootstrap bs, Backend backend) {
        String mine = "pid=" + ProcessHandle.current().pid() + " host=" + hostName() + " device=" + device(backend);
        byte[] bytes = mine.getBytes(StandardCharsets.UTF_8);
        // allGather needs equal sizes: pad to a fixed length
        byte[] padded = new byte[256];
        System.arraycopy(bytes, 0, padded, 0, Math.min(bytes.length, padded.length));
        byte[] all = Blocking.value(bs.allGather(padded, TIMEOUT), TIMEOUT.plusSeconds(5), bs.rank(), "describe ranks");
        if (bs.rank() == 0) {
            for (int r = 0; r < bs.size(); r++) {
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
