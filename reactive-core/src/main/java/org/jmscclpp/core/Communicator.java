package org.jmscclpp.core;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.IntFunction;
import org.jmscclpp.core.metrics.probe.Probes;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jmscclpp.core.semaphore.MemoryDevice2DeviceSemaphore;
import org.jmscclpp.core.semaphore.Semaphore;
import org.jmscclpp.core.spi.Closeables;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.TransportProvider;
import org.jmscclpp.core.spi.TransportProviders;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;

/**
 * The second half of setting up a job, after the {@link Bootstrap}: registering memory, connecting
 * ranks, exchanging memories and building semaphores, over a {@link Backend}. MSCCL++'s
 * {@code Communicator}, with every step a {@link Mono}.
 *
 * <h2>Two ways to set up</h2>
 * <ul>
 *   <li><b>Queued</b>, as MSCCL++'s seed-era API: {@link #connectOnSetup}, {@link #sendMemoryOnSetup}
 *       and {@link #recvMemoryOnSetup} queue a step when called (that is their contract: the
 *       call, not a subscription, puts the step in line, so a step whose Mono nobody subscribes
 *       still runs) and return a Mono that completes when {@link #setup()} has run it.
 *       {@code setup()} is lazy and runs every queued step's sends first, then every step's
 *       receives, each in call order.</li>
 *   <li><b>Immediate</b>: {@link #connect}, {@link #sendMemory}, {@link #recvMemory} and
 *       {@link #buildSemaphore} are lazy: nothing is claimed or sent before subscription, and the
 *       step takes its place on (peer, tag) when first subscribed.</li>
 * </ul>
 * Both share one implementation, and both keep MSCCL++'s matching rule: the i-th sending step
 * ({@code connect}, {@code sendMemory}, {@code buildSemaphore}) to (peer, tag) matches the i-th
 * receiving step on the peer for (this rank, tag), where the order is call order for queued steps
 * and subscription order for immediate ones: steps on one (peer, tag) run in that order, sends
 * after earlier sends, receives after earlier receives. A step's Mono runs the step once and
 * replays its result to later subscribers.
 *
 * <h2>Retrying</h2>
 * A failed step runs again when its Mono is subscribed again ({@code retryWhen},
 * {@code retry}; for queued steps, when {@code setup()} is subscribed again, which runs them ahead
 * of newer steps) as long as the protocol allows it: when nothing of the step reached the peer
 * (it failed waiting for an earlier step on its (peer, tag), or before its message was handed to
 * the bootstrap), or when its message did go out and it failed waiting for the peer's (a
 * {@code connect} whose endpoint was sent but whose peer was late: the retry keeps the endpoint
 * sent and only waits again, with a fresh deadline). A step is <b>not</b> run again, and a new
 * subscription replays its error, once the bootstrap's send of its message failed (the message may
 * have gone out in part or whole) or once it took the peer's message and then failed (the i-th
 * message was consumed): running it again would make it the (i+1)-th and shift the matching of
 * every later step on that (peer, tag). Retry before subscribing later steps on the same
 * (peer, tag): a later step does not wait for an earlier one that failed.
 *
 * <p>Communicator tags are in [0, 2^24) and travel on bootstrap tags of their own
 * ({@code 0x4A000000 | tag}), so they never mix with the application's bootstrap messages. Each
 * message carries its kind; a receiving call that meets a different kind (a connection endpoint
 * where a memory was expected) fails with {@link ErrorCode#INVALID_USAGE} naming peer and tag.
 * Deadlines default to the bootstrap's; a step that passes its deadline fails with
 * {@link ErrorCode#TIMEOUT} naming peer, tag and phase, and a peer that dies with
 * {@link ErrorCode#REMOTE_ERROR}.
 *
 * <p>Steps do their local work (allocating tokens, mapping a peer's memory, opening a connection)
 * on virtual threads, or on the scheduler a service passes to {@link #create(Bootstrap, Backend, Scheduler)},
 * never on a bootstrap I/O thread; results are emitted on such a thread, completions of pure sends
 * on the bootstrap's thread. Do not block in a downstream operator.
 *
 * <p>The communicator owns what it made (connections, peers' memories mapped here, semaphores) and
 * releases it on {@link #close()}, in reverse order. The bootstrap and the backend belong to the
 * caller.
 */
public final class Communicator implements AutoCloseable {

    /** Largest communicator tag. */
    public static final int MAX_TAG = (1 << 24) - 1;
    private static final int TAG_SPACE = 0x4A000000;

    private static final byte KIND_ENDPOINT = 1;
    private static final byte KIND_MEMORY = 2;
    private static final byte KIND_SEMAPHORE = 3;

    private final Bootstrap bootstrap;
    private final Backend backend;
    private final Object lock = new Object();
    private final List<Step<?>> queued = new ArrayList<>();
    /** The newest step on each (peer, tag), which the next step's send and receive run after. Guarded by lock. */
    private final Map<Long, Step<?>> lastSend = new HashMap<>();
    private final Map<Long, Step<?>> lastReceive = new HashMap<>();
    private final Deque<AutoCloseable> owned = new ArrayDeque<>();
    /** Transport providers' sessions, opened on first use; also in {@link #owned}. Guarded by lock. */
    private final Map<TransportProvider, TransportProvider.Session> sessions = new HashMap<>();
    private boolean closed;
    /** Completes on {@link #close()}: steps still running then end at once instead of at their deadlines. */
    private final Sinks.Empty<Void> closing = Sinks.empty();
    private final AbortSignal abortSignal = AbortSignal.create();
    private final Disposable failureWatch;
    /** Where steps do their local work, which may block briefly. */
    private final Scheduler work;

    private Communicator(Bootstrap bootstrap, Backend backend, Scheduler work) {
        this.bootstrap = bootstrap;
        this.backend = backend;
        this.work = work;
        // The bootstrap hears first of a dead peer or an abort anywhere in the job; the signal
        // carries it to every wait of this communicator's semaphores, channels and proxies.
        this.failureWatch = bootstrap.failure().subscribe(abortSignal::raise, e -> { });
    }

    /** A communicator for the ranks of {@code bootstrap}, moving memory of {@code backend}. */
    public static Communicator create(Bootstrap bootstrap, Backend backend) {
        return new Communicator(bootstrap, backend, Waiting.VIRTUAL);
    }

    /**
     * A communicator whose steps do their local work on {@code work}, the service's scheduler, instead
     * of virtual threads: its threads must be allowed to block briefly (a {@code boundedElastic}
     * scheduler, or one of the service's own; not a {@code parallel} one). The service owns it: closing
     * the communicator does not dispose it.
     */
    public static Communicator create(Bootstrap bootstrap, Backend backend, Scheduler work) {
        return new Communicator(bootstrap, backend, Objects.requireNonNull(work, "work"));
    }

    public Bootstrap bootstrap() {
        return bootstrap;
    }

    public Backend backend() {
        return backend;
    }

    public int rank() {
        return bootstrap.rank();
    }

    public int size() {
        return bootstrap.size();
    }

    /**
     * The job's abort signal as this rank sees it: raised with the first failure the bootstrap
     * reports (a dead peer, an abort on any rank) or by {@link #abort(String)}. Every wait of the
     * semaphores, channels and proxies this communicator set up, and of collective communicators
     * built on it, ends with its cause.
     */
    public AbortSignal abortSignal() {
        return abortSignal;
    }

    /**
     * Aborts the job, as NCCL's {@code ncclCommAbort}: raises {@link #abortSignal()} here (every
     * wait of this rank ends with {@link ErrorCode#ABORTED} naming this rank) and aborts the
     * bootstrap, which tells every peer still reachable, whose communicators do the same. Returns
     * at once; close the communicator afterwards. Calling it again, or after a failure, changes
     * nothing but the bootstrap's relay.
     */
    public void abort(String reason) {
        abortSignal.raise(JmscclppException.builder(ErrorCode.ABORTED, "rank " + rank() + " aborted the job: " + reason)
                .rank(rank()).peer(rank()).phase("abort").build());
        bootstrap.abort(reason);
    }

    // ------------------------------------------------------------------------------------------
    // memory

    /**
     * Registers {@code buffer} for the given transports. For each IPC transport ({@code HOST_IPC},
     * {@code CUDA_IPC}) the backend exports a handle that peers of this host map; the backend must
     * support it, else {@link ErrorCode#INVALID_USAGE}. For a transport the backend does not connect
     * over itself ({@code ETHERNET}, {@code IB0..IB7}) the module offering it
     * ({@link TransportProvider}) registers the buffer, and its handle travels with the memory;
     * INVALID_USAGE when that provider cannot run here. With no transport the memory is only usable
     * by ranks of this process. The returned memory is the caller's (closing it ends the
     * registration, not the buffer).
     */
    public RegisteredMemory registerMemory(DeviceBuffer buffer, TransportFlags transports) {
        Map<Transport, byte[]> handles = new EnumMap<>(Transport.class);
        List<TransportProvider.Registration> registrations = new ArrayList<>();
        try {
            for (Transport t : transports.toSet()) {
                if ((t == Transport.CUDA_IPC || t == Transport.HOST_IPC) && !backend.ipcTransports().has(t)) {
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the " + backend.name()
                            + " backend cannot share memory over " + t + " (it offers " + backend.ipcTransports()
                            + ")").rank(rank()).phase("registerMemory").build();
                }
                if (provider(t) != null) {
                    TransportProvider.Registration r = session(t, "registerMemory").registerMemory(buffer, t);
                    registrations.add(r);
                    handles.put(t, r.handle());
                }
            }
            return RegisteredMemory.local(buffer, transports, handles, registrations);
        } catch (RuntimeException e) {
            registrations.forEach(TransportProvider.Registration::close);
            throw e;
        }
    }

    /**
     * The session of the provider of {@code transport}, opened on first use and closed with the
     * communicator; INVALID_USAGE naming the reason when the provider cannot serve this backend here.
     */
    /**
     * Who connects over {@code transport}: the backend for its own transports, else the module on the class path
     * that offers it; null when nobody does.
     */
    private @Nullable TransportProvider provider(Transport transport) {
        TransportProvider ipc = backend.ipcTransport();
        return ipc.transports().has(transport) ? ipc : TransportProviders.find(transport);
    }

    private TransportProvider.Session session(Transport transport, String phase) {
        TransportProvider provider = provider(transport);
        if (provider == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no module on the class path offers " + transport
                    + " and the " + backend.name() + " backend connects over " + backend.ipcTransports() + " only")
                    .rank(rank()).phase(phase).build();
        }
        var reason = provider.unavailableReason(backend, transport);
        if (reason.isPresent()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, transport + " cannot be used here: "
                    + reason.get()).rank(rank()).phase(phase).build();
        }
        synchronized (lock) {
            if (closed) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the communicator is closed").rank(rank())
                        .phase(phase).build();
            }
            TransportProvider.Session session = sessions.get(provider);
            if (session == null) {
                session = provider.open(backend, bootstrap);
                sessions.put(provider, session);
                owned.push(session);
            }
            return session;
        }
    }

    // ------------------------------------------------------------------------------------------
    // queued steps

    /** Queues a connection to {@code remoteRank} on {@code tag}; the Mono completes when {@link #setup()} ran it. */
    public Mono<Connection> connectOnSetup(int remoteRank, int tag, EndpointConfig config) {
        return enqueue(new ConnectStep(remoteRank, tag, config));
    }

    /** Queues sending {@code memory} to {@code remoteRank} on {@code tag}; completes when {@link #setup()} sent it. */
    public Mono<Void> sendMemoryOnSetup(RegisteredMemory memory, int remoteRank, int tag) {
        return enqueue(new SendMemoryStep(remoteRank, tag, memory));
    }

    /** Queues receiving a memory from {@code remoteRank} on {@code tag}; emits it when {@link #setup()} received it. */
    public Mono<RegisteredMemory> recvMemoryOnSetup(int remoteRank, int tag) {
        return enqueue(new RecvMemoryStep(remoteRank, tag));
    }

    /** {@link #setup(Duration)} with the bootstrap's default timeout. */
    public Mono<Void> setup() {
        return setup(bootstrap.defaultTimeout());
    }

    /**
     * Runs every step queued so far: all sends in call order, then all receives in call order,
     * completing each step's Mono as it finishes. If a step fails, {@code setup} errors with that
     * error and every step not finished yet fails with it too; cancelling fails them with
     * {@link ErrorCode#ABORTED}. {@code timeout} bounds the whole run. Lazy: nothing runs before
     * subscription. The failed steps that may run again (see the class comment) are queued again,
     * ahead of newer steps, so subscribing again retries them; their Monos then give the outcome
     * of the new run to new subscribers.
     */
    public Mono<Void> setup(Duration timeout) {
        return Mono.defer(() -> {
            List<Step<?>> batch;
            synchronized (lock) {
                checkOpen("setup");
                batch = new ArrayList<>(queued);
                queued.clear();
                batch.forEach(Step::startQueuedRun);
            }
            long deadline = Waiting.deadline(timeout);
            return untilClosed(Flux.fromIterable(batch).concatMap(s -> s.runQueuedSend(deadline))
                    .thenMany(Flux.fromIterable(batch).concatMap(s -> s.runQueuedReceive(deadline)))
                    .then(), "setup")
                    .doOnError(e -> settle(batch, e))
                    .doOnCancel(() -> settle(batch, null));
        });
    }

    /**
     * After a failed ({@code error}) or cancelled (null) setup: each step of the batch not finished
     * fails its Mono; those that may run again are queued again, first, in their order.
     */
    private void settle(List<Step<?>> batch, @Nullable Throwable error) {
        List<Step<?>> again = new ArrayList<>();
        for (Step<?> s : batch) {
            if (s.finished()) {
                continue;
            }
            boolean retryable = s.retryable();
            s.fail(error != null ? error : JmscclppException.builder(ErrorCode.ABORTED,
                    "setup was cancelled before this step finished").rank(rank()).peer(s.peer).tag(s.tag)
                    .phase(s.phase()).build());
            if (retryable) {
                s.renew();
                again.add(s);
            }
        }
        synchronized (lock) {
            if (!closed) {
                queued.addAll(0, again);
                return;
            }
        }
        again.forEach(s -> s.fail(closedBeforeSetup(s)));
    }

    /** {@code run}, ended with ABORTED when {@link #close()} comes first (what it waits for is then cancelled). */
    private <T> Mono<T> untilClosed(Mono<T> run, String phase) {
        return run.or(closing.asMono().then(Mono.error(() -> JmscclppException.builder(ErrorCode.ABORTED,
                "the communicator was closed while this step ran").rank(rank()).phase(phase).build())));
    }

    private JmscclppException closedBeforeSetup(Step<?> s) {
        return JmscclppException.builder(ErrorCode.ABORTED, "the communicator was closed before setup() ran this step")
                .rank(rank()).peer(s.peer).tag(s.tag).phase(s.phase()).build();
    }

    // ------------------------------------------------------------------------------------------
    // immediate steps

    /** Connects to {@code remoteRank} on {@code tag} when subscribed; the peer connects back with the same tag. */
    public Mono<Connection> connect(int remoteRank, int tag, EndpointConfig config) {
        return connect(remoteRank, tag, config, bootstrap.defaultTimeout());
    }

    public Mono<Connection> connect(int remoteRank, int tag, EndpointConfig config, Duration timeout) {
        return immediate(new ConnectStep(remoteRank, tag, config), timeout);
    }

    /** Sends {@code memory} to {@code remoteRank} on {@code tag} when subscribed. */
    public Mono<Void> sendMemory(RegisteredMemory memory, int remoteRank, int tag) {
        return sendMemory(memory, remoteRank, tag, bootstrap.defaultTimeout());
    }

    public Mono<Void> sendMemory(RegisteredMemory memory, int remoteRank, int tag, Duration timeout) {
        return immediate(new SendMemoryStep(remoteRank, tag, memory), timeout);
    }

    /** Receives the memory {@code remoteRank} sends on {@code tag} when subscribed, mapping it here when it can. */
    public Mono<RegisteredMemory> recvMemory(int remoteRank, int tag) {
        return recvMemory(remoteRank, tag, bootstrap.defaultTimeout());
    }

    public Mono<RegisteredMemory> recvMemory(int remoteRank, int tag, Duration timeout) {
        return immediate(new RecvMemoryStep(remoteRank, tag), timeout);
    }

    /**
     * Builds the token pair of a semaphore over {@code connection} with its peer, which must call
     * this for its end of the connection too: allocates and registers this rank's inbound token,
     * sends it, receives the peer's. Wrap the result in {@link Host2HostSemaphore},
     * {@link Host2DeviceSemaphore} or {@link MemoryDevice2DeviceSemaphore}.
     */
    public Mono<Semaphore> buildSemaphore(Connection connection) {
        return buildSemaphore(connection, bootstrap.defaultTimeout());
    }

    public Mono<Semaphore> buildSemaphore(Connection connection, Duration timeout) {
        if (connection == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no connection: pass one this communicator made")
                    .rank(rank()).phase("buildSemaphore").build();
        }
        ConnectionContext ctx = connection.context();
        return immediate(new SemaphoreStep(ctx.remoteRank(), ctx.tag(), connection), timeout);
    }

    /** The peer of a connection this communicator made. */
    public int remoteRankOf(Connection connection) {
        return connection.context().remoteRank();
    }

    /** The tag of a connection this communicator made. */
    public int tagOf(Connection connection) {
        return connection.context().tag();
    }

    // ------------------------------------------------------------------------------------------
    // mesh

    /** {@link #mesh(RegisteredMemory, IntFunction, int, Duration)} with one config for every peer, tag 0. */
    public Mono<Mesh> mesh(RegisteredMemory local, EndpointConfig config) {
        return mesh(local, peer -> config, 0, bootstrap.defaultTimeout());
    }

    /**
     * Connects this rank with every other rank (the config for each peer from
     * {@code configForPeer}), exchanges {@code local} with each, then builds a semaphore over each
     * connection: one Mono for the whole mesh, which every rank must subscribe. Runs {@link #setup}
     * (so steps queued earlier run too). {@code timeout} bounds each of the two phases. Lazy: the
     * steps are queued at the first subscription. Subscribing again after a failure retries the
     * same steps where the class comment allows it, and replays the error where it does not.
     */
    public Mono<Mesh> mesh(RegisteredMemory local, IntFunction<EndpointConfig> configForPeer, int tag, Duration timeout) {
        if (local == null || configForPeer == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, local == null
                    ? "no memory: pass the RegisteredMemory every peer gets" : "no endpoint configs: pass a function"
                    + " from peer to EndpointConfig").rank(rank()).tag(tag).phase("mesh").build();
        }
        MeshSteps steps = new MeshSteps(local, configForPeer, tag, timeout);
        return Mono.defer(steps::run);
    }

    /** The steps of one {@link #mesh} Mono, made at its first subscription and reused by retries. */
    private final class MeshSteps {
        private final RegisteredMemory local;
        private final IntFunction<EndpointConfig> configForPeer;
        private final int tag;
        private final Duration timeout;
        private @Nullable List<Integer> peers;
        private final Map<Integer, Mono<Connection>> connections = new HashMap<>();
        private final Map<Integer, Mono<RegisteredMemory>> memories = new HashMap<>();
        private final Map<Integer, Mono<Semaphore>> semaphores = new HashMap<>();

        MeshSteps(RegisteredMemory local, IntFunction<EndpointConfig> configForPeer, int tag, Duration timeout) {
            this.local = local;
            this.configForPeer = configForPeer;
            this.tag = tag;
            this.timeout = timeout;
        }

        synchronized Mono<Mesh> run() {
            if (peers == null) {
                // every peer's config first: a bad one fails the mesh before any step is queued
                Map<Integer, EndpointConfig> configs = new HashMap<>();
                for (int p = 0; p < size(); p++) {
                    if (p != rank()) {
                        EndpointConfig config = configForPeer.apply(p);
                        if (config == null) {
                            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no endpoint config for peer "
                                    + p).rank(rank()).peer(p).tag(tag).phase("mesh").build();
                        }
                        configs.put(p, config);
                    }
                }
                List<Integer> ps = new ArrayList<>();
                for (int p = 0; p < size(); p++) {
                    if (p != rank()) {
                        ps.add(p);
                        connections.put(p, connectOnSetup(p, tag, configs.get(p)));
                        sendMemoryOnSetup(local, p, tag);
                        memories.put(p, recvMemoryOnSetup(p, tag));
                    }
                }
                peers = ps;
            }
            List<Integer> ps = peers;
            return setup(timeout).then(Flux.fromIterable(ps).flatMap(this::semaphore).collectList())
                    .flatMap(sems -> Flux.fromIterable(ps).flatMapSequential(memories::get).collectList()
                            .map(mems -> new Mesh(rank(), ps, sems, mems)));
        }

        /** The semaphore step with {@code peer}, made once (when its connection is there) and reused by retries. */
        private Mono<Semaphore> semaphore(int peer) {
            return connections.get(peer).flatMap(c -> {
                synchronized (this) {
                    return semaphores.computeIfAbsent(peer, p -> buildSemaphore(c, timeout));
                }
            });
        }
    }

    // ------------------------------------------------------------------------------------------
    // lifecycle

    /**
     * Releases every connection, mapping and semaphore this communicator made, newest first. Steps
     * still running (an immediate step's Mono, a {@link #setup} or {@link #mesh} in progress) end at
     * once with {@link ErrorCode#ABORTED} rather than at their deadlines. Idempotent.
     */
    @Override
    public void close() {
        List<AutoCloseable> toClose;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            failureWatch.dispose();
            toClose = new ArrayList<>(owned);
            owned.clear();
            queued.forEach(s -> s.fail(closedBeforeSetup(s)));
            queued.clear();
        }
        closing.tryEmitEmpty();
        Closeables.closeAll(toClose);   // the deque holds newest first
    }

    /** Registers {@code resource} to be closed with the communicator (or closes it now if the communicator is closed). */
    public <T extends AutoCloseable> T own(T resource) {
        synchronized (lock) {
            if (!closed) {
                owned.push(resource);
                return resource;
            }
        }
        try {
            resource.close();
        } catch (Exception e) {
            // the communicator is gone; nothing is waiting for this resource
        }
        throw JmscclppException.builder(ErrorCode.ABORTED, "the communicator was closed while this step ran")
                .rank(rank()).phase("communicator").build();
    }

    /** Whether {@link #close()} ran. */
    public boolean isClosed() {
        synchronized (lock) {
            return closed;
        }
    }

    private void checkOpen(String phase) {
        if (closed) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the communicator is closed").rank(rank())
                    .phase(phase).build();
        }
    }

    // ------------------------------------------------------------------------------------------
    // machinery shared by both forms

    private <T> Mono<T> enqueue(Step<T> step) {
        synchronized (lock) {
            checkOpen(step.phase());
            step.validate();
            step.chain();
            queued.add(step);
        }
        return Mono.defer(step::queuedOutcome);
    }

    /** A lazy step: arguments are checked now, everything else happens at subscription ({@link Step#attempt}). */
    private <T> Mono<T> immediate(Step<T> step, Duration timeout) {
        synchronized (lock) {
            checkOpen(step.phase());
        }
        step.validate();
        return Mono.defer(() -> step.attempt(timeout));
    }

    private static long key(int peer, int tag) {
        return ((long) peer << 32) | (tag & 0xFFFFFFFFL);
    }

    private static Duration left(long deadline) {
        return Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime()));
    }

    /** Nothing of the step has reached the peer or been taken from it. */
    private static final int WIRE_NONE = 0;
    /** The step's message is being handed to the bootstrap: it may be out, in part or whole. */
    private static final int WIRE_SENDING = 1;
    /** The step's message is out, whole; nothing taken yet. */
    private static final int WIRE_SENT = 2;
    /** The step took the peer's message. */
    private static final int WIRE_TAKEN = 3;

    /**
     * One step of setup: a send part and a receive part, each run after the previous step's part
     * on the same (peer, tag). Queued steps run when {@link #setup} drives them; immediate steps
     * when their Mono is subscribed. A step records how far it got on the wire, which decides
     * whether it may run again after a failure ({@link #retryable()}); a step that runs again
     * skips a send that already went out.
     */
    private abstract class Step<T> {
        final int peer;
        final int tag;
        /** How far the step got on the wire: one of the WIRE_ constants, never going back. */
        private volatile int wire = WIRE_NONE;
        private volatile boolean finished;
        /** Which run of the step this is: later steps wait for the run they were chained after, not a newer one. */
        private volatile int runs;
        // queued steps: the current run's outcome, replaced when a failed run is run again
        private volatile Sinks.One<T> outcome = Sinks.one();
        private volatile Sinks.Empty<Void> sent = Sinks.empty();
        /** A failed queued step that is queued again: the next setup gives it a new outcome. */
        private volatile boolean failedRun;
        // immediate steps: the current run (set under this), cleared by a failure that allows another
        private volatile boolean immediate;
        private volatile @Nullable Mono<Void> sendRun;
        private volatile @Nullable Mono<T> run;
        // the step (and its run) each part runs after: an earlier step on (peer, tag), or null
        private @Nullable Step<?> previousSend;
        private int previousSendRun;
        private @Nullable Step<?> previousReceive;
        private int previousReceiveRun;

        Step(int peer, int tag) {
            this.peer = peer;
            this.tag = tag;
        }

        /** The step's name, as errors give it: {@code connect}, {@code sendMemory}, ... */
        abstract String phase();

        /** Sends what this step sends (nothing for a receive). */
        abstract Mono<Void> send(Duration timeout);

        /** Receives and builds the result (nothing for a send). */
        abstract Mono<T> receive(Duration timeout);

        void validate() {
            if (peer < 0 || peer >= size()) {
                throw error(ErrorCode.INVALID_USAGE, "rank " + peer + " is outside the job of " + size() + " ranks");
            }
            if (tag < 0 || tag > MAX_TAG) {
                throw error(ErrorCode.INVALID_USAGE, "communicator tags are in [0, " + MAX_TAG + "], got " + tag);
            }
        }

        /** Takes this step's place on (peer, tag), after the steps there; called under the lock, in order. */
        void chain() {
            long k = key(peer, tag);
            // a step running again while still the newest keeps the place it had
            Step<?> ps = lastSend.put(k, this);
            if (ps != this) {
                previousSend = ps;
                previousSendRun = ps == null ? 0 : ps.runs;
            }
            Step<?> pr = lastReceive.put(k, this);
            if (pr != this) {
                previousReceive = pr;
                previousReceiveRun = pr == null ? 0 : pr.runs;
            }
        }

        /** Whether the step completed. */
        boolean finished() {
            return finished;
        }

        /**
         * Whether a failed step may run again: nothing of it went out, or its message went out
         * whole and it has not taken the peer's yet (then it runs the receive only).
         */
        boolean retryable() {
            int w = wire;
            return w == WIRE_NONE || w == WIRE_SENT;
        }

        // ------------------------------------------------------------------ queued

        /** The outcome of the queued step's current run (a new one after a retryable failure). */
        Mono<T> queuedOutcome() {
            return outcome.asMono();
        }

        /**
         * A queued step that failed but may run again: it keeps its error for subscribers until
         * the next setup takes it ({@link #startQueuedRun}).
         */
        void renew() {
            failedRun = true;
        }

        /** Called by setup when it takes the step: a step that failed before gets a new run and outcome. */
        void startQueuedRun() {
            if (failedRun) {
                failedRun = false;
                runs++;
                outcome = Sinks.one();
                sent = Sinks.empty();
            }
        }

        Mono<Void> runQueuedSend(long deadline) {
            Sinks.Empty<Void> s = sent;
            return runSend(deadline).doOnSuccess(v -> s.tryEmitEmpty()).doOnError(this::fail);
        }

        Mono<Void> runQueuedReceive(long deadline) {
            Sinks.One<T> o = outcome;
            return runReceive(deadline).doOnNext(o::tryEmitValue)
                    .doOnSuccess(v -> {
                        if (v == null) {
                            o.tryEmitEmpty();
                        }
                    })
                    .doOnError(this::fail)
                    .then();
        }

        void fail(Throwable e) {
            sent.tryEmitError(e);
            outcome.tryEmitError(e);
        }

        // ------------------------------------------------------------------ immediate

        /**
         * The immediate step's run for a subscriber: the current one (running, done, or failed for
         * good), or a new one that takes its place on (peer, tag) now, with a fresh deadline.
         */
        synchronized Mono<T> attempt(Duration timeout) {
            Mono<T> current = run;
            if (current != null) {
                return current;
            }
            synchronized (lock) {
                if (closed) {
                    return Mono.error(error(ErrorCode.INVALID_USAGE, "the communicator is closed"));
                }
                immediate = true;
                runs++;
                chain();
            }
            // Sends run after earlier sends only, receives after earlier receives (and this step's
            // own send), so "receive then send" on both ranks cannot deadlock.
            Mono<Void> sendPart = Mono.defer(() -> runSend(Waiting.deadline(timeout))).cache();
            Mono<T>[] self = newRun();
            Mono<T> receivePart = untilClosed(sendPart.then(Mono.defer(() -> runReceive(Waiting.deadline(timeout)))),
                    phase()).onErrorMap(this::located)
                    .doOnSuccess(v -> finished = true)
                    .doOnError(e -> giveUpIfRetryable(self[0]))
                    .cache();
            self[0] = receivePart;
            sendRun = sendPart;
            run = receivePart;
            return receivePart;
        }

        @SuppressWarnings("unchecked")
        private Mono<T>[] newRun() {
            return new Mono[1];
        }

        /**
         * After a failed run: a step that may run again gives up its place (later steps no longer
         * wait for it), and the next subscriber starts a new run.
         */
        private synchronized void giveUpIfRetryable(@Nullable Mono<T> failed) {
            if (failed != null && run == failed && retryable()) {
                run = null;
                sendRun = null;
            }
        }

        /**
         * What a later step's send waits for: this step's send in run {@code r}; nothing when that
         * run gave up its place (it failed and may run again, later).
         */
        private Mono<?> sendDone(int r) {
            if (runs != r) {
                return Mono.empty();
            }
            Mono<Void> s = sendRun;
            return immediate ? (s == null ? Mono.empty() : s) : sent.asMono();
        }

        /** What a later step's receive waits for: this step's receive in run {@code r}, as {@link #sendDone}. */
        private Mono<?> receiveDone(int r) {
            if (runs != r) {
                return Mono.empty();
            }
            Mono<T> s = run;
            return immediate ? (s == null ? Mono.empty() : s) : outcome.asMono();
        }

        // ------------------------------------------------------------------ both

        Mono<Void> runSend(long deadline) {
            Step<?> before = previousSend;
            int beforeRun = previousSendRun;
            return waitFor(before == null ? Mono.empty() : Mono.defer(() -> before.sendDone(beforeRun)), deadline,
                    "an earlier send")
                    // local work (allocating a token, creating an endpoint) never runs on a bootstrap I/O thread
                    .then(Mono.defer(() -> wire >= WIRE_SENT ? Mono.<Void>empty() : send(left(deadline)))
                            .subscribeOn(work))
                    .doOnSuccess(v -> {
                        if (wire < WIRE_SENT) {
                            wire = WIRE_SENT;
                        }
                    })
                    .onErrorMap(this::located);
        }

        Mono<T> runReceive(long deadline) {
            Step<?> before = previousReceive;
            int beforeRun = previousReceiveRun;
            return waitFor(before == null ? Mono.empty() : Mono.defer(() -> before.receiveDone(beforeRun)), deadline,
                    "an earlier receive")
                    .then(Mono.defer(() -> receive(left(deadline))))
                    .doOnSuccess(v -> finished = true)
                    .onErrorMap(this::located);
        }

        private Mono<Void> waitFor(Mono<?> previous, long deadline, String what) {
            return previous.onErrorResume(e -> Mono.empty()).then().timeout(left(deadline), Mono.error(() -> error(
                    ErrorCode.TIMEOUT, "waited for " + what + " on this (peer, tag) that has not run: a step queued for"
                            + " setup() that was never set up?")));
        }

        /** Re-addresses an error to this step: the communicator tag, peer and phase rather than the bootstrap's. */
        private Throwable located(Throwable e) {
            if (e instanceof JmscclppException je) {
                if (je.tag() == tag && je.phase().equals(phase())) {
                    return je;
                }
                return JmscclppException.builder(je.code(), je.detail()).rank(rank()).peer(peer).tag(tag)
                        .phase(phase()).cause(je).build();
            }
            return JmscclppException.builder(ErrorCode.INTERNAL_ERROR, String.valueOf(e)).rank(rank()).peer(peer)
                    .tag(tag).phase(phase()).cause(e).build();
        }

        JmscclppException error(ErrorCode code, String detail) {
            return JmscclppException.builder(code, detail).rank(rank()).peer(peer).tag(tag).phase(phase()).build();
        }

        Mono<Void> transmit(byte kind, byte[] payload, Duration timeout) {
            byte[] message = new byte[payload.length + 1];
            message[0] = kind;
            System.arraycopy(payload, 0, message, 1, payload.length);
            return Mono.defer(() -> {
                wire = WIRE_SENDING;
                return bootstrap.send(peer, TAG_SPACE | tag, message, timeout);
            });
        }

        /** Receives the next message on (peer, tag), checks its kind and hands the payload to a virtual thread. */
        Mono<byte[]> take(byte kind, Duration timeout) {
            return bootstrap.recv(peer, TAG_SPACE | tag, timeout).doOnNext(m -> wire = WIRE_TAKEN)
                    .publishOn(work).map(message -> {
                if (message.length == 0 || message[0] != kind) {
                    throw error(ErrorCode.INVALID_USAGE, "expected " + kindName(kind) + " but the peer sent "
                            + (message.length == 0 ? "an empty message" : kindName(message[0]))
                            + ": the i-th sending and receiving calls on one (peer, tag) must be of the same kind");
                }
                byte[] payload = new byte[message.length - 1];
                System.arraycopy(message, 1, payload, 0, payload.length);
                return payload;
            });
        }
    }

    private static String kindName(byte kind) {
        return switch (kind) {
            case KIND_ENDPOINT -> "a connection endpoint";
            case KIND_MEMORY -> "a registered memory";
            case KIND_SEMAPHORE -> "a semaphore token";
            default -> "an unknown message kind " + kind;
        };
    }

    private final class ConnectStep extends Step<Connection> {
        private final EndpointConfig config;
        private @Nullable Endpoint local;

        ConnectStep(int peer, int tag, EndpointConfig config) {
            super(peer, tag);
            this.config = config;
        }

        @Override
        String phase() {
            return "connect";
        }

        @Override
        void validate() {
            super.validate();
            if (config == null) {
                throw error(ErrorCode.INVALID_USAGE, "no endpoint config: pass the EndpointConfig of the connection");
            }
            Transport t = config.transport();
            if (provider(t) == null) {
                throw error(ErrorCode.INVALID_USAGE, "the " + backend.name() + " backend cannot connect over "
                        + t + " (it offers " + backend.ipcTransports() + ") and no module on the class path"
                        + " offers it");
            }
        }

        @Override
        Mono<Void> send(Duration timeout) {
            return Mono.defer(() -> {
                Endpoint e = session(config.transport(), phase()).createEndpoint(config);
                local = e;
                return transmit(KIND_ENDPOINT, e.serialize(), timeout);
            });
        }

        @Override
        Mono<Connection> receive(Duration timeout) {
            return take(KIND_ENDPOINT, timeout).map(bytes -> {
                Endpoint remote = Endpoint.deserialize(bytes);
                Endpoint mine = local;
                if (mine == null) {
                    throw error(ErrorCode.INTERNAL_ERROR, "receiving before sending the local endpoint");
                }
                ConnectionContext context = new ConnectionContext(rank(), peer, tag);
                // every transport's connection is measured here, in one place (a no-op with -Djmscclpp.metrics=false)
                return own(Probes.instrument(session(config.transport(), phase()).connect(mine, remote, context)));
            });
        }
    }

    private final class SendMemoryStep extends Step<Void> {
        private final RegisteredMemory memory;

        SendMemoryStep(int peer, int tag, RegisteredMemory memory) {
            super(peer, tag);
            this.memory = memory;
        }

        @Override
        String phase() {
            return "sendMemory";
        }

        @Override
        void validate() {
            super.validate();
            if (memory == null) {
                throw error(ErrorCode.INVALID_USAGE, "no memory: pass the RegisteredMemory to send");
            }
        }

        @Override
        Mono<Void> send(Duration timeout) {
            return Mono.defer(() -> transmit(KIND_MEMORY, memory.serialize(), timeout));
        }

        @Override
        Mono<Void> receive(Duration timeout) {
            return Mono.empty();
        }
    }

    private final class RecvMemoryStep extends Step<RegisteredMemory> {
        RecvMemoryStep(int peer, int tag) {
            super(peer, tag);
        }

        @Override
        String phase() {
            return "recvMemory";
        }

        @Override
        Mono<Void> send(Duration timeout) {
            return Mono.empty();
        }

        @Override
        Mono<RegisteredMemory> receive(Duration timeout) {
            return take(KIND_MEMORY, timeout).map(bytes -> own(RegisteredMemory.deserialize(bytes, backend)));
        }
    }

    private final class SemaphoreStep extends Step<Semaphore> {
        private final Connection connection;
        private @Nullable DeviceBuffer token;
        private @Nullable RegisteredMemory tokenMemory;
        private volatile boolean built;
        private boolean releaseOwned;

        SemaphoreStep(int peer, int tag, Connection connection) {
            super(peer, tag);
            this.connection = connection;
        }

        @Override
        String phase() {
            return "buildSemaphore";
        }

        @Override
        Mono<Void> send(Duration timeout) {
            return Mono.defer(() -> {
                DeviceBuffer t = connection.localDevice().type() == DeviceType.CPU
                        ? backend.allocateHostVisible(Semaphore.TOKEN_BYTES) : backend.allocate(Semaphore.TOKEN_BYTES);
                token = t;
                RegisteredMemory m = registerMemory(t, TransportFlags.of(connection.transport()));
                tokenMemory = m;
                if (!releaseOwned) {
                    // a failed step that may run again keeps its token for the retry: the communicator
                    // releases it if the semaphore is never built
                    releaseOwned = true;
                    own(() -> {
                        if (!built) {
                            release();
                        }
                    });
                }
                return transmit(KIND_SEMAPHORE, m.serialize(), timeout);
            }).doOnError(e -> release());
        }

        @Override
        Mono<Semaphore> receive(Duration timeout) {
            return take(KIND_SEMAPHORE, timeout).map(bytes -> {
                DeviceBuffer t = token;
                RegisteredMemory m = tokenMemory;
                if (t == null || m == null) {
                    throw error(ErrorCode.INTERNAL_ERROR, "receiving before the local token was made");
                }
                RegisteredMemory remote = RegisteredMemory.deserialize(bytes, backend);
                Semaphore semaphore = own(new Semaphore(connection, t, m, remote, abortSignal));
                built = true;
                return semaphore;
            }).doOnError(e -> {
                if (!retryable()) {
                    release();
                }
            });
        }

        private synchronized void release() {
            if (tokenMemory != null) {
                tokenMemory.close();
                tokenMemory = null;
            }
            if (token != null) {
                token.close();
                token = null;
            }
        }
    }
}
