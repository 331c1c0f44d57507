package org.jmscclpp.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.nativebridge.LibC;
import reactor.core.publisher.Flux;

/**
 * One rank of a GPU test job ({@link GpuJob}): a {@link TcpBootstrap}, the {@link CudaBackend} of
 * the GPU {@code JMSCCLPP_CUDA_DEVICE} names, and a {@link Communicator} over both. Arguments are
 * {@code key=value}: {@code rank}, {@code nranks}, {@code address} (the root's ip:port),
 * {@code scenario}, {@code alloc} ({@code malloc} or {@code vmm}), {@code transport} (of the
 * connections and registrations of basic-write, device-semaphores and port-ping-pong:
 * {@code CUDA_IPC}, the default, or {@code ETHERNET}), {@code iters} (port-ping-pong). Prints
 * {@code OK <scenario> ...} lines on success and exits 0; a failure prints its message and stack and exits 1.
 *
 * <p>Public for the GPU tests of other packages and modules (the collectives', the samples' NCCL
 * tests): a family of scenarios elsewhere has a {@code main} of its own that calls
 * {@link #run(String[], Scenarios)}, and its tests start it with
 * {@link GpuJob#run(Class, int, Duration, Path, String, String...)}.
 */
public final class GpuRankMain {

    /** Runs the scenario named {@code scenario} on this rank; throws (an AssertionError, say) when it fails. */
    @FunctionalInterface
    public interface Scenarios {
        void run(GpuRankMain r, String scenario, Map<String, String> args);
    }

    static final EndpointConfig CUDA_IPC = EndpointConfig.of(Transport.CUDA_IPC);
    public static final Duration TIMEOUT = Duration.ofSeconds(60);
    static final int BUFFERS = 10;
    static final int BUFFER_BYTES = 1 << 20;

    public final int rank;
    public final int n;
    public final TcpBootstrap bootstrap;
    public final CudaBackend backend;
    public final Communicator comm;
    final Transport transport;

    private GpuRankMain(TcpBootstrap bootstrap, CudaBackend backend, Transport transport) {
        this.rank = bootstrap.rank();
        this.n = bootstrap.size();
        this.bootstrap = bootstrap;
        this.backend = backend;
        this.comm = Communicator.create(bootstrap, backend);
        this.transport = transport;
    }

    /** The scenarios of this package: basic-write, vmm-across-users and the kernels' ({@link GpuKernelScenarios}). */
    public static void main(String[] args) {
        run(args, (r, scenario, a) -> {
            if (scenario.equals("basic-write")) {
                r.basicWrite(a.getOrDefault("flush", "").equals("polled"));
            } else if (scenario.equals("vmm-across-users")) {
                r.vmmAcrossUsers();
            } else {
                GpuKernelScenarios.run(r, scenario, a);
            }
        });
    }

    /**
     * One rank of a job: parses the arguments, opens the bootstrap, the backend and the communicator,
     * runs {@code scenarios}, waits for every rank at a barrier, and halts the JVM with 0, or with 1
     * after printing the failure.
     */
    public static void run(String[] args, Scenarios scenarios) {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            a.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        int rank = Integer.parseInt(a.get("rank"));
        int n = Integer.parseInt(a.get("nranks"));
        String scenario = a.get("scenario");
        int code = 1;
        TcpBootstrap bs = TcpBootstrap.create(rank, n, BootstrapOptions.builder().initTimeout(TIMEOUT)
                .operationTimeout(TIMEOUT).build());
        try {
            bs.initialize(a.get("address")).block(TIMEOUT.plusSeconds(5));
            CudaBackend backend = CudaBackend.open(Integer.parseInt(System.getenv(CudaBackend.DEVICE_ENV)),
                    CudaBackend.allocationFrom(a.getOrDefault("alloc", "malloc")));
            say("rank " + rank + " on " + backend);
            GpuRankMain r = new GpuRankMain(bs, backend, Transport.valueOf(a.getOrDefault("transport", "CUDA_IPC")));
            try {
                scenarios.run(r, scenario, a);
                bs.barrier(TIMEOUT).block(TIMEOUT.plusSeconds(5));
            } finally {
                r.comm.close();
                backend.close();
            }
            say("OK " + scenario);
            code = 0;
        } catch (AssertionError | RuntimeException e) {
            say("FAILED " + e);
            e.printStackTrace(System.out);
        } finally {
            bs.close();
        }
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }

    public static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Connections to every peer, in peer order. */
    Map<Integer, Connection> connectAll() {
        Map<Integer, Connection> connections = new TreeMap<>();
        for (int peer = 0; peer < n; peer++) {
            if (peer != rank) {
                int p = peer;
                connections.put(p, comm.connect(p, 0, EndpointConfig.of(transport)).block(TIMEOUT));
            }
        }
        return connections;
    }

    /** Sends {@code local} to every peer and receives each peer's, in peer order. */
    Map<Integer, RegisteredMemory> exchange(RegisteredMemory local, int tag) {
        Map<Integer, RegisteredMemory> remote = new TreeMap<>();
        for (int peer = 0; peer < n; peer++) {
            if (peer != rank) {
                comm.sendMemory(local, peer, tag).block(TIMEOUT);
            }
        }
        for (int peer = 0; peer < n; peer++) {
            if (peer != rank) {
                remote.put(peer, comm.recvMemory(peer, tag).block(TIMEOUT));
            }
        }
        return remote;
    }

    /**
     * MSCCL++'s CommunicatorTest.BasicWrite on GPU memory: {@value #BUFFERS} buffers of 1 MiB, each
     * rank writes its 1/n slice of each into every peer's buffer of the same index with
     * {@link Connection#write}, flushes, and after a barrier every element of every buffer is
     * checked on the host. Element i of buffer b is {@code i + n * b + 1}.
     */
    void basicWrite(boolean polledFlush) {
        Map<Integer, Connection> connections = connectAll();
        List<DeviceBuffer> buffers = new ArrayList<>();
        List<RegisteredMemory> locals = new ArrayList<>();
        List<Map<Integer, RegisteredMemory>> remotes = new ArrayList<>();
        int ints = BUFFER_BYTES / Integer.BYTES;
        int sliceInts = ints / n;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(BUFFER_BYTES, 16);
            for (int b = 0; b < BUFFERS; b++) {
                DeviceBuffer buf = backend.allocate(BUFFER_BYTES);
                buffers.add(buf);
                for (int i = rank * sliceInts; i < (rank + 1) * sliceInts; i++) {
                    host.setAtIndex(ValueLayout.JAVA_INT, i, i + n * b + 1);
                }
                backend.copyFromHost(buf, 0, host);
                RegisteredMemory m = comm.registerMemory(buf, TransportFlags.of(transport));
                locals.add(m);
                remotes.add(exchange(m, b));
            }
            long offset = (long) rank * sliceInts * Integer.BYTES;
            long bytes = (long) sliceInts * Integer.BYTES;
            for (int b = 0; b < BUFFERS; b++) {
                for (Map.Entry<Integer, Connection> e : connections.entrySet()) {
                    e.getValue().write(remotes.get(b).get(e.getKey()), offset, locals.get(b), offset, bytes);
                }
            }
            if (polledFlush) {
                // what a proxy does: start a polled flush on each connection, look until every one is done
                List<Connection.PolledFlush> flushes = new ArrayList<>();
                for (Connection c : connections.values()) {
                    Connection.PolledFlush f = c.pollableFlush();
                    if (f == null) {
                        throw new AssertionError(c + " has no polled flush");
                    }
                    flushes.add(f);
                }
                long deadline = System.nanoTime() + TIMEOUT.toNanos();
                long polls = 0;
                while (!flushes.stream().allMatch(Connection.PolledFlush::done)) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new AssertionError("the polled flushes were not done within " + TIMEOUT);
                    }
                    polls++;
                }
                say("polled flushes done after " + polls + " more looks");
            } else {
                Flux.fromIterable(connections.values()).flatMap(c -> c.flush(TIMEOUT)).blockLast(TIMEOUT);
            }
            bootstrap.barrier(TIMEOUT).block(TIMEOUT);
            long wrong = 0;
            for (int b = 0; b < BUFFERS; b++) {
                backend.copyToHost(host, buffers.get(b), 0);
                for (int i = 0; i < n * sliceInts; i++) {
                    if (host.getAtIndex(ValueLayout.JAVA_INT, i) != i + n * b + 1) {
                        wrong++;
                    }
                }
            }
            if (wrong != 0) {
                throw new AssertionError(wrong + " wrong elements after BasicWrite on rank " + rank);
            }
            say("OK basic-write " + transport + " " + backend.defaultAllocation() + (polledFlush ? ", polled flushes" : "")
                    + ": " + BUFFERS + " x " + BUFFER_BYTES + " bytes, every element checked");
        } finally {
            bootstrap.barrier(TIMEOUT).block(TIMEOUT);
            locals.forEach(RegisteredMemory::close);
            buffers.forEach(DeviceBuffer::close);
        }
    }

    /**
     * For ranks of different users (no ptrace right over each other): BasicWrite on VMM buffers,
     * whose descriptors can only have come over the exporters' descriptor servers; then one more
     * VMM buffer exchanged, mapped, and the peer's descriptor asked of {@code pidfd_getfd}, which
     * must be refused (else this run shows nothing). Prints the rank's uid and what pidfd_getfd said.
     */
    void vmmAcrossUsers() {
        say("UID " + OtherUser.currentUid());
        if (backend.defaultAllocation() != CudaBackend.Allocation.VMM) {
            throw new AssertionError("vmm-across-users runs with alloc=vmm");
        }
        basicWrite(false);
        if (backend.descriptorServer() == null) {
            throw new AssertionError("the VMM exports started no descriptor server");
        }
        DeviceBuffer buf = backend.allocate(BUFFER_BYTES);
        RegisteredMemory local = comm.registerMemory(buf, TransportFlags.of(Transport.CUDA_IPC));
        try {
            for (Map.Entry<Integer, RegisteredMemory> e : exchange(local, 1000).entrySet()) {
                RegisteredMemory remote = e.getValue();
                try {
                    if (!remote.isMapped()) {
                        throw new AssertionError("rank " + e.getKey() + "'s VMM buffer is not mapped here: " + remote);
                    }
                    CudaIpcHandle h = CudaIpcHandle.decode(remote.handle(Transport.CUDA_IPC));
                    try {
                        LibC.INSTANCE.close(CudaBackend.takeDescriptorByPidfd(h.pid(), h.fd()));
                        throw new AssertionError("pidfd_getfd on rank " + e.getKey() + " (pid " + h.pid() + ") was allowed:"
                                + " the ranks may trace each other, so this run does not show that SCM_RIGHTS is needed");
                    } catch (JmscclppException refused) {
                        say("pidfd_getfd refused, as expected: " + refused.detail());
                    }
                    say("OK rank " + e.getKey() + "'s VMM buffer (pid " + h.pid() + ") mapped through its descriptor"
                            + " server @" + h.serverName());
                } finally {
                    remote.close();
                }
            }
            bootstrap.barrier(TIMEOUT).block(TIMEOUT);
        } finally {
            local.close();
            buf.close();
        }
    }
}
