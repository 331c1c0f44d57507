package org.jmscclpp.core.host;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import java.util.function.LongSupplier;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.collective.AbstractCollectiveComm;
import org.jmscclpp.core.collective.Algorithm;
import org.jmscclpp.core.collective.CallDescriptor;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.Reductions;
import org.jmscclpp.core.collective.TuningTable;
import org.jmscclpp.core.spi.Closeables;
import org.jmscclpp.core.spi.HostIdentity;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The host backend's collectives when the ranks span hosts: every op runs as steps inside each
 * host, on a {@link HostCollectiveComm} of that host's ranks over shared memory, and steps between
 * the hosts, each rank exchanging with its <em>rail</em> (the ranks of the other hosts with the same
 * local index) over the network.
 *
 * <h2>Layout</h2>
 * Hosts are told apart by {@link HostIdentity#hostHash()} ({@code MSCCLPP_HOSTID} where set) and
 * ordered by their lowest rank; a rank's local index is its place among its host's ranks in rank
 * order. Every host must hold the same number of ranks ({@code L}); a job whose hosts differ
 * fails setup on every rank with INVALID_USAGE naming the hosts' ranks.
 *
 * <h2>Algorithms ({@code H} hosts)</h2>
 * <ul>
 *   <li>allReduce: allReduce inside the host; local rank {@code i} then reduces slice {@code i} of
 *       the result with its rail (every rail member gathers the {@code H} slices and folds them in
 *       host order), and an allGather inside the host hands every rank every slice. AVG runs as SUM
 *       and divides by the rank count once at the end.</li>
 *   <li>allGather: allGather inside the host, then every rank gathers the {@code H} host blocks
 *       from its rail, and places every rank's slot.</li>
 *   <li>reduceScatter and reduce: the allReduce above into scratch, then the rank's slot (the
 *       root's whole result).</li>
 *   <li>broadcast: broadcast inside the root's host, then each rank there sends to its rail.</li>
 *   <li>allToAll: inside the host, local rank {@code j} collects what the host sends to every
 *       host's local rank {@code j}; each rail then exchanges those blocks, and every rank places
 *       what came.</li>
 *   <li>send/recv: over the host's shared memory when both ranks share a host; otherwise over the
 *       bootstrap's connection between them (messages of at most {@value #CHUNK} bytes), the
 *       receiver checking the sender's descriptor and answering before any data moves.</li>
 * </ul>
 * The steps between hosts run on a {@link HostRail}: one-sided writes and semaphore signals over
 * {@code ETHERNET} connections between the rail's members. Calls are always staged (registering a
 * buffer is accepted and changes nothing). Before every collective call the ranks compare their
 * descriptors over the bootstrap; ranks that disagree fail with INVALID_USAGE naming them.
 * Calls run one batch at a time on a virtual thread, in issue order.
 */
final class HierarchicalHostComm extends AbstractCollectiveComm {

    static final String TOPOLOGY = "hosts";
    /** Largest bootstrap message of a send or receive between hosts. */
    static final int CHUNK = 4 << 20;

    static final List<Algorithm> ALGORITHMS = List.of(
            new Algorithm(CollectiveKind.ALL_REDUCE, "hier", 11,
                    "allReduce in each host, slice i reduced over rail i between hosts, allGather in each host"),
            new Algorithm(CollectiveKind.ALL_GATHER, "hier", 12,
                    "allGather in each host, then the host blocks over each rail"),
            new Algorithm(CollectiveKind.REDUCE_SCATTER, "hier", 13, "the hierarchical allReduce, then this rank's slot"),
            new Algorithm(CollectiveKind.BROADCAST, "hier", 14,
                    "broadcast in the root's host, then from each of its ranks over its rail"),
            new Algorithm(CollectiveKind.REDUCE, "hier", 15, "the hierarchical allReduce, kept by the root"),
            new Algorithm(CollectiveKind.ALL_TO_ALL, "hier", 16,
                    "allToAll in each host grouped by destination local index, then over each rail"),
            new Algorithm(CollectiveKind.SEND, "hier", 17,
                    "shared memory inside a host, the bootstrap's connection between hosts"),
            new Algorithm(CollectiveKind.RECV, "hier", 17,
                    "shared memory inside a host, the bootstrap's connection between hosts"));

    /** Bootstrap tags (this prefix | the options' tag): point-to-point messages between hosts and their answers. */
    private static final int P2P_TAGS = 0x4F000000;
    private static final int P2P_ANSWER_TAGS = 0x51000000;

    private final HostBackend backend;
    private final Bootstrap bootstrap;
    /** ranksOf[h][i]: the rank of local index i on host h. */
    private final int[][] ranksOf;
    private final int[] hostOf;
    private final int[] localOf;
    private final int hosts;
    private final int perHost;
    private final int host;
    private final int local;
    private final Communicator hostCommunicator;
    private final CollectiveComm hostComm;
    private final HostRail rail;
    private final ExecutorService worker;
    private final Scratch scratch = new Scratch();

    private HierarchicalHostComm(Communicator communicator, CollectiveOptions options, HostBackend backend,
                                 TuningTable tuning, int[][] ranksOf, Communicator hostCommunicator,
                                 CollectiveComm hostComm, HostRail rail) {
        super(communicator, options, ALGORITHMS, tuning, TOPOLOGY);
        this.backend = backend;
        this.bootstrap = communicator.bootstrap();
        this.ranksOf = ranksOf;
        this.hosts = ranksOf.length;
        this.perHost = ranksOf[0].length;
        this.hostOf = new int[size];
        this.localOf = new int[size];
        for (int h = 0; h < hosts; h++) {
            for (int i = 0; i < perHost; i++) {
                hostOf[ranksOf[h][i]] = h;
                localOf[ranksOf[h][i]] = i;
            }
        }
        this.host = hostOf[rank];
        this.local = localOf[rank];
        this.hostCommunicator = hostCommunicator;
        this.hostComm = hostComm;
        this.rail = rail;
        this.worker = Executors.newSingleThreadExecutor(Thread.ofVirtual().name("jmscclpp-hier-r" + rank).factory());
    }

    /**
     * The hosts of the job by the ranks on each (ordered by lowest rank, each host's ranks in rank
     * order), from every rank's host hash; INVALID_USAGE naming the hosts when their rank counts differ.
     */
    static int[][] hostsOf(long[] hashes, int rank, String phase) {
        Map<Long, List<Integer>> byHost = new LinkedHashMap<>();
        for (int r = 0; r < hashes.length; r++) {
            byHost.computeIfAbsent(hashes[r], k -> new ArrayList<>()).add(r);
        }
        List<List<Integer>> groups = new ArrayList<>(byHost.values());
        int perHost = groups.getFirst().size();
        for (List<Integer> g : groups) {
            if (g.size() != perHost) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the hosts of the job hold different "
                        + "numbers of ranks (the hierarchical collectives need the same number on every host): "
                        + "the host of ranks " + groups.getFirst() + " holds " + perHost + ", the host of ranks " + g
                        + " holds " + g.size()).rank(rank).peer(g.getFirst()).phase(phase).build();
            }
        }
        int[][] ranksOf = new int[groups.size()][];
        for (int h = 0; h < groups.size(); h++) {
            ranksOf[h] = groups.get(h).stream().mapToInt(Integer::intValue).toArray();
        }
        return ranksOf;
    }

    static Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options, TuningTable tuning) {
        return create(communicator, options, tuning, HostIdentity::hostHash, Transport.ETHERNET);
    }

    /**
     * As above, with {@code hostHash} telling this rank's host and {@code railTransport} carrying the
     * steps between hosts (tests split one host into several, and connect them over HOST_IPC).
     */
    static Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options, TuningTable tuning,
                                       LongSupplier hostHash, Transport railTransport) {
        return setUpOnVirtualThread(() -> setUp(communicator, options, tuning, hostHash.getAsLong(), railTransport));
    }

    private static HierarchicalHostComm setUp(Communicator communicator, CollectiveOptions options, TuningTable tuning,
                                              long hostHash, Transport railTransport) {
        int rank = communicator.rank();
        String phase = "collective setup";
        if (!(communicator.backend() instanceof HostBackend backend)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the host collective engine runs on the host "
                    + "backend, not " + communicator.backend().name()).rank(rank).phase(phase).build();
        }
        Duration timeout = timeoutOf(communicator, options);
        Bootstrap bs = communicator.bootstrap();
        byte[] mine = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(hostHash).array();
        ByteBuffer all = ByteBuffer.wrap(Objects.requireNonNull(bs.allGather(mine, timeout)
                .timeout(timeout.plusSeconds(5)).block())).order(ByteOrder.LITTLE_ENDIAN);
        long[] hashes = new long[communicator.size()];
        for (int r = 0; r < hashes.length; r++) {
            hashes[r] = all.getLong();
        }
        int[][] ranksOf = hostsOf(hashes, rank, phase);
        int host = -1;
        int local = -1;
        for (int h = 0; h < ranksOf.length; h++) {
            int at = Arrays.binarySearch(ranksOf[h], rank);
            if (at >= 0) {
                host = h;
                local = at;
            }
        }
        int[] railMembers = new int[ranksOf.length];
        for (int h = 0; h < ranksOf.length; h++) {
            railMembers[h] = ranksOf[h][local];
        }
        SubsetBootstrap hostBootstrap = new SubsetBootstrap(bs, ranksOf[host], ranksOf[host].length);
        Communicator hostCommunicator = Communicator.create(hostBootstrap, backend);
        List<AutoCloseable> made = new ArrayList<>(List.of(hostCommunicator));
        try {
            CollectiveComm hostComm = Objects.requireNonNull(HostCollectiveComm.create(hostCommunicator, options,
                    tuning).timeout(timeout.plusSeconds(5)).block());
            made.addFirst(hostComm);
            // the rail's waits end with the job's failure, as the collective communicator's watch sees it
            AtomicReference<@Nullable HierarchicalHostComm> self = new AtomicReference<>();
            HostRail rail = HostRail.open(new SubsetBootstrap(bs, railMembers, 1), backend, railTransport, timeout,
                    () -> {
                        HierarchicalHostComm c = self.get();
                        return c == null ? null : c.peerFailure();
                    });
            made.addFirst(rail);
            HierarchicalHostComm comm = new HierarchicalHostComm(communicator, options, backend, tuning, ranksOf,
                    hostCommunicator, hostComm, rail);
            self.set(comm);
            comm.startWatch();
            return comm;
        } catch (RuntimeException e) {
            Closeables.closeAll(made, e);
            throw e;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // engine contract

    @Override
    protected Mono<Void> execute(Batch batch) {
        Sinks.One<Void> done = Sinks.one();
        worker.execute(() -> {
            try {
                run(batch);
                done.tryEmitEmpty();
            } catch (Throwable t) {
                done.tryEmitError(t);
            }
        });
        return done.asMono();
    }

    @Override
    protected void checkBuffer(DeviceBuffer buffer, String which) {
        HostCollectiveComm.checkHostBuffer(backend, rank, buffer, which);
    }

    /** Registrations travel with no transport: calls here are always staged. */
    @Override
    protected TransportFlags registrationTransports() {
        return TransportFlags.NONE;
    }

    @Override
    protected void release() {
        worker.shutdown();
        try {
            if (!worker.awaitTermination(timeout.toMillis() + 5_000, TimeUnit.MILLISECONDS)) {
                worker.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Closeables.closeAll(List.of(rail, hostComm, hostCommunicator, scratch));
    }

    // ---------------------------------------------------------------------------------------------
    // running calls

    private void run(Batch batch) {
        JmscclppException broken = failure().orElse(null);
        if (broken != null) {
            throw broken;   // an earlier call broke the communicator; the peers are not in this one
        }
        long deadline = System.nanoTime() + batch.timeout().toNanos();
        List<Planned> pointToPoint = new ArrayList<>();
        for (Planned p : batch.calls()) {
            if (p.call().kind().pointToPoint()) {
                pointToPoint.add(p);
            }
        }
        if (!pointToPoint.isEmpty()) {
            runPointToPoint(pointToPoint, deadline);
        }
        for (Planned p : batch.calls()) {
            if (!p.call().kind().pointToPoint()) {
                agree(p.descriptor(), deadline);
                runCollective(p.call(), deadline);
            }
        }
    }

    /** Compares this call's descriptor with every rank's over the bootstrap: INVALID_USAGE on every rank when they differ. */
    private void agree(CallDescriptor mine, long deadline) {
        long[] words = mine.words();
        byte[] out = ByteBuffer.allocate(CallDescriptor.BYTES).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(words[0]).putLong(words[1]).putLong(0).putLong(0).array();
        byte[] all = await(bootstrap.allGather(out, left(deadline)), deadline, "descriptors");
        ByteBuffer in = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        List<CallDescriptor> byRank = new ArrayList<>(size);
        for (int r = 0; r < size; r++) {
            long[] w = {in.getLong(), in.getLong(), in.getLong(), in.getLong()};
            byRank.add(CallDescriptor.decode(w, 0));
        }
        CallDescriptor.mismatch(byRank, this::algorithmName).ifPresent(why -> {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, why).rank(rank).phase("collective").build();
        });
    }

    private void runCollective(CollectiveCall call, long deadline) {
        long count = call.count();
        switch (call.kind()) {
            case ALL_REDUCE -> {
                if (count > 0) {
                    allReduce(Objects.requireNonNull(call.send()), Objects.requireNonNull(call.recv()), count,
                            call.type(), Objects.requireNonNull(call.op()), deadline);
                }
            }
            case ALL_GATHER -> allGather(call, deadline);
            case REDUCE_SCATTER -> {
                if (count > 0) {
                    MemorySegment all = scratch.get(0, count * size * call.type().bytes());
                    allReduce(Objects.requireNonNull(call.send()), DeviceBuffer.wrap(all), count * size, call.type(),
                            Objects.requireNonNull(call.op()), deadline);
                    long bytes = count * call.type().bytes();
                    MemorySegment.copy(all, rank * bytes, segment(call.recv()), 0, bytes);
                }
            }
            case REDUCE -> {
                if (count > 0) {
                    MemorySegment result = scratch.get(0, count * call.type().bytes());
                    allReduce(Objects.requireNonNull(call.send()), DeviceBuffer.wrap(result), count, call.type(),
                            Objects.requireNonNull(call.op()), deadline);
                    if (rank == call.root()) {
                        MemorySegment.copy(result, 0, segment(call.recv()), 0, result.byteSize());
                    }
                }
            }
            case BROADCAST -> broadcast(call, deadline);
            case ALL_TO_ALL -> allToAll(call, deadline);
            default -> throw new IllegalStateException("not a collective: " + call.kind());
        }
    }

    /**
     * {@code recv} (count elements) = the reduction over every rank's {@code send}: allReduce in the
     * host, slice {@code local} over the rail, allGather of the slices in the host. Sums, products
     * and averages of 8- and 16-bit floats run in float32 and are rounded to the type once at the
     * end, as the single-host algorithms round them: rounding after each level instead would err
     * by up to an ulp per level (twice the host data moved is the price).
     */
    private void allReduce(DeviceBuffer send, DeviceBuffer recvBuffer, long count, DataType type, ReduceOp op,
                           long deadline) {
        if (op != ReduceOp.MIN && op != ReduceOp.MAX && type.isFloatingPoint() && type.bytes() < 4) {
            MemorySegment wideSend = scratch.get(4, count * 4);
            MemorySegment wideRecv = scratch.get(5, count * 4);
            Reductions.toFloat32(type, send.hostSegment(), 0, wideSend, 0, count);
            allReduce(DeviceBuffer.wrap(wideSend), DeviceBuffer.wrap(wideRecv), count, DataType.FLOAT32, op, deadline);
            Reductions.fromFloat32(type, wideRecv, 0, recvBuffer.hostSegment(), 0, count);
            return;
        }
        ReduceOp partial = op == ReduceOp.AVG ? ReduceOp.SUM : op;
        int e = type.bytes();
        await(hostComm.allReduce(send, recvBuffer, count, type, partial), deadline, "allReduce in the host");
        MemorySegment recv = recvBuffer.hostSegment();
        long lo = count * local / perHost;
        long n = count * (local + 1) / perHost - lo;
        if (hosts > 1 && n > 0) {
            MemorySegment gathered = scratch.get(1, n * e * hosts);
            MemorySegment.copy(recv, lo * e, gathered, host * n * e, n * e);
            railExchange(n * e, p -> recv.asSlice(lo * e, n * e), p -> gathered.asSlice(p * n * e, n * e), -1,
                    deadline);
            MemorySegment[] sources = new MemorySegment[hosts];
            long[] offsets = new long[hosts];
            Arrays.fill(sources, gathered);
            for (int h = 0; h < hosts; h++) {
                offsets[h] = h * n * e;
            }
            Reductions.reduce(type, partial, sources, offsets, recv, lo * e, n);
        }
        if (op == ReduceOp.AVG) {
            divide(type, recv, lo * e, n, size);
        }
        if (perHost > 1) {
            long padded = (count + perHost - 1) / perHost;
            MemorySegment mine = scratch.get(2, padded * e);
            MemorySegment slices = scratch.get(3, padded * e * perHost);
            MemorySegment.copy(recv, lo * e, mine, 0, n * e);
            await(hostComm.allGather(DeviceBuffer.wrap(mine), DeviceBuffer.wrap(slices), padded, type), deadline,
                    "allGather of the slices in the host");
            for (int j = 0; j < perHost; j++) {
                long jlo = count * j / perHost;
                long jn = count * (j + 1) / perHost - jlo;
                MemorySegment.copy(slices, j * padded * e, recv, jlo * e, jn * e);
            }
        }
    }

    private void allGather(CollectiveCall call, long deadline) {
        long c = call.count();
        if (c == 0) {
            return;
        }
        long bytes = c * call.type().bytes();
        long block = bytes * perHost;
        MemorySegment byHost = scratch.get(0, block * hosts);
        MemorySegment mine = byHost.asSlice(host * block, block);
        await(hostComm.allGather(Objects.requireNonNull(call.send()), DeviceBuffer.wrap(mine), c, call.type()),
                deadline, "allGather in the host");
        railExchange(block, p -> mine, p -> byHost.asSlice(p * block, block), -1, deadline);
        placeByRank(byHost, bytes, segment(call.recv()));
    }

    /**
     * Copies the {@code bytes} of every rank from {@code byHost} (host blocks in host order, each
     * holding its ranks in local order) to that rank's slot of {@code recv}.
     */
    private void placeByRank(MemorySegment byHost, long bytes, MemorySegment recv) {
        for (int h = 0; h < hosts; h++) {
            for (int i = 0; i < perHost; i++) {
                MemorySegment.copy(byHost, (h * perHost + i) * bytes, recv, ranksOf[h][i] * bytes, bytes);
            }
        }
    }

    private void broadcast(CollectiveCall call, long deadline) {
        long count = call.count();
        if (count == 0) {
            return;
        }
        int rootHost = hostOf[call.root()];
        DeviceBuffer recv = Objects.requireNonNull(call.recv());
        if (host == rootHost) {
            await(hostComm.broadcast(call.send(), recv, count, call.type(), localOf[call.root()]), deadline,
                    "broadcast in the root's host");
        }
        MemorySegment r = recv.hostSegment();
        railExchange(count * call.type().bytes(), p -> r, p -> r, rootHost, deadline);
    }

    private void allToAll(CollectiveCall call, long deadline) {
        long c = call.count();
        if (c == 0) {
            return;
        }
        long bytes = c * call.type().bytes();
        long block = bytes * hosts;
        MemorySegment send = segment(call.send());
        // byLocal: block j holds, per host h, what this rank sends to local rank j of host h
        MemorySegment byLocal = scratch.get(0, block * perHost);
        for (int j = 0; j < perHost; j++) {
            for (int h = 0; h < hosts; h++) {
                MemorySegment.copy(send, ranksOf[h][j] * bytes, byLocal, j * block + h * bytes, bytes);
            }
        }
        // fromLocal: block i holds, per host h, what local rank i of this host sends to (h, this local index)
        MemorySegment fromLocal = scratch.get(1, block * perHost);
        await(hostComm.allToAll(DeviceBuffer.wrap(byLocal), DeviceBuffer.wrap(fromLocal), hosts * c, call.type()),
                deadline, "allToAll in the host");
        // toHost: block h holds, per local rank i, what (this host, i) sends to (h, this local index)
        long railBlock = bytes * perHost;
        MemorySegment toHost = scratch.get(2, railBlock * hosts);
        for (int h = 0; h < hosts; h++) {
            for (int i = 0; i < perHost; i++) {
                MemorySegment.copy(fromLocal, i * block + h * bytes, toHost, h * railBlock + i * bytes, bytes);
            }
        }
        MemorySegment fromHost = scratch.get(3, railBlock * hosts);
        MemorySegment.copy(toHost, host * railBlock, fromHost, host * railBlock, railBlock);
        railExchange(railBlock, p -> toHost.asSlice(p * railBlock, railBlock),
                p -> fromHost.asSlice(p * railBlock, railBlock), -1, deadline);
        placeByRank(fromHost, bytes, segment(call.recv()));
    }

    /** One step between hosts on this rank's rail: {@link HostRail#exchange}. */
    private void railExchange(long bytes, IntFunction<MemorySegment> out, IntFunction<MemorySegment> in, int from,
                              long deadline) {
        rail.exchange(bytes, out, in, from, deadline);
    }

    /**
     * The sends and receives of a batch, progressing together: those within this host as one group
     * of the host's communicator, those to other hosts over the bootstrap.
     */
    private void runPointToPoint(List<Planned> calls, long deadline) {
        List<Planned> inHost = new ArrayList<>();
        // across hosts, the sends to one peer go one after the other, and so do the receives from
        // one: their messages share a tag, and the i-th send must meet the i-th receive
        Map<Integer, List<Planned>> across = new LinkedHashMap<>();
        for (Planned p : calls) {
            int peer = p.call().peer();
            if (hostOf[peer] == host) {
                inHost.add(p);
            } else {
                int key = p.call().kind() == CollectiveKind.SEND ? peer : -1 - peer;
                across.computeIfAbsent(key, k -> new ArrayList<>()).add(p);
            }
        }
        List<Mono<Void>> steps = new ArrayList<>();
        for (List<Planned> inOrder : across.values()) {
            steps.add(Flux.fromIterable(inOrder).concatMap(p -> p.call().kind() == CollectiveKind.SEND
                    ? sendAcross(p, deadline) : recvAcross(p, deadline)).then());
        }
        if (!inHost.isEmpty()) {
            steps.add(hostComm.group(g -> {
                for (Planned p : inHost) {
                    CollectiveCall c = p.call();
                    int peer = localOf[c.peer()];
                    if (c.kind() == CollectiveKind.SEND) {
                        g.send(c.send(), c.count(), c.type(), peer);
                    } else {
                        g.recv(c.recv(), c.count(), c.type(), peer);
                    }
                }
            }));
        }
        await(Mono.when(steps), deadline, "sends and receives");
    }

    /** The descriptor, then (once the receiver answered that it matches) the data in chunks. */
    private Mono<Void> sendAcross(Planned p, long deadline) {
        CollectiveCall c = p.call();
        int peer = c.peer();
        int dataTag = tag(P2P_TAGS);
        long[] w = p.descriptor().words();
        byte[] header = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(w[0]).putLong(w[1]).array();
        long bytes = c.count() * c.type().bytes();
        return bootstrap.send(peer, dataTag, header, left(deadline))
                .then(Mono.defer(() -> bootstrap.recv(peer, tag(P2P_ANSWER_TAGS),
                        left(deadline))))
                .flatMap(answer -> {
                    if (answer.length > 0) {
                        return Mono.error(JmscclppException.builder(ErrorCode.INVALID_USAGE,
                                new String(answer, StandardCharsets.UTF_8)).rank(rank).peer(peer)
                                .phase("send").build());
                    }
                    MemorySegment src = bytes == 0 ? MemorySegment.NULL : segment(c.send());
                    List<Mono<Void>> chunks = new ArrayList<>();
                    for (long off = 0; off < bytes; off += CHUNK) {
                        int n = (int) Math.min(CHUNK, bytes - off);
                        long at = off;
                        chunks.add(Mono.defer(() -> bootstrap.send(peer, dataTag,
                                src.asSlice(at, n).toArray(ValueLayout.JAVA_BYTE), left(deadline))));
                    }
                    return Flux.concat(chunks).then();
                });
    }

    private Mono<Void> recvAcross(Planned p, long deadline) {
        CollectiveCall c = p.call();
        int peer = c.peer();
        int dataTag = tag(P2P_TAGS);
        long bytes = c.count() * c.type().bytes();
        return bootstrap.recv(peer, dataTag, left(deadline)).flatMap(header -> {
            ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
            CallDescriptor theirs = CallDescriptor.decode(new long[] {h.getLong(), h.getLong(), 0, 0}, 0);
            String why = CallDescriptor.pointToPointMismatch(peer, theirs, rank, p.descriptor(), this::algorithmName)
                    .orElse(null);
            byte[] answer = why == null ? new byte[0] : why.getBytes(StandardCharsets.UTF_8);
            Mono<Void> answered = bootstrap.send(peer, tag(P2P_ANSWER_TAGS), answer,
                    left(deadline));
            if (why != null) {
                return answered.then(Mono.error(JmscclppException.builder(ErrorCode.INVALID_USAGE, why).rank(rank)
                        .peer(peer).phase("recv").build()));
            }
            MemorySegment dst = bytes == 0 ? MemorySegment.NULL : segment(c.recv());
            List<Mono<byte[]>> chunks = new ArrayList<>();
            for (long off = 0; off < bytes; off += CHUNK) {
                int n = (int) Math.min(CHUNK, bytes - off);
                long at = off;
                chunks.add(bootstrap.recv(peer, dataTag, left(deadline)).doOnNext(data -> {
                    if (data.length != n) {
                        throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "rank " + peer + " sent " + data.length
                                + " bytes, expected " + n).rank(rank).peer(peer).phase("recv").build();
                    }
                    MemorySegment.copy(MemorySegment.ofArray(data), 0, dst, at, n);
                }));
            }
            return answered.then(Flux.concat(chunks).then());
        });
    }

    // ---------------------------------------------------------------------------------------------
    // helpers

    /**
     * {@code n} elements at {@code offset} divided by {@code divisor}: {@link ReduceOp#AVG}'s
     * division of a sum, as {@link Reductions#reduceBits} defines it, given the sum and
     * {@code divisor - 1} elements that add nothing (zero; for floating types -0, so that a sum of
     * -0 stays -0, as the average of -0s is).
     */
    static void divide(DataType type, MemorySegment segment, long offset, long n, int divisor) {
        int e = type.bytes();
        long[] bits = new long[divisor];
        Arrays.fill(bits, type.isFloatingPoint() ? 1L << (8 * e - 1) : 0);
        for (long k = 0; k < n; k++) {
            long at = offset + k * e;
            long v = 0;
            for (int b = 0; b < e; b++) {
                v |= (segment.get(ValueLayout.JAVA_BYTE, at + b) & 0xFFL) << (8 * b);
            }
            bits[0] = v;
            long q = Reductions.reduceBits(type, ReduceOp.AVG, bits);
            for (int b = 0; b < e; b++) {
                segment.set(ValueLayout.JAVA_BYTE, at + b, (byte) (q >>> (8 * b)));
            }
        }
    }

    /** The bootstrap tag of {@code prefix} for this communicator: the prefix | the options' tag (low 24 bits). */
    private int tag(int prefix) {
        return prefix | (options.tag() & 0xFFFFFF);
    }

    private static MemorySegment segment(@Nullable DeviceBuffer buffer) {
        return Objects.requireNonNull(buffer, "buffer").hostSegment();
    }

    private static Duration left(long deadline) {
        return Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
    }

    private <T> T await(Mono<T> step, long deadline, String what) {
        try {
            return step.timeout(left(deadline).plusSeconds(5)).block();
        } catch (RuntimeException e) {
            Throwable cause = e instanceof JmscclppException ? e : e.getCause();
            if (cause instanceof JmscclppException je) {
                throw je;
            }
            throw JmscclppException.builder(ErrorCode.TIMEOUT, what + " did not end in time: " + e).rank(rank)
                    .phase("collective").cause(e).build();
        }
    }

    /** Scratch segments of the calls, grown as needed and reused (the worker thread only). */
    private static final class Scratch implements AutoCloseable {
        private final Arena[] arenas = new Arena[6];
        private final MemorySegment[] segments = new MemorySegment[6];

        MemorySegment get(int slot, long bytes) {
            MemorySegment s = segments[slot];
            if (s == null || s.byteSize() < bytes) {
                if (arenas[slot] != null) {
                    arenas[slot].close();
                }
                arenas[slot] = Arena.ofShared();
                s = arenas[slot].allocate(Math.max(bytes, 64), 64);
                segments[slot] = s;
            }
            return s.asSlice(0, bytes);
        }

        @Override
        public synchronized void close() {
            for (Arena a : arenas) {
                if (a != null) {
                    a.close();
                }
            }
        }
    }
}
