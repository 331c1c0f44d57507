package org.jmscclpp.bootstrap;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * One rank of a multi-process communicator test, run in a child JVM by {@link RankProcesses}: a
 * {@link TcpBootstrap}, its own {@link HostBackend} over the test's directory, and a
 * {@link Communicator} over both. Ports of MSCCL++'s {@code CommunicatorTest} on the host backend.
 * Arguments are {@code key=value} pairs:
 *
 * <table>
 *   <caption>Arguments</caption>
 *   <tr><th>key</th><th>meaning</th></tr>
 *   <tr><td>{@code rank}, {@code nranks}</td><td>this rank and the job size</td></tr>
 *   <tr><td>{@code address}</td><td>the root's {@code ip:port}, hosted by rank 0</td></tr>
 *   <tr><td>{@code shm-dir}</td><td>directory of the host backend's files</td></tr>
 *   <tr><td>{@code scenario}</td><td>{@code basic-write}, {@code host-semaphores},
 *       {@code device-semaphores}, or {@code die-before-setup} (the rank {@code victim} prints
 *       {@code ready-to-die} and waits to be killed; the others run setup against it)</td></tr>
 *   <tr><td>{@code setup-timeout-ms}</td><td>deadline of {@link Communicator#setup(Duration)}, and the
 *       bootstrap's operation timeout (default 20000)</td></tr>
 *   <tr><td>{@code victim}</td><td>die-before-setup: the rank that waits to be killed (default the last)</td></tr>
 * </table>
 *
 * <p>Every rank registers {@value #BUFFERS} buffers of {@value #BUFFER_BYTES} bytes with
 * {@code HOST_IPC}, connects to every peer and exchanges every buffer with it in one
 * {@link Communicator#setup}, then writes its 1/N slice of each buffer into every peer's buffer of
 * the same index. Element {@code i} (an int) of buffer {@code b} holds
 * {@code i + nranks * b + 1 + round * ROUND_STEP}: MSCCL++'s pattern, plus one so that no element
 * equals the zero a new buffer starts with, plus a step per round so that a stale round fails.
 *
 * <p>Lines printed: {@code READY} after bootstrap initialization, {@code SETUP} just before setup
 * is subscribed, {@code OK <scenario>} when every slice of every buffer held what it should, and
 * {@code CLOSED-CLEAN} once everything is closed and this process has no file of its own left in
 * the directory, no descriptor and no mapping of it. A {@link JmscclppException} prints
 * {@code FAILED <code> peer=<peer|none> elapsed_ms=<since setup began> message=<message>} and exits
 * with {@link RankMain#EXIT_FAILED} <em>without closing anything</em>, so the JVM's exit hook must
 * delete this rank's files; a wrong element is an {@link AssertionError} (exit
 * {@link RankMain#EXIT_ERROR}).
 */
final class CommunicatorRankMain {

    static final int BUFFERS = 10;
    static final int BUFFER_BYTES = 1 << 20;
    /** Added per round: larger than any element index plus {@code nranks * BUFFERS}. */
    static final int ROUND_STEP = 1 << 28;
    /** Exit code of a victim that nobody killed within {@link #VICTIM_WAIT}. */
    static final int EXIT_NOT_KILLED = 5;
    static final Duration VICTIM_WAIT = Duration.ofSeconds(90);

    private static final EndpointConfig HOST_IPC = EndpointConfig.of(Transport.HOST_IPC);
    private static final Duration INIT_TIMEOUT = Duration.ofSeconds(30);

    /** When setup began ({@link System#nanoTime()}); FAILED lines measure from here. */
    private static volatile long setupStart = System.nanoTime();

    private final int rank;
    private final int n;
    private final Duration timeout;
    private final TcpBootstrap bootstrap;
    private final Communicator comm;
    private final List<DeviceBuffer> buffers = new ArrayList<>();
    private final List<RegisteredMemory> local = new ArrayList<>();
    /** By peer: the connection to it, and its buffers in index order, mapped here. */
    private final Map<Integer, Connection> connections = new TreeMap<>();
    private final Map<Integer, List<RegisteredMemory>> remote = new TreeMap<>();

    private CommunicatorRankMain(TcpBootstrap bootstrap, HostBackend backend, Duration timeout) {
        this.rank = bootstrap.rank();
        this.n = bootstrap.size();
        this.timeout = timeout;
        this.bootstrap = bootstrap;
        this.comm = Communicator.create(bootstrap, backend);
    }

    public static void main(String[] args) {
        RankMain.exit(args, CommunicatorRankMain::run);
    }

    private static int run(Map<String, String> a) throws InterruptedException, IOException {
        int rank = Integer.parseInt(RankMain.required(a, "rank"));
        int n = Integer.parseInt(RankMain.required(a, "nranks"));
        Path dir = Path.of(RankMain.required(a, "shm-dir"));
        String scenario = RankMain.required(a, "scenario");
        Duration timeout = Duration.ofMillis(Long.parseLong(a.getOrDefault("setup-timeout-ms", "20000")));
        int victim = Integer.parseInt(a.getOrDefault("victim", Integer.toString(n - 1)));
        TcpBootstrap bs = TcpBootstrap.create(rank, n, BootstrapOptions.builder().initTimeout(INIT_TIMEOUT)
                .operationTimeout(timeout).build());
        try {
            // the Mono has its own deadline; this bound only catches one that never ends
            bs.initialize(RankMain.required(a, "address")).block(INIT_TIMEOUT.plusSeconds(10));
            RankMain.say("READY");
            HostBackend backend = HostBackend.open(dir);
            if (scenario.equals("die-before-setup") && rank == victim) {
                RankMain.say("ready-to-die");
                // nobody counts down: the test kills this process; the deadline ends an orphan
                new CountDownLatch(1).await(VICTIM_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                return EXIT_NOT_KILLED;
            }
            CommunicatorRankMain r = new CommunicatorRankMain(bs, backend, timeout);
            r.setUp();
            switch (scenario) {
                case "basic-write", "die-before-setup" -> r.basicWrite();
                case "host-semaphores" -> r.writeWithHostSemaphores();
                case "device-semaphores" -> r.writeWithDeviceSemaphores();
                case "die-in-waits", "abort-in-waits" -> {
                    Integer exit = r.waitOnAVictim(victim, scenario.equals("abort-in-waits"));
                    if (exit != null) {
                        return exit;
                    }
                }
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            }
            RankMain.say("OK " + scenario);
            // nobody closes (and deletes files) while a peer may still write or read
            bs.barrier(timeout).block(timeout.plusSeconds(10));
            r.close();
            backend.close();
            RankMain.say("CLOSED-CLEAN " + leftovers(dir));
            return RankMain.EXIT_OK;
        } catch (JmscclppException e) {
            long elapsed = (System.nanoTime() - setupStart) / 1_000_000;
            RankMain.say("FAILED " + e.code() + " peer=" + (e.peer() == JmscclppException.NONE ? "none" : e.peer())
                    + " elapsed_ms=" + elapsed + " message=" + e.getMessage().replace('\n', ' '));
            e.printStackTrace();
            return RankMain.EXIT_FAILED;
        } finally {
            bs.close();
        }
    }

    /** Registers the buffers and runs one setup: a connection and every buffer with every peer. */
    private void setUp() {
        for (int b = 0; b < BUFFERS; b++) {
            DeviceBuffer buf = comm.backend().allocate(BUFFER_BYTES);
            buffers.add(buf);
            local.add(comm.registerMemory(buf, TransportFlags.of(Transport.HOST_IPC)));
        }
        Map<Integer, Mono<Connection>> pendingConnections = new TreeMap<>();
        Map<Integer, List<Mono<RegisteredMemory>>> pendingMemories = new TreeMap<>();
        for (int p : peers()) {
            pendingConnections.put(p, comm.connectOnSetup(p, 0, HOST_IPC));
            List<Mono<RegisteredMemory>> mems = new ArrayList<>();
            for (int b = 0; b < BUFFERS; b++) {
                comm.sendMemoryOnSetup(local.get(b), p, 0);
                mems.add(comm.recvMemoryOnSetup(p, 0));
            }
            pendingMemories.put(p, mems);
        }
        RankMain.say("SETUP");
        setupStart = System.nanoTime();
        comm.setup(timeout).block(timeout.plusSeconds(10));
        // setup completed every queued step: these are immediate
        for (int p : peers()) {
            connections.put(p, pendingConnections.get(p).block(Duration.ofSeconds(1)));
            List<RegisteredMemory> mems = new ArrayList<>();
            for (Mono<RegisteredMemory> m : pendingMemories.get(p)) {
                RegisteredMemory mem = m.block(Duration.ofSeconds(1));
                if (mem == null || !mem.isMapped() || mem.size() != BUFFER_BYTES) {
                    throw new AssertionError("rank " + p + " sent " + mem + ", expected a mapped memory of "
                            + BUFFER_BYTES + " bytes");
                }
                mems.add(mem);
            }
            remote.put(p, mems);
        }
    }

    /**
     * Every rank builds host and device semaphores with every peer; then each survivor reports
     * {@code WAITING} and waits for a signal from the victim that never comes: even ranks on the
     * host semaphore, odd ranks on the device handle from a thread standing in for a kernel. Each
     * wait's own deadline is the setup timeout; the victim must end it much sooner. Without
     * {@code abort} the victim reports {@code ready-to-die} and waits to be killed (returns
     * EXIT_NOT_KILLED if nobody did); with it, the victim hears from every survivor that it is about
     * to wait, aborts the job through its communicator, reports {@code ABORTED} and returns EXIT_OK.
     * Survivors return nothing: their wait fails.
     */
    private @Nullable Integer waitOnAVictim(int victim, boolean abort) throws InterruptedException {
        Map<Integer, Host2HostSemaphore> host = collect(p -> Host2HostSemaphore.build(comm, connections.get(p)));
        Map<Integer, Host2DeviceSemaphore> device = collect(p -> Host2DeviceSemaphore.build(comm, connections.get(p)));
        int aboutToWait = 77;
        if (rank == victim && abort) {
            for (int p : peers()) {
                bootstrap.recv(p, aboutToWait, timeout).block(timeout.plusSeconds(10));
            }
            comm.abort("the test aborts the job");
            RankMain.say("ABORTED");
            return RankMain.EXIT_OK;
        }
        if (rank == victim) {
            RankMain.say("ready-to-die");
            new CountDownLatch(1).await(VICTIM_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            return EXIT_NOT_KILLED;
        }
        if (abort) {
            bootstrap.send(victim, aboutToWait, new byte[0], timeout).block(timeout.plusSeconds(10));
        }
        RankMain.say("WAITING");
        setupStart = System.nanoTime();
        if (rank % 2 == 0) {
            host.get(victim).nextSignal(timeout).block(timeout.plusSeconds(10));
        } else {
            AtomicReference<@Nullable Throwable> kernelError = new AtomicReference<>();
            Thread kernel = Thread.ofPlatform().name("kernel-rank-" + rank).start(() -> {
                try {
                    device.get(victim).deviceHandle().await(timeout);
                } catch (Throwable t) {
                    kernelError.set(t);
                }
            });
            kernel.join(timeout.plusSeconds(10));
            if (kernelError.get() instanceof JmscclppException je) {
                throw je;
            }
        }
        throw new AssertionError("rank " + rank + ": a signal arrived from rank " + victim + ", which never sent one");
    }

    /** MSCCL++'s BasicWrite: write my slices everywhere, flush, barrier, check everything. */
    private void basicWrite() {
        fillAndWrite(0);
        bootstrap.barrier(timeout).block(timeout.plusSeconds(10));
        checkAll(0);
    }

    /**
     * MSCCL++'s WriteWithHostSemaphores, two rounds of a new pattern each: write, signal every peer,
     * wait for every peer (its data is here), check, then signal and wait again (every peer has
     * checked, so the next round may overwrite its buffers).
     */
    private void writeWithHostSemaphores() {
        Map<Integer, Host2HostSemaphore> sems = collect(p -> Host2HostSemaphore.build(comm, connections.get(p)));
        for (int round = 0; round < 2; round++) {
            fillAndWrite(round);
            signalAndWaitAll(sems);
            checkAll(round);
            signalAndWaitAll(sems);
        }
        for (Host2HostSemaphore s : sems.values()) {
            if (s.poll()) {
                throw new AssertionError("rank " + rank + ": a signal arrived beyond the four of two rounds");
            }
        }
    }

    /**
     * MSCCL++'s WriteWithDeviceSemaphores: write and signal from the host; a platform thread standing
     * in for the kernel waits on every peer's device handle; then the data must be here.
     */
    private void writeWithDeviceSemaphores() throws InterruptedException {
        Map<Integer, Host2DeviceSemaphore> sems = collect(p -> Host2DeviceSemaphore.build(comm, connections.get(p)));
        fillAndWrite(0);
        sems.values().forEach(Host2DeviceSemaphore::signal);
        List<Host2DeviceSemaphore.DeviceHandle> handles = sems.values().stream()
                .map(Host2DeviceSemaphore::deviceHandle).toList();
        AtomicReference<@Nullable Throwable> kernelError = new AtomicReference<>();
        Thread kernel = Thread.ofPlatform().name("kernel-rank-" + rank).start(() -> {
            try {
                for (Host2DeviceSemaphore.DeviceHandle h : handles) {
                    h.await(timeout);
                }
            } catch (Throwable t) {
                kernelError.set(t);
            }
        });
        if (!kernel.join(timeout.plusSeconds(10))) {
            throw new AssertionError("rank " + rank + ": the kernel thread is still waiting after " + timeout);
        }
        Throwable e = kernelError.get();
        if (e instanceof JmscclppException je) {
            throw je;
        } else if (e != null) {
            throw new AssertionError("the kernel thread failed", e);
        }
        for (Host2DeviceSemaphore.DeviceHandle h : handles) {
            if (h.expectedValue() != 1 || h.inboundValue() != 1 || h.poll()) {
                throw new AssertionError("rank " + rank + ": a device handle consumed " + h.expectedValue()
                        + " of " + h.inboundValue() + " signals, expected 1 of 1");
            }
        }
        checkAll(0);
    }

    private <S> Map<Integer, S> collect(IntFunction<Mono<S>> build) {
        List<Integer> peers = peers();
        List<S> built = Flux.fromIterable(peers).flatMapSequential(build::apply).collectList()
                .block(timeout.plusSeconds(10));
        if (built == null || built.size() != peers.size()) {
            throw new AssertionError("built " + built + " for peers " + peers);
        }
        Map<Integer, S> out = new TreeMap<>();
        for (int i = 0; i < peers.size(); i++) {
            out.put(peers.get(i), built.get(i));
        }
        return out;
    }

    private void signalAndWaitAll(Map<Integer, Host2HostSemaphore> sems) {
        sems.values().forEach(Host2HostSemaphore::signal);
        Flux.fromIterable(sems.values()).concatMap(s -> s.nextSignal(timeout)).then().block(timeout.plusSeconds(10));
    }

    /** Fills my slice of every buffer with the round's pattern, writes it into every peer, flushes. */
    private void fillAndWrite(int round) {
        long sliceBytes = BUFFER_BYTES / n;
        long offset = sliceBytes * rank;
        for (int b = 0; b < BUFFERS; b++) {
            MemorySegment seg = buffers.get(b).hostSegment();
            for (long i = offset / Integer.BYTES; i < (offset + sliceBytes) / Integer.BYTES; i++) {
                seg.setAtIndex(ValueLayout.JAVA_INT, i, expected(b, i, round));
            }
        }
        for (int p : peers()) {
            Connection c = connections.get(p);
            for (int b = 0; b < BUFFERS; b++) {
                c.write(remote.get(p).get(b), offset, local.get(b), offset, sliceBytes);
            }
        }
        Flux.fromIterable(connections.values()).concatMap(c -> c.flush(timeout)).then().block(timeout.plusSeconds(10));
    }

    private int expected(int buffer, long element, int round) {
        return (int) (element + (long) n * buffer + 1 + (long) round * ROUND_STEP);
    }

    /** Checks every element of every slice of every buffer; the first wrong one is an AssertionError. */
    private void checkAll(int round) {
        long ints = BUFFER_BYTES / Integer.BYTES;
        long perSlice = ints / n;
        for (int b = 0; b < BUFFERS; b++) {
            MemorySegment seg = buffers.get(b).hostSegment();
            for (long i = 0; i < ints; i++) {
                int want = expected(b, i, round);
                int got = seg.getAtIndex(ValueLayout.JAVA_INT, i);
                if (got != want) {
                    throw new AssertionError("rank " + rank + ", round " + round + ", buffer " + b + ", element " + i
                            + " (slice of rank " + i / perSlice + "): expected " + want + ", found " + got);
                }
            }
        }
    }

    private List<Integer> peers() {
        List<Integer> peers = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            if (p != rank) {
                peers.add(p);
            }
        }
        return peers;
    }

    /** Closes the communicator (connections, peers' mappings), then my registrations and buffers. */
    private void close() {
        comm.close();
        local.forEach(RegisteredMemory::close);
        buffers.forEach(DeviceBuffer::close);
    }

    /**
     * What this process still holds of {@code dir}, as {@code files=F fds=D maps=M}; all three must
     * be 0 once everything is closed.
     *
     * @throws AssertionError when any is not 0, naming them
     */
    static String leftovers(Path dir) throws IOException {
        Path abs = dir.toAbsolutePath();
        String mine = "jmscclpp-" + ProcessHandle.current().pid() + "-";
        List<String> files;
        try (Stream<Path> s = Files.list(abs)) {
            files = s.map(p -> p.getFileName().toString()).filter(f -> f.startsWith(mine)).toList();
        }
        List<String> fds = ResourceSnapshot.openFds().values().stream().filter(t -> t.startsWith(abs.toString()))
                .toList();
        List<String> maps = Files.readAllLines(Path.of("/proc/self/maps")).stream()
                .filter(l -> l.contains(abs.toString())).toList();
        if (!files.isEmpty() || !fds.isEmpty() || !maps.isEmpty()) {
            throw new AssertionError("after closing, this process still has files " + files + ", descriptors " + fds
                    + " and mappings " + maps + " of " + abs);
        }
        return "files=0 fds=0 maps=0";
    }
}
