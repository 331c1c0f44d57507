package org.jmscclpp.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.AbortSignal;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.collective.CallOptions;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.cuda.kernel.DeviceAbortFlag;
import org.jmscclpp.cuda.kernel.DeviceKernels;
import org.jmscclpp.cuda.kernel.Kernel;
import org.jmscclpp.cuda.kernel.KernelArgs;
import org.jmscclpp.cuda.kernel.LaunchConfig;

/**
 * One rank (of two, one GPU each) of {@link CudaAbortGpuTest}'s jobs: an abort reaching kernels that
 * wait for a peer, and the same process building a new job on the same GPU afterwards. Arguments
 * {@code key=value}: {@code rank}, {@code nranks}, {@code address} (the root of the first job),
 * {@code address2}, {@code address3} (the roots of the later ones), {@code scenario}:
 * <ul>
 *   <li>{@code abort-collective}: job 1 runs checked allreduces (ll16 and rsag), then rank 0 issues
 *       one more that rank 1 never joins and rank 1 aborts: rank 0's call fails with ABORTED within
 *       {@link #BOUND} (the device deadline is {@link #DEVICE_DEADLINE}); job 2 does the same with
 *       rank 0 aborting its own waiting call; job 3, on the same GPUs in the same processes, runs
 *       checked allreduces again;</li>
 *   <li>{@code timeout-collective}: in job 1 (a collective timeout of {@link #SHORT}) rank 0
 *       issues an allreduce that rank 1 never joins: it fails with TIMEOUT, its
 *       kernel returns at its device deadline instead of trapping, and job 2 on the same GPUs runs
 *       checked allreduces;</li>
 *   <li>{@code abort-kernel}: a kernel waiting on a memory semaphore that is never signalled, given
 *       a {@link DeviceAbortFlag}, returns when its deadline passes (the flag reads TIMEOUT, no trap)
 *       and, in a second launch, when rank 1 aborts the job (ABORTED within {@link #BOUND}); then
 *       kernels still run, and job 2 runs a device semaphore ping-pong between the GPUs.</li>
 * </ul>
 * Prints {@code OK ...} lines and exits 0, or prints the failure and exits 1.
 */
public final class AbortScenarios {

    static final Duration TIMEOUT = Duration.ofSeconds(60);
    /** The device deadline of the jobs' kernels: far above what an abort may take. */
    static final Duration DEVICE_DEADLINE = Duration.ofSeconds(120);
    /** How long an abort may take to end a waiting call or kernel. */
    static final Duration BOUND = Duration.ofSeconds(5);
    /** The collective timeout (host and device deadline) of timeout-collective's first job. */
    static final Duration SHORT = Duration.ofSeconds(3);
    static final int TAG = 77;
    static final long COUNT_LL = 1000;
    static final long COUNT_LARGE = 1L << 20;

    private final int rank;
    private final int n;
    private final CudaBackend backend;
    private final Map<String, String> args;

    private AbortScenarios(int rank, int n, CudaBackend backend, Map<String, String> args) {
        this.rank = rank;
        this.n = n;
        this.backend = backend;
        this.args = args;
    }

    public static void main(String[] argv) {
        Map<String, String> a = new HashMap<>();
        for (String arg : argv) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        int rank = Integer.parseInt(a.get("rank"));
        int n = Integer.parseInt(a.get("nranks"));
        String scenario = a.get("scenario");
        int code = 1;
        try (CudaBackend backend = CudaBackend.open(Integer.parseInt(System.getenv(CudaBackend.DEVICE_ENV)),
                CudaBackend.allocationFrom("malloc"))) {
            say("rank " + rank + " on " + backend);
            AbortScenarios s = new AbortScenarios(rank, n, backend, a);
            switch (scenario) {
                case "abort-collective" -> s.collective();
                case "abort-kernel" -> s.kernel();
                case "timeout-collective" -> s.timeoutCollective();
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            }
            say("OK " + scenario);
            code = 0;
        } catch (AssertionError | RuntimeException e) {
            say("FAILED " + e);
            e.printStackTrace(System.out);
        }
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** A job: a bootstrap at {@code address} and a communicator on this process's backend. */
    private record Job(TcpBootstrap bootstrap, Communicator comm) implements AutoCloseable {
        @Override
        public void close() {
            comm.close();
            bootstrap.close();
        }
    }

    private Job job(String addressKey) {
        TcpBootstrap bs = TcpBootstrap.create(rank, n, BootstrapOptions.builder().initTimeout(TIMEOUT)
                .operationTimeout(TIMEOUT).build());
        try {
            bs.initialize(args.get(addressKey)).block(TIMEOUT.plusSeconds(5));
            return new Job(bs, Communicator.create(bs, backend));
        } catch (RuntimeException e) {
            bs.close();
            throw e;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // collectives

    void collective() {
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer send = backend.allocate(COUNT_LARGE * 4);
             DeviceBuffer recv = backend.allocate(COUNT_LARGE * 4)) {
            MemorySegment host = arena.allocate(COUNT_LARGE * 4, 8);
            for (long i = 0; i < COUNT_LARGE; i++) {
                host.setAtIndex(ValueLayout.JAVA_INT, i, (rank + 1) * (int) (i % 1000 + 1));
            }
            backend.copyFromHost(send, 0, host);
            // job 1: rank 1 aborts while rank 0's ll16 allreduce waits for it
            Job job1 = job("address");
            CollectiveComm cc1 = collectiveComm(job1);
            checkedAllReduces(cc1, job1, host, send, recv, "job 1");
            abortedCall(cc1, job1, send, recv, 1, "job 1");
            // the next job's bootstrap is where the ranks meet again (job 1's is aborted): only then
            // does rank 1 free the memory that rank 0's kernel of job 1 may still have written to
            Job job2 = job("address2");
            cc1.close();
            job1.close();
            // job 2: rank 0 aborts its own waiting rsag allreduce
            CollectiveComm cc2 = collectiveComm(job2);
            checkedAllReduces(cc2, job2, host, send, recv, "job 2");
            abortedCall(cc2, job2, send, recv, 0, "job 2");
            Job job3 = job("address3");
            cc2.close();
            job2.close();
            // job 3: the same GPUs, the same processes: the CUDA contexts were not poisoned
            CollectiveComm cc3 = collectiveComm(job3);
            checkedAllReduces(cc3, job3, host, send, recv, "job 3");
            job3.bootstrap().barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
            cc3.close();
            job3.close();
        }
    }

    private static CollectiveComm collectiveComm(Job job) {
        return collectiveComm(job, DEVICE_DEADLINE);
    }

    private static CollectiveComm collectiveComm(Job job, Duration timeout) {
        return CollectiveComm.create(job.comm(), CollectiveOptions.defaults().withTimeout(timeout))
                .block(DEVICE_DEADLINE.plusSeconds(30));
    }

    void timeoutCollective() {
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer send = backend.allocate(COUNT_LARGE * 4);
             DeviceBuffer recv = backend.allocate(COUNT_LARGE * 4)) {
            MemorySegment host = arena.allocate(COUNT_LARGE * 4, 8);
            for (long i = 0; i < COUNT_LARGE; i++) {
                host.setAtIndex(ValueLayout.JAVA_INT, i, (rank + 1) * (int) (i % 1000 + 1));
            }
            backend.copyFromHost(send, 0, host);
            Job job1 = job("address");
            // no checked calls here: a peer still compiling a module past the short device deadline
            // would look like one that never joined
            CollectiveComm cc1 = collectiveComm(job1, SHORT);
            job1.bootstrap().barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
            if (rank == 0) {
                long t0 = System.nanoTime();
                Throwable failure = null;
                try {
                    cc1.with(CallOptions.algorithm("ll16")).allReduce(send, recv, COUNT_LL, DataType.INT32,
                            ReduceOp.SUM).block(SHORT.plusSeconds(10));
                } catch (JmscclppException e) {
                    failure = e;
                }
                long ms = (System.nanoTime() - t0) / 1_000_000;
                if (!(failure instanceof JmscclppException j) || j.code() != ErrorCode.TIMEOUT) {
                    throw new AssertionError("an allreduce no peer joined did not fail with TIMEOUT: " + failure,
                            failure);
                }
                say("OK job 1: the allreduce rank 1 never joined failed with TIMEOUT after " + ms + " ms: "
                        + failure.getMessage());
                // waits for the kernel, which returns at its device deadline instead of trapping
                long t1 = System.nanoTime();
                cc1.close();
                say("OK job 1: closed in " + (System.nanoTime() - t1) / 1_000_000 + " ms (the kernel returned)");
                job1.bootstrap().send(1, TAG, "ended".getBytes(StandardCharsets.UTF_8), TIMEOUT)
                        .block(TIMEOUT.plusSeconds(5));
            } else {
                // rank 0's kernel reads this rank's memory until it returns
                job1.bootstrap().recv(0, TAG, TIMEOUT).block(TIMEOUT.plusSeconds(5));
                cc1.close();
            }
            job1.close();
            Job job2 = job("address2");
            CollectiveComm cc2 = collectiveComm(job2);
            checkedAllReduces(cc2, job2, host, send, recv, "job 2 (same GPUs, after the timeout)");
            job2.bootstrap().barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
            cc2.close();
            job2.close();
        }
    }

    /** Allreduces of int32 sums, ll16 and rsag, every element checked. */
    private void checkedAllReduces(CollectiveComm cc, Job job, MemorySegment host, DeviceBuffer send,
                                   DeviceBuffer recv, String what) {
        int calls = 0;
        for (int round = 0; round < 5; round++) {
            for (String algorithm : new String[] {"ll16", "rsag"}) {
                long count = algorithm.equals("ll16") ? COUNT_LL : COUNT_LARGE;
                job.bootstrap().barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
                cc.with(CallOptions.algorithm(algorithm)).allReduce(send, recv, count, DataType.INT32, ReduceOp.SUM)
                        .block(DEVICE_DEADLINE);
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment got = arena.allocate(count * 4, 8);
                    backend.copyToHost(got, recv, 0);
                    int ranksSum = n * (n + 1) / 2;
                    for (long i = 0; i < count; i++) {
                        int expected = ranksSum * (int) (i % 1000 + 1);
                        if (got.getAtIndex(ValueLayout.JAVA_INT, i) != expected) {
                            throw new AssertionError(what + ": " + algorithm + " allreduce of " + count
                                    + " int32: element " + i + " is " + got.getAtIndex(ValueLayout.JAVA_INT, i)
                                    + ", not " + expected + " (rank " + rank + ")");
                        }
                    }
                }
                calls++;
            }
        }
        say("OK " + what + ": " + calls + " allreduces (ll16 " + COUNT_LL + ", rsag " + COUNT_LARGE
                + " int32) checked element by element");
    }

    /**
     * Rank 0 issues an allreduce that rank 1 never joins and tells rank 1 (bootstrap message);
     * rank {@code aborter} then aborts the job. Rank 0's call must fail with ABORTED within BOUND.
     */
    private void abortedCall(CollectiveComm cc, Job job, DeviceBuffer send, DeviceBuffer recv, int aborter,
                             String what) {
        job.bootstrap().barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
        if (rank == 0) {
            String algorithm = aborter == 1 ? "ll16" : "rsag";
            long count = aborter == 1 ? COUNT_LL : COUNT_LARGE;
            long t0 = System.nanoTime();
            CompletableFuture<Void> call = cc.with(CallOptions.algorithm(algorithm))
                    .allReduce(send, recv, count, DataType.INT32, ReduceOp.SUM).toFuture();
            job.bootstrap().send(1, TAG, "issued".getBytes(StandardCharsets.UTF_8), TIMEOUT)
                    .block(TIMEOUT.plusSeconds(5));
            if (aborter == 0) {
                cc.abort("test: rank 0 gives up on its waiting " + algorithm + " allreduce");
            }
            Throwable failure = outcome(call, what);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            if (!(failure instanceof JmscclppException j) || j.code() != ErrorCode.ABORTED) {
                throw new AssertionError(what + ": the waiting " + algorithm + " allreduce did not fail with ABORTED: "
                        + failure, failure);
            }
            if (ms > BOUND.toMillis()) {
                throw new AssertionError(what + ": the abort took " + ms + " ms to end the waiting call (bound "
                        + BOUND + ", device deadline " + DEVICE_DEADLINE + ")");
            }
            say("OK " + what + ": the waiting " + algorithm + " allreduce failed with ABORTED " + ms
                    + " ms after it was issued (device deadline " + DEVICE_DEADLINE.toSeconds() + " s): "
                    + failure.getMessage());
            checkFailed(cc, what);
        } else {
            job.bootstrap().recv(0, TAG, TIMEOUT).block(TIMEOUT.plusSeconds(5));
            if (aborter == 1) {
                cc.abort("test: rank 1 aborts while rank 0's allreduce waits for it");
            } else {
                // rank 0's abort reaches this rank through the bootstrap
                job.comm().abortSignal().whenRaised().block(BOUND);
            }
            say("OK " + what + ": rank 1's signal: " + job.comm().abortSignal());
            checkFailed(cc, what);
        }
    }

    /** Rank 0's later calls are refused: the communicator is broken for good, as after any failure. */
    private void checkFailed(CollectiveComm cc, String what) {
        if (!cc.communicator().abortSignal().isRaised()) {
            throw new AssertionError(what + ": the communicator's abort signal is not raised on rank " + rank);
        }
        if (rank != 0) {
            return;
        }
        try {
            cc.allReduce(null, null, 0, DataType.INT32, ReduceOp.SUM).block(BOUND);
        } catch (JmscclppException e) {
            say("OK " + what + ": a later call is refused: " + e.getMessage());
            return;
        }
        throw new AssertionError(what + ": a call after the abort succeeded");
    }

    private static Throwable outcome(CompletableFuture<Void> call, String what) {
        try {
            call.get(BOUND.toMillis() + 1000, TimeUnit.MILLISECONDS);
            throw new AssertionError(what + ": the call that a peer never joined succeeded");
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (TimeoutException e) {
            throw new AssertionError(what + ": the waiting call did not end within " + BOUND + " of the abort", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // a kernel of the user's

    void kernel() {
        Kernel waitOrAbort = DeviceKernels.load(backend, "semaphores").function("d2dWaitOrAbort");
        try (Arena arena = Arena.ofConfined(); DeviceBuffer result = backend.allocate(4)) {
            MemorySegment host = arena.allocate(8, 8);
            Job first = job("address");
            {
                int peer = 1 - rank;
                Connection connection = first.comm().connect(peer, 0, EndpointConfig.of(Transport.CUDA_IPC))
                        .block(TIMEOUT);
                MemoryDevice2DeviceSemaphore semaphore = MemoryDevice2DeviceSemaphore.build(first.comm(), connection)
                        .block(TIMEOUT);
                if (rank == 0) {
                    // a wait past its deadline returns (no trap) and raises its flag with TIMEOUT
                    try (DeviceAbortFlag own = DeviceAbortFlag.create(backend, AbortSignal.create(), rank)) {
                        long t0 = System.nanoTime();
                        waitOrAbort.run(LaunchConfig.of(1, 1), args(semaphore, own, 200_000_000L, result), TIMEOUT)
                                .block(TIMEOUT.plusSeconds(5));
                        long ms = (System.nanoTime() - t0) / 1_000_000;
                        int r = resultOf(result, host);
                        if (r != 2 || (own.status() & DeviceAbortFlag.CODE_MASK) != DeviceAbortFlag.TIMEOUT) {
                            throw new AssertionError("a wait past its 200 ms deadline: result " + r + ", flag " + own);
                        }
                        JmscclppException e = own.failure("test").orElseThrow();
                        if (e.code() != ErrorCode.TIMEOUT) {
                            throw new AssertionError("a flag raised by a device deadline reads " + e);
                        }
                        say("OK a wait past its deadline returned in " + ms + " ms, flag TIMEOUT, no trap: "
                                + e.getMessage());
                    }
                    // a wait that no one signals returns once rank 1 aborts the job
                    try (DeviceAbortFlag abort = DeviceAbortFlag.create(first.comm())) {
                        long t0 = System.nanoTime();
                        CompletableFuture<Void> run = waitOrAbort.run(LaunchConfig.of(1, 1),
                                args(semaphore, abort, DEVICE_DEADLINE.toNanos(), result), DEVICE_DEADLINE).toFuture();
                        first.bootstrap().send(1, TAG, "waiting".getBytes(StandardCharsets.UTF_8), TIMEOUT)
                                .block(TIMEOUT.plusSeconds(5));
                        try {
                            run.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
                        } catch (ExecutionException | TimeoutException e) {
                            throw new AssertionError("the waiting kernel did not end within " + BOUND
                                    + " of rank 1's abort cleanly: " + e, e);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new AssertionError(e);
                        }
                        long ms = (System.nanoTime() - t0) / 1_000_000;
                        int r = resultOf(result, host);
                        JmscclppException e = abort.failure("kernel").orElse(null);
                        if (r != 2 || e == null || e.code() != ErrorCode.ABORTED) {
                            throw new AssertionError("after rank 1's abort: result " + r + ", flag " + abort
                                    + ", failure " + e);
                        }
                        say("OK the waiting kernel returned " + ms + " ms after launch, once rank 1 aborted: "
                                + e.getMessage());
                    }
                    // the context is usable: a kernel runs and a copy round-trips
                    try (DeviceAbortFlag own = DeviceAbortFlag.create(backend, AbortSignal.create(), rank)) {
                        waitOrAbort.run(LaunchConfig.of(1, 1), args(semaphore, own, 1_000_000L, result), TIMEOUT)
                                .block(TIMEOUT.plusSeconds(5));
                        if (resultOf(result, host) != 2) {
                            throw new AssertionError("a kernel after the abort did not run");
                        }
                    }
                    say("OK kernels still run on this GPU after the abort");
                } else {
                    first.bootstrap().recv(0, TAG, TIMEOUT).block(TIMEOUT.plusSeconds(5));
                    first.comm().abort("test: rank 1 aborts while rank 0's kernel waits for its signal");
                    say("OK rank 1 aborted: " + first.comm().abortSignal());
                }
            }
            // job 2 on the same GPUs: a device semaphore ping-pong between them (job 1 ends once both
            // ranks reached job 2's bootstrap, its own being aborted)
            Job second = job("address2");
            first.close();
            try (Job job = second; DeviceBuffer elapsed = backend.allocate(8)) {
                int peer = 1 - rank;
                Connection connection = job.comm().connect(peer, 0, EndpointConfig.of(Transport.CUDA_IPC))
                        .block(TIMEOUT);
                MemoryDevice2DeviceSemaphore semaphore = MemoryDevice2DeviceSemaphore.build(job.comm(), connection)
                        .block(TIMEOUT);
                Kernel pingPong = DeviceKernels.load(backend, "semaphores").function("d2dPingPong");
                job.bootstrap().barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
                int iters = 1000;
                pingPong.run(LaunchConfig.of(1, 1), KernelArgs.builder()
                        .handle(MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES, semaphore.deviceHandle()::encode)
                        .i32(rank).i32(iters).pointer(elapsed.address()).build(), TIMEOUT)
                        .block(TIMEOUT.plusSeconds(5));
                job.bootstrap().barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
                say("OK job 2 on the same GPU: " + iters + " device semaphore round trips");
            }
        }
    }

    private static KernelArgs args(MemoryDevice2DeviceSemaphore semaphore, DeviceAbortFlag flag, long timeoutNs,
                                   DeviceBuffer result) {
        return KernelArgs.builder()
                .handle(MemoryDevice2DeviceSemaphore.DEVICE_HANDLE_BYTES, semaphore.deviceHandle()::encode)
                .abortFlag(flag).i64(timeoutNs).pointer(result.address()).build();
    }

    private int resultOf(DeviceBuffer result, MemorySegment host) {
        backend.copyToHost(host.asSlice(0, 4), result, 0);
        return host.get(ValueLayout.JAVA_INT, 0);
    }
}
