package org.jmscclpp.core.host;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.DeviceBufferSlice;
import org.jmscclpp.core.DeviceType;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.collective.AbstractCollectiveComm;
import org.jmscclpp.core.collective.Algorithm;
import org.jmscclpp.core.collective.CallDescriptor;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.Reductions;
import org.jmscclpp.core.collective.TuningTable;
import org.jmscclpp.core.spi.Closeables;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The host backend's collective communicator: CPU ranks of one host, every rank's scratch a
 * shared-memory file that every peer maps.
 *
 * <h2>How a collective runs</h2>
 * In rounds. In a round each rank (1) publishes the part of its send buffer the round needs into
 * its scratch, unless the call is on registered buffers ({@code direct}); (2) writes its
 * {@link CallDescriptor} into every peer's mailbox and signals every peer; (3) waits for every
 * peer's signal and compares all descriptors, so that ranks that disagree fail together before
 * anything is read; (4) reads what it needs from the peers' scratch (or, direct, from their
 * registered buffers at the locations their descriptors name) and computes its own receive buffer.
 * Allreduce reduces in two steps (rank r reduces slice r from every rank, then everyone copies
 * every slice), so every rank computes a share and every rank gets the same bits. Staged calls
 * larger than a half of the scratch take several rounds. The scratch has two halves, used by
 * alternate rounds: a rank writes a half again two rounds later, after every peer entered the
 * round between, i.e. finished reading it. Direct calls end with a barrier, since peers read the
 * caller's own buffers.
 *
 * <h2>Sends and receives</h2>
 * Per ordered pair of ranks: the sender stages a chunk in its scratch (or, registered, points at
 * its buffer), writes the chunk's descriptor into the receiver's box and signals; the receiver
 * compares it with its receive, copies the chunk and answers in the sender's reply box. The calls
 * of a group progress together, so no order of sends and receives deadlocks.
 *
 * <p>Signals are 64-bit counters in the receiver's scratch that the sender raises with a release
 * add; waits poll them (spinning briefly, then parking) until the batch's deadline, and look at the
 * bootstrap's news of a dead peer (REMOTE_ERROR) while they wait. Calls run one at a time on a
 * virtual thread of the communicator, in issue order.
 */
final class HostCollectiveComm extends AbstractCollectiveComm {

    static final String TOPOLOGY = "shm";
    static final long DEFAULT_SCRATCH = 16L << 20;
    static final long MIN_SCRATCH = 64L << 10;
    /** The largest scratch: its layout (the scratch, the headers and the staged sends of every rank) fits in a long. */
    static final long MAX_SCRATCH = 1L << 62;
    /** Bytes of one chunk of a send or receive that is staged. */
    static final long P2P_CHUNK = 1L << 20;

    static final Algorithm ALL_REDUCE = new Algorithm(CollectiveKind.ALL_REDUCE, "rsag", 1,
            "rank r reduces slice r of every rank's data, then every rank copies every slice (shared memory)");
    static final Algorithm ALL_GATHER = new Algorithm(CollectiveKind.ALL_GATHER, "direct", 2,
            "every rank copies every rank's slice from shared memory");
    static final Algorithm REDUCE_SCATTER = new Algorithm(CollectiveKind.REDUCE_SCATTER, "direct", 3,
            "rank r reduces slot r of every rank's data from shared memory");
    static final Algorithm BROADCAST = new Algorithm(CollectiveKind.BROADCAST, "direct", 4,
            "every rank copies the root's data from shared memory");
    static final Algorithm REDUCE = new Algorithm(CollectiveKind.REDUCE, "direct", 5,
            "the root reduces every rank's data from shared memory");
    static final Algorithm ALL_TO_ALL = new Algorithm(CollectiveKind.ALL_TO_ALL, "direct", 6,
            "every rank copies its slot of every rank's data from shared memory");
    static final Algorithm SEND = new Algorithm(CollectiveKind.SEND, "chunked", 7,
            "chunks through the sender's shared memory (or from its registered buffer), acknowledged by the receiver");
    static final Algorithm RECV = new Algorithm(CollectiveKind.RECV, "chunked", 7, SEND.synopsis());
    static final List<Algorithm> ALGORITHMS = List.of(ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE,
            ALL_TO_ALL, SEND, RECV);

    // signal channels: a counter per (sender, channel) in the receiver's header
    private static final int COLL = 0;
    private static final int DATA = 1;
    private static final int ACK = 2;
    private static final int CHANNELS = 3;

    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final long BOX = 64;
    /** A thread that never runs: no segment is confined to it ({@link #checkHostBuffer}). */
    private static final Thread NOT_AN_OWNER = Thread.ofVirtual().unstarted(() -> { });

    private final HostBackend backend;
    private final long chunk;
    private final Layout layout;
    private final DeviceBuffer scratch;
    private final RegisteredMemory scratchMemory;
    /** Every rank's scratch as mapped here, this rank's own at {@link #rank}. */
    private final MemorySegment[] scratchOf;
    private final List<RegisteredMemory> peerScratch;

    /** Signals consumed, per (peer, channel). Worker thread only. */
    private final long[] consumed;
    /** Collective rounds run so far; the same on every rank. Worker thread only. */
    private long rounds;

    private final LinkedBlockingQueue<Job> jobs = new LinkedBlockingQueue<>();
    private final Thread worker;

    private record Job(@Nullable Batch batch, Sinks.One<Void> done) {
    }

    /** Where things live in every rank's scratch (the same offsets on every rank). */
    record Layout(int n, long chunk) {
        long signal(int from, int channel) {
            return (from * (long) CHANNELS + channel) * 8;
        }

        long mailbox(int from, long round) {
            return align(n * (long) CHANNELS * 8) + (from * 2L + (round & 1)) * BOX;
        }

        long dataBox(int from) {
            return mailbox(0, 0) + 2L * n * BOX + from * BOX;
        }

        long replyBox(int from) {
            return dataBox(0) + n * BOX + from * BOX;
        }

        long header() {
            return align(replyBox(0) + n * BOX);
        }

        /** The published input of rounds of {@code round}'s parity. */
        long in(long round) {
            return header() + (round & 1) * 2 * chunk;
        }

        /** The results (allreduce's reduced slices) of rounds of {@code round}'s parity. */
        long out(long round) {
            return in(round) + chunk;
        }

        long p2p(int to) {
            return header() + 4 * chunk + to * P2P_CHUNK;
        }

        long bytes() {
            return p2p(n);
        }

        private static long align(long x) {
            return (x + 4095) & ~4095L;
        }
    }

    private HostCollectiveComm(Communicator communicator, CollectiveOptions options, HostBackend backend, long chunk,
                               DeviceBuffer scratch, RegisteredMemory scratchMemory, MemorySegment[] scratchOf,
                               List<RegisteredMemory> peerScratch, TuningTable tuning) {
        super(communicator, options, ALGORITHMS, tuning, TOPOLOGY);
        this.backend = backend;
        this.chunk = chunk;
        this.layout = new Layout(communicator.size(), chunk);
        this.scratch = scratch;
        this.scratchMemory = scratchMemory;
        this.scratchOf = scratchOf;
        this.peerScratch = peerScratch;
        this.consumed = new long[communicator.size() * CHANNELS];
        this.worker = Thread.ofVirtual().name("jmscclpp-collective-r" + rank).unstarted(this::work);
    }

    /**
     * Sets up the communicator: checks that every rank passed the same scratch size, allocates and
     * registers this rank's scratch, and maps every peer's. Runs on a virtual thread.
     */
    static Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options, TuningTable tuning) {
        return setUpOnVirtualThread(() -> setUp(communicator, options, tuning));
    }

    private static HostCollectiveComm setUp(Communicator communicator, CollectiveOptions options, TuningTable tuning) {
        int rank = communicator.rank();
        int n = communicator.size();
        String phase = "collective setup";
        if (!(communicator.backend() instanceof HostBackend backend)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the host collective engine runs on the host "
                    + "backend, not " + communicator.backend().name()).rank(rank).phase(phase).build();
        }
        Duration timeout = timeoutOf(communicator, options);
        long scratchBytes = options.scratchBytes() == 0 ? DEFAULT_SCRATCH : options.scratchBytes();
        if (scratchBytes < MIN_SCRATCH) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the host engine needs at least " + MIN_SCRATCH
                    + " bytes of scratch, got " + scratchBytes).rank(rank).phase(phase).build();
        }
        if (scratchBytes > MAX_SCRATCH) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the host engine takes at most " + MAX_SCRATCH
                    + " bytes of scratch, got " + scratchBytes).rank(rank).phase(phase).build();
        }
        agree(communicator, scratchBytes, options.tag(), timeout, phase);
        long chunk = (scratchBytes / 4) & ~63L;
        Layout layout = new Layout(n, chunk);
        List<AutoCloseable> made = new ArrayList<>();
        try {
            DeviceBuffer scratch = backend.allocate(layout.bytes());
            made.add(scratch);
            RegisteredMemory mine = communicator.registerMemory(scratch, TransportFlags.of(Transport.HOST_IPC));
            made.add(mine);
            MemorySegment[] scratchOf = new MemorySegment[n];
            scratchOf[rank] = scratch.hostSegment();
            List<RegisteredMemory> peers = new ArrayList<>();
            List<Mono<?>> steps = new ArrayList<>();
            for (int p = 0; p < n; p++) {
                if (p == rank) {
                    continue;
                }
                int peer = p;
                steps.add(communicator.sendMemory(mine, peer, options.tag(), timeout));
                steps.add(communicator.recvMemory(peer, options.tag(), timeout).doOnNext(m -> {
                    synchronized (peers) {
                        peers.add(m);
                        scratchOf[peer] = m.hostSegment();
                    }
                }));
            }
            Mono.when(steps).timeout(timeout.plusSeconds(5)).block();
            for (int p = 0; p < n; p++) {
                if (scratchOf[p] == null || scratchOf[p].byteSize() < layout.bytes()) {
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "rank " + p + "'s scratch is "
                            + (scratchOf[p] == null ? "missing" : scratchOf[p].byteSize() + " bytes, not "
                            + layout.bytes())).rank(rank).peer(p).phase(phase).build();
                }
            }
            HostCollectiveComm comm = new HostCollectiveComm(communicator, options, backend, chunk, scratch, mine,
                    scratchOf, List.copyOf(peers), tuning);
            comm.worker.start();
            comm.startWatch();
            return comm;
        } catch (RuntimeException e) {
            Closeables.closeAll(made.reversed(), e);
            throw e;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // engine contract

    @Override
    protected Mono<Void> execute(Batch batch) {
        Sinks.One<Void> done = Sinks.one();
        jobs.add(new Job(batch, done));
        return done.asMono();
    }

    @Override
    protected boolean stagesInPlaceAllToAll(CollectiveCall call) {
        return false;   // allToAllInPlace
    }

    @Override
    protected void checkBuffer(DeviceBuffer buffer, String which) {
        checkHostBuffer(backend, rank, buffer, which);
    }

    /**
     * INVALID_USAGE unless {@code buffer} is {@code backend}'s shared memory or a wrapped host segment that the
     * engine's threads may access (not one of a confined arena, which only the thread that made it may touch).
     */
    static void checkHostBuffer(HostBackend backend, int rank, DeviceBuffer buffer, String which) {
        DeviceBuffer root = DeviceBufferSlice.root(buffer);
        boolean ours = root instanceof SharedMemoryBuffer s && s.backend() == backend;
        if (!ours && (!buffer.hostAccessible() || buffer.device().type() != DeviceType.CPU)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the " + which + " buffer is not host memory"
                    + " (the host collective engine takes buffers of its backend and wrapped host segments): "
                    + buffer).rank(rank).phase("collective").build();
        }
        // calls read and write their buffers on the engine's threads; a thread never started owns no segment, so a
        // segment it may not access is confined to the thread that made it (the engine's access would throw there,
        // after the peers began the call)
        if (!ours && !buffer.isClosed() && !buffer.hostSegment().isAccessibleBy(NOT_AN_OWNER)) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the " + which + " buffer wraps a segment"
                    + " confined to the thread that made it (Arena.ofConfined()), and calls run on threads of the"
                    + " collective engine: wrap memory of a shared, automatic or global arena, or an array: " + buffer)
                    .rank(rank).phase("collective").build();
        }
    }

    @Override
    protected TransportFlags registrationTransports() {
        return TransportFlags.of(Transport.HOST_IPC);
    }

    @Override
    protected boolean onCallThread() {
        return Thread.currentThread() == worker;
    }

    @Override
    protected void release() {
        // closed from a call's own completion, which runs on the worker: it cannot wait for itself
        boolean onWorker = onCallThread();
        if (!onWorker) {
            jobs.add(new Job(null, Sinks.one()));
            try {
                if (!worker.join(timeout.plusSeconds(5))) {
                    worker.interrupt();
                    worker.join(Duration.ofSeconds(5));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        Job left;
        while ((left = jobs.poll()) != null) {
            left.done().tryEmitError(JmscclppException.builder(ErrorCode.INVALID_USAGE, "the collective communicator"
                    + " was closed before this call ran").rank(rank).phase("close").build());
        }
        if (onWorker) {
            // after the drain, which would take it: the worker stops once this call's callbacks return
            jobs.add(new Job(null, Sinks.one()));
        }
        Closeables.closeAll(Stream.concat(peerScratch.stream(), Stream.of(scratchMemory, scratch)).toList());
    }

    @Override
    public String toString() {
        return "HostCollectiveComm[rank " + rank + " of " + size + ", " + 4 * chunk + " bytes of scratch]";
    }

    // ---------------------------------------------------------------------------------------------
    // the worker

    private void work() {
        while (true) {
            Job job;
            try {
                job = jobs.poll(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (job == null) {
                continue;
            }
            Batch batch = job.batch();
            if (batch == null) {
                return;
            }
            Optional<JmscclppException> broken = failure();
            if (broken.isPresent()) {
                job.done().tryEmitError(broken.get());
                continue;
            }
            try {
                run(batch);
                job.done().tryEmitEmpty();
            } catch (RuntimeException e) {
                breakWith(e);
                job.done().tryEmitError(e);
            }
        }
    }

    private void run(Batch batch) {
        long deadline = Waiting.deadline(batch.timeout());
        List<Planned> pointToPoint = new ArrayList<>();
        List<Planned> collectives = new ArrayList<>();
        for (Planned p : batch.calls()) {
            (p.call().kind().pointToPoint() ? pointToPoint : collectives).add(p);
        }
        if (!pointToPoint.isEmpty()) {
            new PointToPoint(pointToPoint, deadline, batch).run();
        }
        for (Planned p : collectives) {
            collective(p, deadline, batch);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // signals and waits

    private void signal(int peer, int channel) {
        WORD.getAndAddRelease(scratchOf[peer], layout.signal(rank, channel), 1L);
    }

    private boolean arrived(int peer, int channel) {
        int i = peer * CHANNELS + channel;
        long seen = (long) WORD.getAcquire(scratchOf[rank], layout.signal(peer, channel));
        if (seen > consumed[i]) {
            consumed[i]++;
            return true;
        }
        return false;
    }

    /** Whether {@code peer} signalled on {@code channel} more often than this rank consumed; consumes nothing. */
    private boolean pending(int peer, int channel) {
        return (long) WORD.getAcquire(scratchOf[rank], layout.signal(peer, channel)) > consumed[peer * CHANNELS + channel];
    }

    /** Waits for the next signal of {@code peer} on {@code channel}; TIMEOUT or the job's failure otherwise. */
    private void await(int peer, int channel, long deadline, String phase, String what) {
        if (arrived(peer, channel)) {
            return;
        }
        boolean[] got = {false};
        boolean ok = Waiting.await(() -> (got[0] = arrived(peer, channel)) || stopped(), deadline);
        // a peer that signalled and then left did its part: its signal counts, whatever came after it
        if (got[0] || arrived(peer, channel)) {
            return;
        }
        checkStopped(phase);
        if (!ok) {
            throw JmscclppException.builder(ErrorCode.TIMEOUT, what + " did not come from rank " + peer + " in time")
                    .rank(rank).peer(peer).tag(options.tag()).phase(phase).build();
        }
    }

    private boolean stopped() {
        return peerFailure() != null || isClosed();
    }

    private void checkStopped(String phase) {
        JmscclppException dead = peerFailure();
        if (dead != null) {
            throw JmscclppException.builder(dead.code(), "the job failed while this rank waited: " + dead.detail())
                    .rank(rank).peer(dead.peer()).tag(options.tag()).phase(phase).cause(dead).build();
        }
        if (isClosed()) {
            throw JmscclppException.builder(ErrorCode.ABORTED, "the collective communicator was closed")
                    .rank(rank).phase(phase).build();
        }
    }

    private void barrier(long deadline, String phase) {
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                signal(p, COLL);
            }
        }
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                await(p, COLL, deadline, phase, "the barrier signal");
            }
        }
    }

    /** A message of a mailbox: the descriptor's four words, then {@code extra}. */
    private static long[] words(CallDescriptor d, long... extra) {
        long[] w = Arrays.copyOf(d.words(), 4 + extra.length);
        System.arraycopy(extra, 0, w, 4, extra.length);
        return w;
    }

    private static void writeWords(MemorySegment s, long offset, long[] words) {
        for (int i = 0; i < words.length; i++) {
            s.set(LONG, offset + 8L * i, words[i]);
        }
    }

    private static long[] readWords(MemorySegment s, long offset, int count) {
        long[] w = new long[count];
        for (int i = 0; i < count; i++) {
            w[i] = s.get(LONG, offset + 8L * i);
        }
        return w;
    }

    // ---------------------------------------------------------------------------------------------
    // collectives

    /** Where rank q's data of a round is: a segment, the offset of element {@code origin} of block 0, and a block's stride. */
    private record Source(MemorySegment segment, long base, long blockStride, long origin, int width) {
        long at(int block, long element) {
            return base + block * blockStride + (element - origin) * width;
        }
    }

    private void collective(Planned p, long deadline, Batch batch) {
        CollectiveCall call = p.call();
        CallDescriptor mine = p.descriptor();
        CollectiveKind kind = call.kind();
        String phase = call.name() + " #" + batch.number();
        int w = call.type().bytes();
        boolean direct = mine.direct();
        int blocks = kind == CollectiveKind.REDUCE_SCATTER || kind == CollectiveKind.ALL_TO_ALL ? size : 1;
        long perRound = direct ? Math.max(1, call.count()) : Math.max(1, chunk / ((long) w * blocks));
        long count = call.count();
        long roundsOfCall = Math.max(1, (count + perRound - 1) / perRound);
        for (long k = 0; k < roundsOfCall; k++) {
            long a = Math.min(count, k * perRound);
            long b = Math.min(count, a + perRound);
            long round = rounds++;
            if (!direct && call.readsSend(rank)) {
                publish(call, a, b, blocks, round);
            }
            CallDescriptor[] all = handshake(mine, round, deadline, phase);
            Source[] src = new Source[size];
            for (int q = 0; q < size; q++) {
                src[q] = direct ? directSource(all[q], q, call, w) : new Source(scratchOf[q], layout.in(round),
                        (b - a) * w, a, w);
            }
            switch (kind) {
                case ALL_REDUCE -> allReduce(call, all, src, a, b, round, direct, deadline, phase);
                case REDUCE -> {
                    if (rank == call.root()) {
                        reduceInto(call, src, 0, a, b, recvSegment(call), a * w);
                    }
                }
                case BROADCAST -> {
                    if (rank != call.root()) {
                        copy(src[call.root()], 0, a, b, recvSegment(call), a * w);
                    } else if (!p.inPlace() && b > a) {
                        MemorySegment.copy(sendSegment(call), a * w, recvSegment(call), a * w, (b - a) * w);
                    }
                }
                case ALL_GATHER -> {
                    for (int q = 0; q < size; q++) {
                        long to = (q * count + a) * w;
                        if (q != rank) {
                            copy(src[q], 0, a, b, recvSegment(call), to);
                        } else if (!p.inPlace() && b > a) {
                            MemorySegment.copy(sendSegment(call), a * w, recvSegment(call), to, (b - a) * w);
                        }
                    }
                }
                case REDUCE_SCATTER -> reduceInto(call, src, rank, a, b, recvSegment(call), a * w);
                case ALL_TO_ALL -> {
                    if (direct && p.inPlace()) {
                        allToAllInPlace(call, src, a, b, deadline, phase);
                        continue;
                    }
                    for (int q = 0; q < size; q++) {
                        copy(src[q], rank, a, b, recvSegment(call), (q * count + a) * w);
                    }
                }
                default -> throw new IllegalStateException("not a collective: " + kind);
            }
            if (direct) {
                // peers read this rank's own buffers: nobody returns before everyone is done with them
                barrier(deadline, phase + " end");
            }
        }
    }

    /**
     * A direct allToAll's round on a rank in place: its buffer holds the slots its peers read, so
     * what they send it lands in a temporary first and replaces them after the round's end barrier,
     * once every peer is done reading (its peers may be in place or not: every rank passes the same
     * barriers). Its own slot is where it belongs already and stays.
     */
    private void allToAllInPlace(CollectiveCall call, Source[] src, long a, long b, long deadline, String phase) {
        int w = call.type().bytes();
        long bytes = (b - a) * w;
        try (Arena landing = Arena.ofConfined()) {
            MemorySegment got = landing.allocate(Math.max(1, size * bytes), 8);
            for (int q = 0; q < size; q++) {
                if (q != rank) {
                    copy(src[q], rank, a, b, got, q * bytes);
                }
            }
            barrier(deadline, phase + " end");
            for (int q = 0; q < size; q++) {
                if (q != rank) {
                    MemorySegment.copy(got, q * bytes, recvSegment(call), (q * call.count() + a) * w, bytes);
                }
            }
        }
    }

    /** Copies this rank's part of elements [a, b) of every block into the round's half of its scratch. */
    private void publish(CollectiveCall call, long a, long b, int blocks, long round) {
        int w = call.type().bytes();
        long bytes = (b - a) * w;
        if (bytes == 0) {
            return;
        }
        MemorySegment send = sendSegment(call);
        for (int j = 0; j < blocks; j++) {
            MemorySegment.copy(send, (j * call.count() + a) * w, scratchOf[rank], layout.in(round) + j * bytes, bytes);
        }
    }

    /**
     * Writes this rank's descriptor into every peer's mailbox, signals, waits for every peer, and
     * returns every rank's descriptor by rank; INVALID_USAGE when they disagree.
     */
    private CallDescriptor[] handshake(CallDescriptor mine, long round, long deadline, String phase) {
        long[] message = words(mine, round);
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                writeWords(scratchOf[p], layout.mailbox(rank, round), message);
                signal(p, COLL);
            }
        }
        CallDescriptor[] all = new CallDescriptor[size];
        all[rank] = mine;
        for (int q = 0; q < size; q++) {
            if (q == rank) {
                continue;
            }
            await(q, COLL, deadline, phase, "the call descriptor");
            long[] got = readWords(scratchOf[rank], layout.mailbox(q, round), 5);
            if (got[4] != round) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "rank " + q + " is at collective round "
                        + got[4] + ", this rank at " + round + ": the ranks issued different collectives")
                        .rank(rank).peer(q).phase(phase).build();
            }
            all[q] = CallDescriptor.decode(got, q);
        }
        Optional<String> mismatch = CallDescriptor.mismatch(List.of(all), this::algorithmName);
        if (mismatch.isPresent()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, mismatch.get()).rank(rank).tag(options.tag())
                    .phase(phase).build();
        }
        return all;
    }

    /** Rank q's registered send buffer (this rank's: the call's own), as its descriptor locates it. */
    private Source directSource(CallDescriptor d, int q, CollectiveCall call, int w) {
        long stride = call.count() * w;
        if (q == rank) {
            return call.readsSend(rank) && call.send() != null
                    ? new Source(sendSegment(call), 0, stride, 0, w) : new Source(MemorySegment.NULL, 0, stride, 0, w);
        }
        if (!CallDescriptor.isLocation(d.sendLocation())) {
            return new Source(MemorySegment.NULL, 0, stride, 0, w);
        }
        return new Source(peerRegistered(d.sendLocation(), q), CallDescriptor.locationOffset(d.sendLocation()), stride,
                0, w);
    }

    /** The segment of registration {@code location} of rank q, as mapped here. */
    private MemorySegment peerRegistered(long location, int q) {
        int index = CallDescriptor.locationIndex(location);
        Registration r = registration(index);
        RegisteredMemory m = r == null ? null : r.peers().get(q);
        if (m == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "rank " + q + " names its registration #" + index
                    + ", which this rank does not hold").rank(rank).peer(q).phase("collective").build();
        }
        return m.hostSegment();
    }

    private void allReduce(CollectiveCall call, CallDescriptor[] all, Source[] src, long a, long b, long round,
                           boolean direct, long deadline, String phase) {
        int w = call.type().bytes();
        long m = b - a;
        long lo = a + m * rank / size;
        long hi = a + m * (rank + 1) / size;
        MemorySegment recv = recvSegment(call);
        if (direct) {
            reduceInto(call, src, 0, lo, hi, recv, lo * w);
        } else {
            reduceInto(call, src, 0, lo, hi, scratchOf[rank], layout.out(round) + (lo - a) * w);
        }
        barrier(deadline, phase + " reduced");
        for (int o = 0; o < size; o++) {
            long olo = a + m * o / size;
            long ohi = a + m * (o + 1) / size;
            if (ohi == olo || (direct && o == rank)) {
                continue;
            }
            if (direct) {
                long loc = all[o].recvLocation();
                MemorySegment owner = peerRegistered(loc, o);
                MemorySegment.copy(owner, CallDescriptor.locationOffset(loc) + olo * w, recv, olo * w, (ohi - olo) * w);
            } else {
                MemorySegment.copy(scratchOf[o], layout.out(round) + (olo - a) * w, recv, olo * w, (ohi - olo) * w);
            }
        }
    }

    /** dst[dstOffset..] = op over every rank's elements [a, b) of {@code block}, rank order. */
    private void reduceInto(CollectiveCall call, Source[] src, int block, long a, long b, MemorySegment dst,
                            long dstOffset) {
        if (b <= a) {
            return;
        }
        MemorySegment[] segments = new MemorySegment[size];
        long[] offsets = new long[size];
        for (int q = 0; q < size; q++) {
            segments[q] = src[q].segment();
            offsets[q] = src[q].at(block, a);
        }
        Reductions.reduce(call.type(), Objects.requireNonNull(call.op()), segments, offsets, dst, dstOffset, b - a);
    }

    private static void copy(Source from, int block, long a, long b, MemorySegment dst, long dstOffset) {
        if (b > a) {
            MemorySegment.copy(from.segment(), from.at(block, a), dst, dstOffset, (b - a) * from.width());
        }
    }

    /** The send buffer's memory; an empty segment where the call has none (it then reads nothing). */
    private static MemorySegment sendSegment(CollectiveCall call) {
        return call.send() == null ? MemorySegment.NULL : call.send().hostSegment();
    }

    /** The receive buffer's memory; an empty segment where the call has none (it then writes nothing). */
    private static MemorySegment recvSegment(CollectiveCall call) {
        return call.recv() == null ? MemorySegment.NULL : call.recv().hostSegment();
    }

    // ---------------------------------------------------------------------------------------------
    // sends and receives

    /** The sends and receives of one batch, progressed together until all are done. */
    private final class PointToPoint {

        private final long deadline;
        private final Batch batch;
        /** Per peer, the sends to it and the receives from it, in the caller's order. */
        private final List<Deque<Transfer>> sends = new ArrayList<>();
        private final List<Deque<Transfer>> recvs = new ArrayList<>();
        /** Per peer: its collective signal was seen while this rank's transfers with it stood still. */
        private final boolean[] inCollective;

        PointToPoint(List<Planned> calls, long deadline, Batch batch) {
            this.deadline = deadline;
            this.batch = batch;
            this.inCollective = new boolean[size];
            for (int p = 0; p < size; p++) {
                sends.add(new ArrayDeque<>());
                recvs.add(new ArrayDeque<>());
            }
            for (Planned p : calls) {
                int peer = p.call().peer();
                (p.call().kind() == CollectiveKind.SEND ? sends : recvs).get(peer).add(new Transfer(p));
            }
            selfCopies();
        }

        /**
         * Sends to this rank itself go straight into the receives from itself, pairwise in order (they
         * pair up: the batch was checked when it was planned).
         */
        private void selfCopies() {
            Deque<Transfer> out = sends.get(rank);
            Deque<Transfer> in = recvs.get(rank);
            while (!out.isEmpty()) {
                Transfer s = out.poll();
                Transfer r = Objects.requireNonNull(in.poll());
                long bytes = s.bytes();
                if (bytes > 0) {
                    MemorySegment.copy(sendSegment(s.planned.call()), 0, recvSegment(r.planned.call()), 0, bytes);
                }
            }
        }

        void run() {
            int[] crossed = {-1};
            Waiting.await(() -> {
                boolean idle = true;
                boolean left = false;
                for (int p = 0; p < size; p++) {
                    boolean moved = false;
                    Transfer s = sends.get(p).peek();
                    if (s != null) {
                        moved = s.progressSend(p);
                        if (s.done) {
                            sends.get(p).poll();
                        }
                    }
                    Transfer r = recvs.get(p).peek();
                    if (r != null) {
                        moved |= r.progressRecv(p);
                        if (r.done) {
                            recvs.get(p).poll();
                        }
                    }
                    idle &= !moved;
                    boolean open = !sends.get(p).isEmpty() || !recvs.get(p).isEmpty();
                    left |= open;
                    // A peer begins a collective (its descriptor's signal) only after every send and receive of its
                    // batch, and what it wrote for those came before that signal: seen once, a transfer with it that
                    // still does not move in the next pass never will (its calls differ from this rank's in kind).
                    if (!open || moved) {
                        inCollective[p] = false;
                    } else if (inCollective[p]) {
                        crossed[0] = p;
                    } else {
                        inCollective[p] = pending(p, COLL);
                    }
                }
                return !left || crossed[0] >= 0 || (idle && stopped());
            }, deadline);
            if (crossed[0] >= 0) {
                throw crossing(crossed[0]);
            }
            checkStopped("send/recv #" + batch.number());
            for (int p = 0; p < size; p++) {
                Transfer pending = pendingWith(p);
                if (pending != null) {
                    // a receive learns how many chunks come only from them (it counts what arrived)
                    String progress = pending.planned.call().kind() == CollectiveKind.RECV
                            ? (pending.chunk == 0 ? "nothing came from rank " + p : pending.chunk + " chunks came")
                            : pending.chunk + " of " + Math.max(1, pending.chunks) + " chunks acknowledged";
                    throw JmscclppException.builder(ErrorCode.TIMEOUT, pending.planned.call().describe() + " did not"
                            + " complete in time (" + progress + ")").rank(rank)
                            .peer(p).tag(options.tag()).phase("send/recv #" + batch.number()).build();
                }
            }
        }

        /** The first transfer with {@code peer} not done yet (its sends first), or null. */
        private @Nullable Transfer pendingWith(int peer) {
            return sends.get(peer).isEmpty() ? recvs.get(peer).peek() : sends.get(peer).peek();
        }

        /**
         * INVALID_USAGE for a send or receive with {@code peer} while it is in a collective, after telling every peer
         * this rank's call as a collective's descriptor: the ranks waiting in a collective's handshake for this rank
         * fail on the mismatch too, at once, instead of at their deadline.
         */
        private JmscclppException crossing(int peer) {
            Transfer mine = Objects.requireNonNull(pendingWith(peer));
            CallDescriptor d = mine.planned.descriptor();
            long round = rounds;
            String theirs = "a collective";
            long[] theirWords = readWords(scratchOf[rank], layout.mailbox(peer, round), 5);
            if (theirWords[4] == round) {
                try {
                    theirs = CallDescriptor.decode(theirWords, peer).describe(HostCollectiveComm.this::algorithmName);
                } catch (JmscclppException notADescriptor) {
                    // a mailbox of another round (the peer made collectives this rank did not): no name for its call
                }
            }
            long[] message = words(d, round);
            for (int q = 0; q < size; q++) {
                if (q != rank) {
                    writeWords(scratchOf[q], layout.mailbox(rank, round), message);
                    signal(q, COLL);
                }
            }
            return JmscclppException.builder(ErrorCode.INVALID_USAGE, CallDescriptor.crossedCalls(peer, theirs,
                    mine.planned.call().describe())).rank(rank).peer(peer).tag(options.tag()).phase(mine.phase()).build();
        }

        /** One send or receive: chunk by chunk, each acknowledged. */
        private final class Transfer {
            final Planned planned;
            long chunks = -1;
            long chunk;
            boolean waiting;
            boolean done;

            Transfer(Planned planned) {
                this.planned = planned;
            }

            long bytes() {
                return planned.call().countBytes();
            }

            String phase() {
                return planned.call().name() + " #" + batch.number();
            }

            /** Advances a send to {@code peer}; whether anything happened. */
            boolean progressSend(int peer) {
                long bytes = bytes();
                boolean direct = planned.descriptor().direct();
                if (chunks < 0) {
                    chunks = direct ? 1 : Math.max(1, (bytes + P2P_CHUNK - 1) / P2P_CHUNK);
                }
                if (!waiting) {
                    long from = chunk * P2P_CHUNK;
                    long len = direct ? bytes : Math.min(P2P_CHUNK, bytes - from);
                    if (!direct && len > 0) {
                        MemorySegment.copy(sendSegment(planned.call()), from, scratchOf[rank], layout.p2p(peer), len);
                    }
                    writeWords(scratchOf[peer], layout.dataBox(rank), words(planned.descriptor(), chunk, from, len));
                    signal(peer, DATA);
                    waiting = true;
                    return true;
                }
                if (!arrived(peer, ACK)) {
                    return false;
                }
                long[] reply = readWords(scratchOf[rank], layout.replyBox(peer), 5);
                if (reply[4] != 0) {
                    CallDescriptor theirs = CallDescriptor.decode(reply, peer);
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, CallDescriptor.pointToPointMismatch(rank,
                            planned.descriptor(), peer, theirs, HostCollectiveComm.this::algorithmName)
                            .orElse("rank " + peer + " refused the message")).rank(rank).peer(peer).phase(phase())
                            .build();
                }
                waiting = false;
                if (++chunk == chunks) {
                    done = true;
                }
                return true;
            }

            /** Advances a receive from {@code peer}; whether anything happened. */
            boolean progressRecv(int peer) {
                if (!arrived(peer, DATA)) {
                    return false;
                }
                long[] box = readWords(scratchOf[rank], layout.dataBox(peer), 7);
                CallDescriptor theirs = CallDescriptor.decode(box, peer);
                Optional<String> mismatch = CallDescriptor.pointToPointMismatch(peer, theirs, rank,
                        planned.descriptor(), HostCollectiveComm.this::algorithmName);
                if (mismatch.isPresent() || box[4] != chunk) {
                    writeWords(scratchOf[peer], layout.replyBox(rank), words(planned.descriptor(), 1));
                    signal(peer, ACK);
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, mismatch.orElse("rank " + peer + " sent"
                            + " chunk " + box[4] + " where chunk " + chunk + " was due")).rank(rank).peer(peer)
                            .phase(phase()).build();
                }
                long bytes = bytes();
                long from = box[5];
                long len = box[6];
                if (from < 0 || len < 0 || from > bytes || len > bytes - from) {
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "rank " + peer + " sent bytes [" + from
                            + ", +" + len + ") of a message of " + bytes).rank(rank).peer(peer).phase(phase()).build();
                }
                if (len > 0) {
                    MemorySegment to = recvSegment(planned.call());
                    if (theirs.direct()) {
                        MemorySegment.copy(peerRegistered(theirs.sendLocation(), peer),
                                CallDescriptor.locationOffset(theirs.sendLocation()) + from, to, from, len);
                    } else {
                        MemorySegment.copy(scratchOf[peer], layout.p2p(rank), to, from, len);
                    }
                }
                writeWords(scratchOf[peer], layout.replyBox(rank), words(planned.descriptor(), 0));
                signal(peer, ACK);
                if (from + len == bytes) {
                    done = true;
                }
                chunk++;
                return true;
            }
        }
    }
}
