package org.jmscclpp.samples;

import static org.jmscclpp.samples.TrainStepValues.FLOAT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.cuda.CudaBackend;
import org.jmscclpp.cuda.CudaStream;
import org.jmscclpp.cuda.kernel.CudaModule;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Where one rank of {@code train-step} keeps its model and runs its kernels: the gradients
 * (every bucket, registered with the collective communicator by the caller) and the weights, a
 * compute queue for the gradient kernels and an optimizer queue for the SGD updates, each running
 * its work in order and asynchronously to the caller. {@link Gpu} is two CUDA streams and
 * {@code train_step.cu}; {@link Host} is two threads and {@link TrainStepValues}' Java twins.
 * Bucket b holds elements {@code [b × floats, (b + 1) × floats)} of both buffers.
 */
sealed interface TrainStepWorker extends AutoCloseable permits TrainStepWorker.Gpu, TrainStepWorker.Host {

    /** The worker of {@code backend}: {@link Gpu} on a CUDA backend, else {@link Host}. */
    static TrainStepWorker open(Backend backend, int rank, int buckets, long floats, int passes, Duration timeout) {
        return backend instanceof CudaBackend cuda ? new Gpu(cuda, rank, buckets, floats, passes, timeout)
                : new Host(backend, rank, buckets, floats, passes, timeout);
    }

    /** Every bucket's gradients: {@code buckets × floats} floats. */
    DeviceBuffer gradients();

    /**
     * Lazily, at subscription: enqueues the gradient computation of every bucket for
     * {@code step} on the compute queue, in bucket order, and emits each bucket's index once its
     * gradients are complete in {@link #gradients()}, in order; completes after the last bucket.
     * Errors with TIMEOUT when a bucket is not done within the deadline, SYSTEM_ERROR when the
     * computation failed. Signals on the worker's own thread.
     */
    Flux<Integer> backward(int step);

    /** Enqueues the SGD update of {@code bucket} on the optimizer queue, with the gradients as they are now. */
    void sgd(int bucket);

    /** A Mono that completes when every update enqueued before its subscription is done. */
    Mono<Void> drained();

    /** Sets the weights to {@link TrainStepValues#initialWeight}; call with both queues idle. */
    void resetWeights();

    /** A host copy (or view) of the weights; call with both queues idle. */
    MemorySegment weights(Arena arena);

    @Override
    void close();

    /** Fills {@code weights} (buckets × floats) with the initial weights. */
    private static void initialWeights(MemorySegment weights, int buckets, long floats) {
        for (int b = 0; b < buckets; b++) {
            for (long i = 0; i < floats; i++) {
                weights.setAtIndex(FLOAT, (long) b * floats + i, TrainStepValues.initialWeight(b, i));
            }
        }
    }

    /**
     * On a GPU: {@code bucketGradients} on a compute stream, each launch followed by a
     * {@code cuStreamWriteValue64} of its sequence number into a word of pinned host memory;
     * {@code sgdUpdate} on an optimizer stream. One watcher thread per step reads the word and
     * emits bucket b as soon as the compute stream got past b's kernel: readiness in stream
     * order, one load per look, no driver call per bucket.
     */
    final class Gpu implements TrainStepWorker {
        static final int THREADS = 512;
        /** Blocks of a launch per multiprocessor: half of an SM's threads, so the collective's kernels find room beside. */
        static final int BLOCKS_PER_SM = 2;
        private static final VarHandle READY = ValueLayout.JAVA_LONG.varHandle();
        private static final long SPIN_NANOS = 50_000;
        private static final long MAX_PARK_NANOS = 50_000;

        private final int rank;
        private final int buckets;
        private final long floats;
        private final int passes;
        private final Duration timeout;
        private final CudaBackend cuda;
        private final Owned owned = new Owned();
        private final CudaStream compute;
        private final CudaStream optimizer;
        private final Kernel gradientsKernel;
        private final Kernel sgdKernel;
        private final DeviceBuffer gradients;
        private final DeviceBuffer weights;
        private final DeviceBuffer ready;
        private final LaunchConfig grid;
        /** Sequence numbers enqueued on the compute stream so far; touched by the subscribing thread only. */
        private long launched;

        Gpu(CudaBackend cuda, int rank, int buckets, long floats, int passes, Duration timeout) {
            this.cuda = cuda;
            this.rank = rank;
            this.buckets = buckets;
            this.floats = floats;
            this.passes = passes;
            this.timeout = timeout;
            long bytes = buckets * floats * Float.BYTES;
            try {
                compute = owned.own(cuda.createStream(TrainStepSample.NAME + " compute of rank " + rank));
                optimizer = owned.own(cuda.createStream(TrainStepSample.NAME + " optimizer of rank " + rank));
                CudaModule module = SampleKernels.load(cuda, "train_step");
                gradientsKernel = module.function("bucketGradients");
                sgdKernel = module.function("sgdUpdate");
                gradients = owned.own(cuda.allocate(bytes));
                weights = owned.own(cuda.allocate(bytes));
                ready = owned.own(cuda.allocateHostVisible(64));
                long blocks = Math.clamp((floats + THREADS - 1) / THREADS, 1, (long) BLOCKS_PER_SM
                        * cuda.multiprocessors());
                grid = LaunchConfig.of((int) blocks, THREADS);
            } catch (RuntimeException e) {
                try {
                    owned.close();
                } catch (RuntimeException c) {
                    e.addSuppressed(c);
                }
                throw e;
            }
        }

        @Override
        public DeviceBuffer gradients() {
            return gradients;
        }

        private long bucketAddress(DeviceBuffer buffer, int bucket) {
            return buffer.address() + (long) bucket * floats * Float.BYTES;
        }

        @Override
        public Flux<Integer> backward(int step) {
            return Flux.defer(() -> {
                long first = launched;
                for (int b = 0; b < buckets; b++) {
                    compute.launch(gradientsKernel, grid, KernelArgs.builder().pointer(bucketAddress(gradients, b))
                            .i64(floats).i32(rank).i32(step).i32(b).i32(passes).build());
                    compute.writeValueAsync(ready.address(), ++launched);
                }
                return Flux.<Integer>create(sink -> Thread.ofVirtual().name("train-step-ready-r" + rank)
                        .start(() -> watch(sink, first, step)));
            });
        }

        /** Emits bucket b once the ready word passed {@code first + b}; spins briefly, then parks, as the collective's completion does. */
        private void watch(FluxSink<Integer> sink, long first, int step) {
            long deadline = System.nanoTime() + timeout.toNanos();
            long lastQuery = System.nanoTime();
            long idleSince = lastQuery;
            long park = 1_000;
            int next = 0;
            try {
                while (next < buckets && !sink.isCancelled()) {
                    long done = (long) READY.getAcquire(ready.hostSegment(), 0L) - first;
                    if (done > next) {
                        while (next < buckets && done > next) {
                            sink.next(next++);
                        }
                        idleSince = System.nanoTime();
                        park = 1_000;
                        continue;
                    }
                    long now = System.nanoTime();
                    if (now - lastQuery > 1_000_000) {
                        lastQuery = now;
                        compute.isIdle();   // SYSTEM_ERROR when a kernel of the stream failed
                    }
                    if (now - deadline > 0) {
                        sink.error(JmscclppException.builder(ErrorCode.TIMEOUT, "the gradients of bucket " + next
                                + " of step " + step + " were not computed within " + timeout).rank(rank)
                                .phase(TrainStepSample.NAME + " backward").build());
                        return;
                    }
                    if (now - idleSince < SPIN_NANOS) {
                        Thread.onSpinWait();
                    } else {
                        LockSupport.parkNanos(park);
                        park = Math.min(park * 2, MAX_PARK_NANOS);
                    }
                }
                sink.complete();
            } catch (RuntimeException e) {
                sink.error(e);
            }
        }

        @Override
        public void sgd(int bucket) {
            optimizer.launch(sgdKernel, grid, KernelArgs.builder().pointer(bucketAddress(weights, bucket))
                    .pointer(bucketAddress(gradients, bucket)).i64(floats).f32(TrainStepValues.LR).build());
        }

        @Override
        public Mono<Void> drained() {
            return optimizer.drained(timeout, "the SGD updates of rank " + rank);
        }

        @Override
        public void resetWeights() {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment host = arena.allocate(weights.size(), 16);
                initialWeights(host, buckets, floats);
                cuda.copyFromHost(weights, 0, host);
            }
        }

        @Override
        public MemorySegment weights(Arena arena) {
            MemorySegment host = arena.allocate(weights.size(), 16);
            cuda.copyToHost(host, weights, 0);
            return host;
        }

        @Override
        public void close() {
            RuntimeException first = null;
            try {
                compute.synchronize(timeout, "the gradient kernels of rank " + rank);
                optimizer.synchronize(timeout, "the SGD updates of rank " + rank);
            } catch (RuntimeException e) {
                first = e;
            }
            first = owned.closeAfter(first);
            if (first != null) {
                throw first;
            }
        }
    }

    /**
     * On CPU ranks: the gradients and weights in the host backend's shared memory, a compute
     * thread and an optimizer thread in place of the two streams, computing with
     * {@link TrainStepValues}' twins of the kernels.
     */
    final class Host implements TrainStepWorker {
        private final int rank;
        private final int buckets;
        private final long floats;
        private final int passes;
        private final Duration timeout;
        private final Owned owned = new Owned();
        private final DeviceBuffer gradients;
        private final DeviceBuffer weights;
        private final ExecutorService compute;
        private final ExecutorService optimizer;
        /** The first failure of an update, reported by the next {@link #drained()}. */
        private final AtomicReference<RuntimeException> failure = new AtomicReference<>();

        Host(Backend backend, int rank, int buckets, long floats, int passes, Duration timeout) {
            this.rank = rank;
            this.buckets = buckets;
            this.floats = floats;
            this.passes = passes;
            this.timeout = timeout;
            long bytes = buckets * floats * Float.BYTES;
            gradients = owned.own(backend.allocate(bytes));
            try {
                weights = owned.own(backend.allocate(bytes));
            } catch (RuntimeException e) {
                owned.close();
                throw e;
            }
            compute = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon()
                    .name("train-step-compute-r" + rank).factory());
            optimizer = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon()
                    .name("train-step-optimizer-r" + rank).factory());
        }

        @Override
        public DeviceBuffer gradients() {
            return gradients;
        }

        @Override
        public Flux<Integer> backward(int step) {
            return Flux.defer(() -> {
                Sinks.Many<Integer> done = Sinks.many().unicast().onBackpressureBuffer();
                for (int b = 0; b < buckets; b++) {
                    int bucket = b;
                    compute.execute(() -> {
                        try {
                            MemorySegment g = gradients.hostSegment();
                            long base = (long) bucket * floats;
                            for (long i = 0; i < floats; i++) {
                                g.setAtIndex(FLOAT, base + i, TrainStepValues.gradient(rank, step, bucket, i, passes));
                            }
                            done.tryEmitNext(bucket);
                        } catch (RuntimeException e) {
                            done.tryEmitError(e);
                        }
                    });
                }
                compute.execute(done::tryEmitComplete);
                return done.asFlux();
            });
        }

        @Override
        public void sgd(int bucket) {
            optimizer.execute(() -> {
                try {
                    MemorySegment w = weights.hostSegment();
                    MemorySegment g = gradients.hostSegment();
                    long base = (long) bucket * floats;
                    for (long i = base; i < base + floats; i++) {
                        w.setAtIndex(FLOAT, i, TrainStepValues.sgd(w.getAtIndex(FLOAT, i), g.getAtIndex(FLOAT, i)));
                    }
                } catch (RuntimeException e) {
                    failure.compareAndSet(null, e);
                }
            });
        }

        @Override
        public Mono<Void> drained() {
            // the optimizer runs its tasks in order: this one runs after every update enqueued before
            return Mono.create(sink -> optimizer.execute(() -> {
                RuntimeException e = failure.get();
                if (e != null) {
                    sink.error(e);
                } else {
                    sink.success();
                }
            }));
        }

        @Override
        public void resetWeights() {
            initialWeights(weights.hostSegment(), buckets, floats);
        }

        @Override
        public MemorySegment weights(Arena arena) {
            return weights.hostSegment();
        }

        @Override
        public void close() {
            RuntimeException first = null;
            for (ExecutorService queue : new ExecutorService[] {compute, optimizer}) {
                queue.shutdown();
                try {
                    if (!queue.awaitTermination(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                        queue.shutdownNow();
                        first = JmscclppException.builder(ErrorCode.TIMEOUT, "the " + (queue == compute ? "compute"
                                : "optimizer") + " thread did not finish within " + timeout).rank(rank)
                                .phase(TrainStepSample.NAME + " close").build();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    queue.shutdownNow();
                }
            }
            first = owned.closeAfter(first);
            if (first != null) {
                throw first;
            }
        }
    }
}
