package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.IntStream;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code train-step [--backend cuda|host] [--buckets 8] [--bucket-floats 1M] [--passes 256]
 * [--steps 5] [--op avg|sum]}: the communication of data-parallel training (PyTorch DDP's gradient
 * buckets) on the public collective API ({@link CollectiveComm}), with the compute it overlaps.
 *
 * <h2>A step</h2>
 * Every rank holds the same model, B buckets of F float weights. A step computes each bucket's
 * gradients (one kernel per bucket, in bucket order, on a compute stream), all-reduces each
 * bucket's gradients as soon as its kernel is done (float32, in place, on the registered gradient
 * buffer), and applies SGD ({@code w -= lr × g}, lr = 1/16, one kernel per bucket on an optimizer
 * stream) to each bucket as soon as its reduced gradients arrive. As Reactor code:
 * <pre>{@code
 * worker.backward(step)                                        // bucket b once its gradients are computed, in order
 *     .flatMapSequential(b -> comm.allReduce(g[b], g[b], F, FLOAT32, AVG).thenReturn(b), B)
 *     .doOnNext(worker::sgd)                                   // each completion drives that bucket's update
 *     .then(worker.drained())                                  // the step ends when every update is done
 * }</pre>
 * {@code flatMapSequential} subscribes each allReduce the moment its bucket is ready (subscribing
 * issues the call), in bucket order, without waiting for the previous reduction to complete:
 * every rank issues the same calls in the same order, as a communicator requires.
 *
 * <h2>The overlap on a GPU</h2>
 * The compute stream runs {@code bucketGradients} for bucket b and then writes b's sequence number
 * into a word of pinned host memory ({@code cuStreamWriteValue64}); a watcher thread reads the word
 * and emits b once the stream got past b's kernel (see {@link TrainStepWorker.Gpu}). The emission
 * issues b's allReduce in the Mono form, which the collective communicator enqueues on its own
 * stream: b's reduction runs on the GPU while the compute stream computes b + 1. Its completion
 * launches b's {@code sgdUpdate} on the optimizer stream. The gradient kernels use half of each
 * multiprocessor's threads, so the collective's kernels find room beside them. The stream form of
 * the CUDA communicator ({@code CudaCollectiveComm.on(stream)}) would not overlap here: enqueued on
 * the compute stream, b's allReduce would hold b + 1's kernel back (a stream runs in order), and
 * {@code CudaStream} has no event a second stream could wait for.
 *
 * <h2>On CPU ranks</h2>
 * With {@code --backend host} the same pipeline runs with a compute thread and an optimizer thread
 * in place of the streams ({@link TrainStepWorker.Host}), computing the same values in Java, and
 * the host engine's allReduce over shared memory: the sample's logic and its check run anywhere.
 *
 * <h2>What it measures</h2>
 * Three modes, each one untimed step first (it compiles the kernels, registers, warms up) and then
 * S timed steps, a barrier before each: compute-only (gradients and updates, no communication),
 * communication-only (the allReduce of every bucket, no compute) and the training step (both,
 * overlapped). Rank 0 prints each mode's mean step time (the slowest rank's), then
 * overlapped / (compute + comm), which is 1 without overlap, and overlapped / max(compute, comm),
 * which is 1 for a perfect one.
 *
 * <h2>What it checks</h2>
 * The weights are set to their initial values before the timed training steps; after the S
 * steps every rank compares every weight with its exact value ({@link TrainStepValues}: the
 * gradients are small integers, so sums are exact in fp32 and every weight is known to the bit),
 * and prints the first difference. Every rank exits 0 only if every weight of every rank was
 * right, 1 otherwise; bad arguments exit 2.
 *
 * <p>Flags: {@code --backend} {@code cuda} (default) or {@code host}; {@code --buckets} B (default
 * 8); {@code --bucket-floats} F (default 1M on cuda, 64K on host; suffixes K, M, G are powers of
 * 1024); {@code --passes} (fused multiply-adds per gradient element, the compute's cost: default
 * 256 on cuda, 16 on host; tune it so that compute-only and comm-only are alike); {@code --steps} S
 * (default 5); {@code --op} {@code avg} (default) or {@code sum}. Every wait has the bootstrap's
 * operation timeout.
 */
public final class TrainStepSample implements Sample {

    public static final String NAME = "train-step";
    public static final String SYNOPSIS = "[--backend cuda|host] [--buckets 8] [--bucket-floats 1M] [--passes 256] "
            + "[--steps 5] [--op avg|sum]: data-parallel training steps: a gradient kernel per bucket, each bucket "
            + "all-reduced as soon as it is computed, the completions driving SGD; prints the step time against "
            + "compute-only and comm-only, checks every weight";

    static final int MAX_BUCKETS = 1024;
    /**
     * FMA passes per gradient element on a GPU by default: at about 62 ns per pass for a bucket of
     * 1M floats (2 operations per element and pass at an H100/H200's fp32 rate), a bucket's kernel
     * takes about as long as its 4 MiB allReduce over NVLink.
     */
    static final int GPU_PASSES = 256;
    static final long GPU_BUCKET_FLOATS = 1 << 20;
    /** The CPU variant's defaults: one Java thread computes, so buckets are smaller and passes fewer. */
    static final int HOST_PASSES = 16;
    static final long HOST_BUCKET_FLOATS = 64 << 10;
    /** 4 GiB of gradients (and as much of weights) at most. */
    static final long MAX_FLOATS = 1L << 30;

    record Options(String backend, int buckets, long bucketFloats, int passes, int steps, ReduceOp op) {
    }

    /** The three modes of a step. */
    enum Mode {
        COMPUTE("compute-only"),
        COMMUNICATE("comm-only"),
        TRAIN("overlapped");

        final String label;

        Mode(String label) {
            this.label = label;
        }
    }

    /** One rank's result: mean nanoseconds per step of each mode, and the weights that were wrong. */
    record Outcome(long computeNanos, long commNanos, long overlappedNanos, long wrong) {
        static final int BYTES = 4 * Long.BYTES;

        byte[] encode() {
            return ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(computeNanos).putLong(commNanos)
                    .putLong(overlappedNanos).putLong(wrong).array();
        }

        static Outcome decode(byte[] all, int rank) {
            ByteBuffer b = ByteBuffer.wrap(all, rank * BYTES, BYTES).order(ByteOrder.LITTLE_ENDIAN);
            return new Outcome(b.getLong(), b.getLong(), b.getLong(), b.getLong());
        }

        /** The slowest rank's time of each mode, the wrong weights of all. */
        static Outcome worst(List<Outcome> all) {
            return new Outcome(all.stream().mapToLong(Outcome::computeNanos).max().orElse(0),
                    all.stream().mapToLong(Outcome::commNanos).max().orElse(0),
                    all.stream().mapToLong(Outcome::overlappedNanos).max().orElse(0),
                    all.stream().mapToLong(Outcome::wrong).sum());
        }
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        Options o = parse(args);
        int rank = env.rank();
        int n = env.worldSize();
        if (n > TrainStepValues.MAX_RANKS) {
            throw SampleArgs.usage(NAME, "runs at most " + TrainStepValues.MAX_RANKS + " ranks (the sums of gradients"
                    + " stay exact), not " + n);
        }
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        Duration timeout = options.operationTimeout();
        try (Backend backend = Backends.named(o.backend());
             TcpBootstrap bs = TcpBootstrap.create(rank, n, options)) {
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            if (rank == 0) {
                System.out.printf(Locale.ROOT, "%s: %d ranks, %d buckets of %d floats (%s of gradients), %d FMA passes,"
                        + " %d steps, %s, %s backend%n", NAME, n, o.buckets(), o.bucketFloats(),
                        ByteSizes.label(o.buckets() * o.bucketFloats() * Float.BYTES), o.passes(), o.steps(),
                        o.op().label(), backend.name());
            }
            Outcome mine;
            // closed in reverse: the collective communicator (and its registration), the worker, the communicator
            try (Communicator communicator = Communicator.create(bs, backend);
                 TrainStepWorker worker = TrainStepWorker.open(backend, rank, o.buckets(), o.bucketFloats(),
                         o.passes(), timeout);
                 CollectiveComm comm = Blocking.value(CollectiveComm.create(communicator), backstop(timeout), rank,
                         "collective setup")) {
                Blocking.done(comm.register(worker.gradients()), backstop(timeout), rank, "register the gradients");
                mine = new Trainer(bs, comm, worker, o, timeout).measure();
                // no rank frees its gradients while a peer's reduction may still read them
                Blocking.done(bs.barrier(timeout), backstop(timeout), rank, "barrier after the check");
            }
            byte[] all = Blocking.value(bs.allGather(mine.encode(), timeout), backstop(timeout), rank, "gather results");
            Outcome worst = Outcome.worst(IntStream.range(0, n).mapToObj(r -> Outcome.decode(all, r)).toList());
            if (rank == 0) {
                System.out.print(report(o, worst, (long) n * o.buckets() * o.bucketFloats()));
            }
            System.out.flush();
            return worst.wrong() == 0 ? ExitCodes.OK : ExitCodes.FAILURE;
        }
    }

    /** Rank 0's table and verdict. */
    static String report(Options o, Outcome worst, long weightsChecked) {
        StringBuilder b = new StringBuilder();
        String row = "%-13s %14s%n";
        b.append(String.format(Locale.ROOT, row, "mode", "step µs"));
        b.append(String.format(Locale.ROOT, row, Mode.COMPUTE.label, micros(worst.computeNanos())));
        b.append(String.format(Locale.ROOT, row, Mode.COMMUNICATE.label, micros(worst.commNanos())));
        b.append(String.format(Locale.ROOT, row, Mode.TRAIN.label, micros(worst.overlappedNanos())));
        long sum = worst.computeNanos() + worst.commNanos();
        long max = Math.max(worst.computeNanos(), worst.commNanos());
        b.append(String.format(Locale.ROOT, "%s: overlapped / (compute + comm) = %.3f, overlapped / max(compute, comm)"
                + " = %.3f (slowest rank, mean of %d steps)%n", NAME, (double) worst.overlappedNanos() / Math.max(1, sum),
                (double) worst.overlappedNanos() / Math.max(1, max), o.steps()));
        b.append(worst.wrong() == 0
                ? String.format(Locale.ROOT, "%s: after %d steps every weight on every rank equals its exact value "
                        + "(%d weights checked): OK%n", NAME, o.steps(), weightsChecked)
                : String.format(Locale.ROOT, "%s: FAILED: %d wrong weights%n", NAME, worst.wrong()));
        return b.toString();
    }

    private static String micros(long nanos) {
        return String.format(Locale.ROOT, "%.1f", nanos / 1e3);
    }

    private static Duration backstop(Duration timeout) {
        return timeout.plusSeconds(5);
    }

    /** One rank's measurements and check. */
    static final class Trainer {
        private final TcpBootstrap bs;
        private final CollectiveComm comm;
        private final TrainStepWorker worker;
        private final Options o;
        private final Duration timeout;
        private final int rank;
        private final List<DeviceBuffer> buckets = new ArrayList<>();

        Trainer(TcpBootstrap bs, CollectiveComm comm, TrainStepWorker worker, Options o, Duration timeout) {
            this.bs = bs;
            this.comm = comm;
            this.worker = worker;
            this.o = o;
            this.timeout = timeout;
            this.rank = comm.rank();
            long bytes = o.bucketFloats() * Float.BYTES;
            for (int b = 0; b < o.buckets(); b++) {
                buckets.add(worker.gradients().slice(b * bytes, bytes));
            }
        }

        Outcome measure() {
            worker.resetWeights();
            for (Mode mode : Mode.values()) {
                step(mode, 0);
            }
            long compute = timed(Mode.COMPUTE);
            long communicate = timed(Mode.COMMUNICATE);
            // the training starts from the initial weights: the steps above changed them
            worker.resetWeights();
            long overlapped = timed(Mode.TRAIN);
            try (Arena arena = Arena.ofConfined()) {
                TrainStepValues.Mismatch m = TrainStepValues.compare(worker.weights(arena), o.buckets(),
                        o.bucketFloats(), comm.size(), o.op(), o.steps());
                if (m.count() > 0) {
                    System.err.printf(Locale.ROOT, "%s: rank %d: %d wrong weights after %d steps; the first: %s%n",
                            NAME, rank, m.count(), o.steps(), m.first());
                }
                return new Outcome(compute, communicate, overlapped, m.count());
            }
        }

        /** The mean nanoseconds of steps 0 to S - 1 of {@code mode}, a barrier before each. */
        private long timed(Mode mode) {
            long total = 0;
            for (int s = 0; s < o.steps(); s++) {
                Blocking.done(bs.barrier(timeout), backstop(timeout), rank, "barrier before " + mode.label + " step "
                        + s);
                long start = System.nanoTime();
                step(mode, s);
                total += System.nanoTime() - start;
            }
            return total / o.steps();
        }

        private void step(Mode mode, int s) {
            Blocking.done(pipeline(mode, s), backstop(timeout), rank, mode.label + " step " + s);
        }

        /** One step of {@code mode}, lazily. */
        Mono<Void> pipeline(Mode mode, int step) {
            int concurrency = o.buckets();
            return switch (mode) {
                case COMPUTE -> worker.backward(step)
                        .doOnNext(worker::sgd)
                        .then(worker.drained());
                case COMMUNICATE -> Flux.range(0, o.buckets())
                        .flatMapSequential(this::allReduce, concurrency)
                        .then();
                case TRAIN -> worker.backward(step)
                        .flatMapSequential(this::allReduce, concurrency)
                        .doOnNext(worker::sgd)
                        .then(worker.drained());
            };
        }

        /** Bucket {@code b}'s gradients all-reduced in place; emits b when they are in the buffer. */
        private Mono<Integer> allReduce(int b) {
            DeviceBuffer g = buckets.get(b);
            return comm.allReduce(g, g, o.bucketFloats(), DataType.FLOAT32, o.op()).thenReturn(b);
        }
    }

    /** The options as picocli reads them. */
    @Command(mixinStandardHelpOptions = true, versionProvider = Version.class, sortOptions = false)
    static final class Args implements SampleArgs.Checked {
        @Option(names = "--backend", paramLabel = "cuda|host", description = "the backend (default: cuda)")
        String backend = "cuda";
        @Option(names = "--buckets", paramLabel = "B", description = "gradient buckets (default: 8)")
        int buckets = 8;
        @Option(names = "--bucket-floats", paramLabel = "F", converter = SampleArgs.Count.class,
                description = "floats per bucket, K/M suffixes (default: 1M on cuda, less on host)")
        @Nullable Long floats;
        @Option(names = "--passes", paramLabel = "P", description = "FMA passes of the compute per bucket")
        @Nullable Integer passes;
        @Option(names = "--steps", paramLabel = "S", description = "training steps (default: 5)")
        int steps = 5;
        @Option(names = "--op", paramLabel = "avg|sum", converter = SampleArgs.Reduction.class,
                description = "the gradients' reduction (default: avg)")
        ReduceOp op = ReduceOp.AVG;

        @Override
        public void check() {
            if (!backend.equals("host") && !backend.equals("cuda")) {
                throw new IllegalArgumentException("--backend is one of cuda, host, got '" + backend + "'");
            }
            SampleArgs.range("--buckets", buckets, 1, MAX_BUCKETS);
            if (floats != null) {
                SampleArgs.range("--bucket-floats", floats, 1, MAX_FLOATS);
            }
            if (passes != null) {
                SampleArgs.range("--passes", passes, 0, 1 << 20);
            }
            SampleArgs.range("--steps", steps, 1, 10_000);
            if (op != ReduceOp.AVG && op != ReduceOp.SUM) {
                throw new IllegalArgumentException("--op is one of avg, sum, got '" + op.label() + "'");
            }
            boolean host = backend.equals("host");
            if (buckets * bucketFloats(host) > MAX_FLOATS) {
                throw new IllegalArgumentException("--buckets × --bucket-floats must stay within " + MAX_FLOATS
                        + " floats (4 GiB), not " + buckets * bucketFloats(host));
            }
        }

        long bucketFloats(boolean host) {
            Long f = floats;
            return f != null ? f : host ? HOST_BUCKET_FLOATS : GPU_BUCKET_FLOATS;
        }
    }

    static Options parse(List<String> list) {
        Args a = SampleArgs.parse(NAME, new Args(), list);
        boolean host = a.backend.equals("host");
        Integer passes = a.passes;
        return new Options(a.backend, a.buckets, a.bucketFloats(host), passes != null ? passes
                : host ? HOST_PASSES : GPU_PASSES, a.steps, a.op);
    }

    @Override
    public Object options() {
        return new Args();
    }
}
