package org.jmscclpp.core.collective;

import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.WeakHashMap;
import java.util.concurrent.Callable;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.DeviceBufferSlice;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.metrics.probe.CollectiveProbes;
import org.jmscclpp.core.metrics.probe.Probes;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * What every engine's collective communicator shares, so that engines write only how calls run:
 * argument checks, the algorithm choice (call override, {@link CollectiveOptions#algorithms()},
 * {@link TuningTable}, the kind's default), {@link CallDescriptor}s, issue order, the sticky
 * failure, buffer registration with every peer, and a watch on the communicator's abort signal
 * (a dead peer, an abort anywhere in the job) and on every peer's departure. Engines implement
 * {@link #execute}, {@link #checkBuffer}, {@link #registrationTransports} and {@link #release}. SPI for the engines of other modules; not an application API.
 */
public abstract class AbstractCollectiveComm implements CollectiveComm {

    private static final System.Logger LOG = Log.logger(AbstractCollectiveComm.class, Subsystem.COLL);

    /** Bootstrap tags of the registration exchanges and of the departure watch: this prefix | the options' tag. */
    private static final int REGISTRATION_TAGS = 0x4B000000;
    private static final int WATCH_TAGS = 0x4C000000;
    /** The deadline of the watch's receive, renewed when it passes: the watch lasts as long as the communicator. */
    private static final Duration WATCH_PERIOD = Duration.ofDays(1);
    /** Per bootstrap, the end of the setup subscribed last on it ({@link #inSubscriptionOrder}); a bootstrap no one holds goes. */
    private static final Map<Bootstrap, Mono<Void>> SETUPS = new WeakHashMap<>();

    /** One registration of this rank's buffer (index as every rank numbers it) and every peer's memory of that index, mapped here. */
    public record Registration(int index, DeviceBuffer buffer, RegisteredMemory memory,
                               Map<Integer, RegisteredMemory> peers) {
    }

    /** A call as the engine runs it: its algorithm, this rank's descriptor, and whether it is in NCCL's in-place form here. */
    public record Planned(CollectiveCall call, Algorithm algorithm, CallDescriptor descriptor, boolean inPlace) {
    }

    /**
     * What {@link #execute} runs: one call, or the calls of a group.
     *
     * @param number  1 for the first batch of the communicator, then one more per batch: the same on
     *                every rank that issues the same calls
     * @param calls   the calls, in the caller's order
     * @param timeout the deadline of the batch
     * @param group   whether the calls came from {@link #group}
     */
    public record Batch(long number, List<Planned> calls, Duration timeout, boolean group) {
    }

    protected final Communicator communicator;
    protected final CollectiveOptions options;
    protected final int rank;
    protected final int size;
    /** The deadline of setup, registration and of calls without their own. */
    protected final Duration timeout;
    private final List<Algorithm> algorithms;
    /** The algorithms of each kind, default first (an empty list for none). */
    private final Map<CollectiveKind, List<Algorithm>> byKind = new EnumMap<>(CollectiveKind.class);
    private final TuningTable tuning;
    private final String topology;
    private final Issuer defaults;

    private final Object lock = new Object();
    private long batches;
    private volatile @Nullable JmscclppException failure;
    private volatile @Nullable JmscclppException peerFailure;
    private volatile boolean closed;
    /**
     * Set when {@link #close()} begins (before {@link #closed}, set once the calls issued before have ended): calls
     * are refused from then on.
     */
    private volatile boolean closing;
    private @Nullable Disposable watch;
    /** Calls issued and neither ended nor cancelled by their subscriber yet. */
    private final AtomicInteger callsInFlight = new AtomicInteger();

    /** Serialises register and deregister, which are collective and blocking on a virtual thread. */
    private final ReentrantLock registering = new ReentrantLock();
    /** Whether the register or deregister step running now has begun its exchange with the peers. Guarded by registering. */
    private boolean exchanged;
    /** Registrations by index; null where deregistered. Guarded by lock. */
    private final List<@Nullable Registration> registrations = new ArrayList<>();
    /** Counts and times the calls; null with metrics off. */
    private final @Nullable CollectiveProbes metrics;
    private final Scheduler virtual = Schedulers.fromExecutor(task -> Thread.ofVirtual()
            .name("jmscclpp-collective-register").start(task));

    /**
     * @param algorithms     the engine's algorithms (see {@link CollectiveEngine#algorithms()})
     * @param defaultTuning  the engine's committed table, used unless the options carry one
     * @param topology       how the ranks are linked, the word tuning rows name ({@code shm}, {@code nvlink})
     */
    protected AbstractCollectiveComm(Communicator communicator, CollectiveOptions options, List<Algorithm> algorithms,
                                     TuningTable defaultTuning, String topology) {
        this.communicator = communicator;
        this.options = options;
        this.rank = communicator.rank();
        this.size = communicator.size();
        this.timeout = timeoutOf(communicator, options);
        this.algorithms = List.copyOf(algorithms);
        for (CollectiveKind k : CollectiveKind.values()) {
            byKind.put(k, this.algorithms.stream().filter(a -> a.kind() == k).toList());
        }
        this.tuning = options.tuning() != null ? options.tuning() : defaultTuning;
        this.topology = topology;
        this.defaults = new Issuer(CallOptions.defaults());
        this.metrics = Probes.collectives(rank, size);
    }

    /** The one INFO line of a collective communicator's setup: its engine and algorithms. */
    static void created(CollectiveComm c, long startNanos) {
        LOG.log(Level.INFO, () -> String.format(Locale.ROOT, "rank %d: collective comm created in %.1f ms: %d ranks, "
                        + "%s backend, algorithms %s", c.rank(), (System.nanoTime() - startNanos) / 1e6, c.size(),
                c.communicator().backend().name(), algorithmsByKind(c.algorithms())));
    }

    private static String algorithmsByKind(List<Algorithm> algorithms) {
        Map<CollectiveKind, List<String>> names = new EnumMap<>(CollectiveKind.class);
        for (Algorithm a : algorithms) {
            names.computeIfAbsent(a.kind(), k -> new ArrayList<>()).add(a.name());
        }
        return names.toString();
    }

    // ---------------------------------------------------------------------------------------------
    // what engines implement

    /**
     * Runs {@code batch}; called in issue order, with a lock held that serialises issuing, so it must
     * not wait for peers: hand the batch to a worker, or enqueue it on a stream. The returned Mono
     * completes when this rank's part of every call is done. Its error breaks the communicator.
     */
    protected abstract Mono<Void> execute(Batch batch);

    /**
     * Throws INVALID_USAGE (naming {@code which}: "send", "recv") when this engine cannot run a call
     * on {@code buffer}: memory of another backend or device.
     */
    protected abstract void checkBuffer(DeviceBuffer buffer, String which);

    /** The transports registrations are shared over ({@code HOST_IPC}, {@code CUDA_IPC}). */
    protected abstract TransportFlags registrationTransports();

    /**
     * The algorithm a planned call really runs: the chosen one, or another of its kind when the
     * chosen one cannot carry it (a table's small-message algorithm for a call beyond its
     * capacity). Must depend only on what every rank's call has in common.
     */
    protected Algorithm adjust(Planned planned) {
        return planned.algorithm();
    }

    /**
     * Whether {@code call}, an allToAll in place on registered buffers, runs staged on this engine
     * (what its peers send would land on the slots it has yet to send). Staged on one rank and direct
     * on another, the ranks disagree and the call fails with INVALID_USAGE, so an engine that can
     * keep them apart says false (the host engine: what the peers send lands beside the buffer until
     * they are done; the CUDA engine: the rank sends from a copy of its data, when that fits), and
     * ranks may then differ in placement, as NCCL allows.
     */
    protected boolean stagesInPlaceAllToAll(CollectiveCall call) {
        return true;
    }

    /** Called (with no lock held, on the registering thread) once a registration is complete on this rank. */
    protected void onRegistered(Registration registration) {
    }

    /** Called once a registration is gone ({@link #deregister}), before its memories are closed; not by {@link #close()}. */
    protected void onDeregistered(Registration registration) {
    }

    /** Releases the engine's resources; called once by {@link #close()}, after the registrations. */
    protected abstract void release();

    /**
     * Whether the calling thread is the one that runs this engine's calls and signals their ends: a {@link #close()}
     * from a call's callback runs there, and does not wait for the calls issued after that call, which cannot run
     * before it returns.
     */
    protected boolean onCallThread() {
        return false;
    }

    // ---------------------------------------------------------------------------------------------
    // for engines' setup

    /**
     * The deadline of setup, registration and of calls without their own: the options', else the
     * bootstrap's; cut to {@link Waiting#bounded}, so that a caller's "forever" leaves room for the margins added to it.
     */
    protected static Duration timeoutOf(Communicator communicator, CollectiveOptions options) {
        return Waiting.bounded(options.timeout() != null ? options.timeout() : communicator.bootstrap().defaultTimeout());
    }

    /**
     * {@code setUp} once every setup subscribed before it on {@code bootstrap} has ended. A setup
     * exchanges over the bootstrap's collectives (untagged: every rank must issue them in the same
     * order) from a virtual thread of its own, so two setups subscribed together in the same order
     * on every rank would otherwise issue them in whichever order their threads ran, and cross.
     */
    static Mono<CollectiveComm> inSubscriptionOrder(Bootstrap bootstrap, Mono<CollectiveComm> setUp) {
        return Mono.defer(() -> {
            Sinks.Empty<Void> ended = Sinks.empty();
            Mono<Void> before;
            synchronized (SETUPS) {
                before = SETUPS.getOrDefault(bootstrap, Mono.empty());
                SETUPS.put(bootstrap, ended.asMono());
            }
            return before.then(setUp).doFinally(s -> ended.tryEmitEmpty());
        });
    }

    /**
     * Runs an engine's blocking {@code setUp} on a virtual thread of its own, at subscription. A subscriber that
     * cancels before it ends does not get the communicator it makes: that one is closed (its threads, scratch and
     * watch), as is one that a cancel meets on its way to the subscriber.
     */
    protected static Mono<CollectiveComm> setUpOnVirtualThread(Callable<? extends CollectiveComm> setUp) {
        return Mono.<CollectiveComm>create(sink -> {
            // 0: running, 1: handed to the subscriber, 2: cancelled first
            AtomicInteger state = new AtomicInteger();
            sink.onCancel(() -> state.compareAndSet(0, 2));
            Thread.ofVirtual().name("jmscclpp-collective-setup").start(() -> {
                if (state.get() != 0) {
                    return;
                }
                CollectiveComm made;
                try {
                    made = setUp.call();
                } catch (Throwable e) {
                    sink.error(e);
                    return;
                }
                if (state.compareAndSet(0, 1)) {
                    sink.success(made);
                } else {
                    made.close();
                }
            });
        }).doOnDiscard(CollectiveComm.class, CollectiveComm::close);
    }

    /**
     * Checks over the bootstrap that every rank sets up with {@code scratchBytes} of scratch and the
     * options' tag: INVALID_USAGE naming this rank, the first that differs and both values otherwise.
     */
    protected static void agree(Communicator communicator, long scratchBytes, int tag, Duration timeout,
                                String phase) {
        agree(communicator, scratchBytes, tag, new LinkedHashMap<String, Long>(), timeout, phase);
    }

    /**
     * {@link #agree(Communicator, long, int, Duration, String)}, together (one exchange) with settings
     * of the engine's own that every rank must share (by name, in the map's order, the same on every
     * rank): INVALID_USAGE naming this rank, the first that differs, the setting and both values.
     */
    protected static void agree(Communicator communicator, long scratchBytes, int tag,
                                SequencedMap<String, Long> settings, Duration timeout, String phase) {
        int rank = communicator.rank();
        ByteBuffer out = ByteBuffer.allocate(16 + 8 * settings.size()).order(ByteOrder.LITTLE_ENDIAN)
                .putLong(scratchBytes).putLong(tag);
        for (long value : settings.values()) {
            out.putLong(value);
        }
        byte[] all = communicator.bootstrap().allGather(out.array(), timeout).timeout(timeout.plusSeconds(5)).block();
        ByteBuffer b = ByteBuffer.wrap(Objects.requireNonNull(all)).order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < communicator.size(); r++) {
            long s = b.getLong();
            long t = b.getLong();
            if (s != scratchBytes || t != tag) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the ranks set up the collective communicator"
                        + " differently: rank " + rank + " with " + scratchBytes + " bytes of scratch and tag " + tag
                        + ", rank " + r + " with " + s + " bytes and tag " + t).rank(rank).peer(r).phase(phase).build();
            }
            for (Map.Entry<String, Long> setting : settings.entrySet()) {
                long theirs = b.getLong();
                if (theirs != setting.getValue()) {
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the ranks set up the collective"
                            + " communicator differently: rank " + rank + " with " + setting.getKey() + "="
                            + setting.getValue() + ", rank " + r + " with " + theirs).rank(rank).peer(r).phase(phase)
                            .build();
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // for engines

    /**
     * Starts the watch that reports a peer's departure or the job's failure: the communicator's
     * {@link org.jmscclpp.core.AbortSignal} (a dead peer, an abort on any rank), and a receive from
     * every peer that no one ever sends to, which the bootstrap also fails when that peer closes
     * its bootstrap in good order (a rank that gave up on an error and exited cleanly must not
     * leave the others waiting for its signals). Engines call it at the end of a successful setup.
     */
    protected final void startWatch() {
        Disposable aborted = communicator.abortSignal().onRaise(e -> {
            if (!closed && peerFailure == null) {
                peerFailure = e.rank() == rank ? e : e.withRank(rank);
            }
        });
        if (size < 2) {
            // no peer to watch, but an abort of this rank's own ends its calls as on any other
            synchronized (lock) {
                watch = aborted;
            }
            return;
        }
        Bootstrap bootstrap = communicator.bootstrap();
        int tag = WATCH_TAGS | options.tag();
        List<Mono<Void>> peers = new ArrayList<>();
        for (int p = 0; p < size; p++) {
            if (p == rank) {
                continue;
            }
            int peer = p;
            // a receive that passes its deadline is renewed; any other end of it is the news
            peers.add(Mono.defer(() -> bootstrap.recv(peer, tag, WATCH_PERIOD))
                    .onErrorResume(e -> e instanceof JmscclppException j && j.code() == ErrorCode.TIMEOUT,
                            e -> Mono.empty())
                    .repeat().then());
        }
        synchronized (lock) {
            watch = Disposables.composite(aborted, Flux.merge(Flux.fromIterable(peers).map(m -> m.onErrorResume(e -> {
                if (!closed && peerFailure == null) {
                    peerFailure = e instanceof JmscclppException j ? j.withRank(rank)
                            : JmscclppException.builder(ErrorCode.REMOTE_ERROR, "the bootstrap failed: " + e)
                            .rank(rank).phase("collective").cause(e).build();
                }
                return Mono.empty();
            }))).subscribe());
        }
    }

    /** The job's failure as the watch saw it (a dead peer: REMOTE_ERROR), or null while the job is healthy. */
    protected final @Nullable JmscclppException peerFailure() {
        return peerFailure;
    }

    /** The registration {@code index} (as every rank numbers it), or null when there is none. */
    protected final @Nullable Registration registration(int index) {
        synchronized (lock) {
            return index >= 0 && index < registrations.size() ? registrations.get(index) : null;
        }
    }

    /** Where {@code buffer} lies in this rank's registrations ({@link CallDescriptor#location}), or 0 when unregistered. */
    protected final long locate(@Nullable DeviceBuffer buffer) {
        if (buffer == null) {
            return 0;
        }
        DeviceBuffer root = DeviceBufferSlice.root(buffer);
        long start = buffer.address();
        synchronized (lock) {
            for (int i = registrations.size() - 1; i >= 0; i--) {
                Registration r = registrations.get(i);
                if (r != null && covers(r.buffer(), root, start, buffer.size())) {
                    return CallDescriptor.location(r.index(), start - r.buffer().address());
                }
            }
        }
        return 0;
    }

    /** Whether registered {@code registered} holds {@code [start, start + bytes)} of {@code root}'s memory. */
    private static boolean covers(DeviceBuffer registered, DeviceBuffer root, long start, long bytes) {
        if (registered.isClosed()) {
            return false;
        }
        if (registered == root) {
            return true;
        }
        // the same memory wrapped again (an external pointer wrapped per call): compare addresses
        long base = registered.address();
        return root.address() != 0 && root.device().equals(registered.device()) && start >= base
                && start - base <= registered.size() - bytes;
    }

    /** Names an algorithm id of this engine, for errors. */
    protected final String algorithmName(int id) {
        for (Algorithm a : algorithms) {
            if (a.id() == id) {
                return a.name();
            }
        }
        return "#" + id;
    }

    /** The error of a deadline passed in {@code phase} while waiting for {@code peer} (or NONE). */
    protected final JmscclppException timeoutError(String phase, int peer, Duration limit, String what) {
        return JmscclppException.builder(ErrorCode.TIMEOUT, what + " did not happen within " + limit.toMillis()
                + " ms").rank(rank).peer(peer).tag(options.tag()).phase(phase).build();
    }

    // ---------------------------------------------------------------------------------------------
    // CollectiveComm

    @Override
    public final int rank() {
        return rank;
    }

    @Override
    public final int size() {
        return size;
    }

    @Override
    public final Communicator communicator() {
        return communicator;
    }

    @Override
    public final CollectiveOptions options() {
        return options;
    }

    @Override
    public final List<Algorithm> algorithms() {
        return algorithms;
    }

    @Override
    public final Algorithm algorithmFor(CollectiveCall call) {
        return chosen(call, CallOptions.defaults());
    }

    /** The algorithm {@code call} runs with {@code callOptions}: the selection, as the engine adjusts it. */
    private Algorithm chosen(CollectiveCall call, CallOptions callOptions) {
        Algorithm selected = select(call, callOptions);
        return adjust(new Planned(call, selected, CallDescriptor.of(call, selected.id(), 0, 0, 0), false));
    }

    @Override
    public final void abort(String reason) {
        communicator.abort(reason);
    }

    @Override
    public final Optional<JmscclppException> failure() {
        return Optional.ofNullable(brokenBy());
    }

    /** A call's failure that broke this communicator, else the job's as the watch saw it (an abort, a dead peer). */
    private @Nullable JmscclppException brokenBy() {
        JmscclppException f = failure;
        return f != null ? f : peerFailure;
    }

    /** The failure of a call that broke this communicator, or null (not the job's: {@link #peerFailure()}). */
    protected final @Nullable JmscclppException callFailure() {
        return failure;
    }

    @Override
    public final Mono<Void> execute(CollectiveCall call) {
        return defaults.execute(call);
    }

    @Override
    public final Mono<Void> group(Consumer<CollectiveGroup> calls) {
        return defaults.group(calls);
    }

    @Override
    public final CollectiveComm with(CallOptions callOptions) {
        return new Issuer(Objects.requireNonNull(callOptions, "callOptions"));
    }

    // ---------------------------------------------------------------------------------------------
    // issuing

    private Mono<Void> submit(List<CollectiveCall> calls, CallOptions callOptions, boolean group) {
        return Mono.defer(() -> {
            List<Planned> planned = planAll(calls, callOptions);
            Duration limit = callOptions.timeout() != null ? Waiting.bounded(callOptions.timeout()) : timeout;
            Mono<Void> run;
            String phase;
            synchronized (lock) {
                Batch batch = nextBatch(calls, planned, limit, group);
                phase = (calls.isEmpty() ? "group" : calls.get(0).kind().label()) + " #" + batch.number();
                callsInFlight.incrementAndGet();   // before it starts: a deregister must see it
                try {
                    run = execute(batch);
                } catch (RuntimeException e) {
                    callsInFlight.decrementAndGet();
                    // part of the batch may be under way on peers already
                    JmscclppException typed = typed(e, phase);
                    breakWith(typed);
                    throw typed;
                }
            }
            // counted down when the call ends, before its subscriber hears of it (which may close or deregister from
            // its callbacks, and wait for the calls in flight: not for this one), or when its subscriber cancels (the
            // call still runs to its end then, and nothing waits for it: following every call with a subscription of
            // its own cost the Mono form 1-3 us a call at 1 KiB on 1 x H200)
            AtomicBoolean ended = new AtomicBoolean();
            Runnable end = () -> {
                if (ended.compareAndSet(false, true)) {
                    callsInFlight.decrementAndGet();
                }
            };
            Mono<Void> checked = run.onErrorMap(e -> typed(e, phase)).doOnError(this::breakWith)
                    .doOnTerminate(end).doOnCancel(end);
            CollectiveProbes m = metrics;
            return m == null ? checked : m.timed(checked, calls, algorithmNames(planned), group);
        });
    }

    /**
     * {@code e} as the error of a call: itself when typed; memory closed under the call (a buffer, a
     * registration or the communicator the caller closed while it ran) INVALID_USAGE saying so;
     * anything else INTERNAL_ERROR.
     */
    private JmscclppException typed(Throwable e, String phase) {
        if (e instanceof JmscclppException j) {
            return j;
        }
        if (e instanceof IllegalStateException && String.valueOf(e.getMessage()).contains("closed")) {
            return JmscclppException.builder(ErrorCode.INVALID_USAGE, "memory this call uses was closed while it ran"
                    + " (a buffer of the call, a registration, or the communicator" + (communicator.isClosed()
                    ? ", which is closed" : "") + "): " + e.getMessage()).rank(rank).phase(phase).cause(e).build();
        }
        return JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "a collective call failed: " + e).rank(rank)
                .phase(phase).cause(e).build();
    }

    /**
     * Waits until no call of this rank is in flight (deregister must not unmap memory a call reads),
     * at most the communicator's timeout. The calls' side only counts down: nothing on their path
     * takes a lock for this rare wait.
     *
     * @throws JmscclppException TIMEOUT when calls are still in flight at the deadline
     */
    private void awaitCallsEnded(String phase) {
        if (!callsEnded()) {
            throw JmscclppException.builder(ErrorCode.TIMEOUT, callsInFlight.get() + " call(s) issued before were"
                    + " still running after " + timeout.toMillis() + " ms").rank(rank).phase(phase).build();
        }
    }

    /** Whether no call of this rank is in flight any more, waiting at most the communicator's timeout. */
    private boolean callsEnded() {
        return Waiting.await(() -> callsInFlight.get() == 0, Waiting.deadline(timeout), false);
    }

    /**
     * Plans {@code calls} (with {@code callOptions}) as the next batch, for
     * engines that run calls outside {@link #execute} (a stream form): checks, numbers and returns it.
     */
    protected final Batch planBatch(List<CollectiveCall> calls, CallOptions callOptions, boolean group) {
        List<Planned> planned = planAll(calls, callOptions);
        synchronized (lock) {
            return nextBatch(calls, planned, timeout, group);
        }
    }

    private List<Planned> planAll(List<CollectiveCall> calls, CallOptions callOptions) {
        List<Planned> planned = new ArrayList<>(calls.size());
        for (CollectiveCall call : calls) {
            planned.add(plan(call, callOptions));
        }
        checkSelfPairs(planned);
        return List.copyOf(planned);
    }

    /**
     * The sends of a batch to this rank itself and its receives from itself pair up in order, each
     * pair alike (as in NCCL, a send to itself needs its receive in the same group). Checked with the
     * other arguments, before the batch is numbered: nothing of it involves a peer, so a batch refused
     * for it leaves the communicator usable.
     *
     * @throws JmscclppException INVALID_USAGE naming the counts or the pair that differs
     */
    private void checkSelfPairs(List<Planned> planned) {
        List<Planned> out = new ArrayList<>();
        List<Planned> in = new ArrayList<>();
        for (Planned p : planned) {
            CollectiveKind kind = p.call().kind();
            if ((kind == CollectiveKind.SEND || kind == CollectiveKind.RECV) && p.call().peer() == rank) {
                (kind == CollectiveKind.SEND ? out : in).add(p);
            }
        }
        if (out.size() != in.size()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a batch with " + out.size() + " sends to this"
                    + " rank itself and " + in.size() + " receives from it: each needs its match in the same group")
                    .rank(rank).peer(rank).phase("send/recv").build();
        }
        for (int k = 0; k < out.size(); k++) {
            Optional<String> mismatch = CallDescriptor.pointToPointMismatch(rank, out.get(k).descriptor(), rank,
                    in.get(k).descriptor(), this::algorithmName);
            if (mismatch.isPresent()) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, mismatch.get()).rank(rank).peer(rank)
                        .phase("send/recv").build();
            }
        }
    }

    private static List<String> algorithmNames(List<Planned> planned) {
        List<String> names = new ArrayList<>(planned.size());
        for (Planned p : planned) {
            names.add(p.algorithm().name());
        }
        return names;
    }

    /** The next batch, numbered; with the lock held, so batches are numbered in issue order. */
    private Batch nextBatch(List<CollectiveCall> calls, List<Planned> planned, Duration limit, boolean group) {
        checkUsable(calls.isEmpty() ? "group" : calls.get(0).kind().label());
        CollectiveProbes m = metrics;
        if (m != null) {
            for (CollectiveCall call : calls) {
                m.issued(call);
            }
        }
        return new Batch(++batches, planned, limit, group);
    }

    /** The calls {@code calls} records on a group, each checked. */
    protected final List<CollectiveCall> record(Consumer<CollectiveGroup> calls) {
        Recorder recorder = new Recorder();
        Objects.requireNonNull(calls, "calls").accept(recorder);
        return recorder.calls;
    }

    private Planned plan(CollectiveCall call, CallOptions callOptions) {
        call.validate(rank, size);
        boolean readsSend = call.sendBytes(rank, size) > 0;
        boolean writesRecv = call.recvBytes(rank, size) > 0;
        if (readsSend) {
            checkBuffer(Objects.requireNonNull(call.send()), "send");
        }
        if (writesRecv) {
            checkBuffer(Objects.requireNonNull(call.recv()), "recv");
        }
        Algorithm algorithm = chosen(call, callOptions);
        long send = readsSend ? locate(call.send()) : 0;
        // an allReduce in place names one location twice, whichever registrations its two buffers are
        // found in: a peer tells it is in place by the two being equal (the CUDA ce algorithm)
        long recv = !writesRecv ? 0 : call.kind() == CollectiveKind.ALL_REDUCE && call.inPlace(rank) ? send
                : locate(call.recv());
        // in place, what an alltoall's peers send lands on the slots it has yet to send: it stages its
        // data first, unless the engine keeps them apart on registered buffers (stagesInPlaceAllToAll)
        boolean registered = (readsSend || writesRecv) && (!readsSend || send != 0) && (!writesRecv || recv != 0);
        boolean stagedInPlace = registered && call.kind() == CollectiveKind.ALL_TO_ALL && call.inPlace(rank)
                && stagesInPlaceAllToAll(call);
        boolean direct = registered && !stagedInPlace;
        CallDescriptor d = CallDescriptor.of(call, algorithm.id(), direct ? CallDescriptor.DIRECT
                : stagedInPlace ? CallDescriptor.STAGED_IN_PLACE : 0, direct ? send : 0, direct ? recv : 0);
        Planned planned = new Planned(call, algorithm, d, call.inPlace(rank));
        return planned;
    }

    private Algorithm select(CollectiveCall call, CallOptions callOptions) {
        CollectiveKind kind = call.kind();
        String name = callOptions.algorithm() != null ? callOptions.algorithm() : options.algorithms().get(kind);
        if (name == null) {
            name = tuning.choose(kind, size, topology, call.size(size)).orElse(null);
        }
        List<Algorithm> candidates = byKind.get(kind);
        if (candidates.isEmpty()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "this engine has no " + kind.label()
                    + " algorithm").rank(rank).phase(kind.label()).build();
        }
        if (name == null) {
            return candidates.get(0);
        }
        for (Algorithm a : candidates) {
            if (a.name().equals(name)) {
                return a;
            }
        }
        // the hierarchical engine's algorithm is no candidate of ranks that share a host: say that, not only "no"
        String hosts = ("hier".equals(name) || "flat".equals(name)) && !"hosts".equals(topology) ? "; '" + name
                + "' runs where the ranks span hosts (MSCCLPP_HOSTID), and these share one" : "";
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no " + kind.label() + " algorithm '" + name
                + "' (one of " + candidates.stream().map(Algorithm::name).toList() + ")" + hosts).rank(rank)
                .phase(kind.label()).build();
    }

    private void checkUsable(String phase) {
        if (closing) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the collective communicator is closed")
                    .rank(rank).phase(phase).build();
        }
        if (communicator.isClosed()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the communicator this collective communicator"
                    + " was made from is closed (close the collective communicator first)").rank(rank).phase(phase)
                    .build();
        }
        // an abort reached every rank, which all refuse alike; a peer's departure only the ranks that watch it, and
        // their calls still run, to fail where the others wait for them (the others learn of it from that)
        JmscclppException f = failure;
        JmscclppException job = peerFailure;
        if (f == null && job != null && job.code() == ErrorCode.ABORTED) {
            f = job;
        }
        if (f != null) {
            throw JmscclppException.builder(f.code(), "the collective communicator failed earlier and cannot run more"
                    + " calls (close it and create a new one): " + f.getMessage()).rank(rank).phase(phase).cause(f)
                    .build();
        }
    }

    /** Makes {@code e} the communicator's failure unless it already has one. */
    protected final void breakWith(Throwable e) {
        synchronized (lock) {
            if (failure == null) {
                failure = e instanceof JmscclppException j ? j : JmscclppException.builder(ErrorCode.INTERNAL_ERROR,
                        "a collective call failed: " + e).rank(rank).phase("collective").cause(e).build();
            }
        }
    }

    /** Whether {@link #close()} was called. */
    protected final boolean isClosed() {
        return closed;
    }

    // ---------------------------------------------------------------------------------------------
    // registration

    @Override
    public final Mono<Void> register(DeviceBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        return registrationStep("register", () -> registerNow(DeviceBufferSlice.root(buffer)));
    }

    /**
     * Deregisters {@code buffer} once the calls in flight on this rank have ended (their kernels or
     * workers may still read it through the peers' mappings); a call whose subscriber cancelled it
     * is not waited for.
     */
    @Override
    public final Mono<Void> deregister(DeviceBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        return registrationStep("deregister", () -> {
            awaitCallsEnded("deregister");
            deregisterNow(DeviceBufferSlice.root(buffer));
        });
    }

    /** A register or deregister step: serialised, on a virtual thread; INVALID_USAGE once closed. */
    private Mono<Void> registrationStep(String phase, Runnable step) {
        return Mono.<Void>fromRunnable(() -> {
            registering.lock();
            try {
                exchanged = false;
                step.run();
            } catch (RuntimeException e) {
                // once this rank's message may have gone out, a failed step leaves the peers' registration exchanges
                // out of step with this rank's (a later register would pair another rank's stale message with this
                // one's buffer, and calls would read the wrong memory): the communicator is broken, as after a call
                if (exchanged) {
                    breakWith(typed(e, phase));
                }
                throw e;
            } finally {
                registering.unlock();
            }
        }).subscribeOn(virtual).onErrorMap(e -> e instanceof RejectedExecutionException,
                e -> JmscclppException.builder(ErrorCode.INVALID_USAGE, "the collective communicator is closed")
                        .rank(rank).phase(phase).build());
    }

    @Override
    public final boolean isRegistered(DeviceBuffer buffer) {
        return locate(buffer) != 0;
    }

    private void registerNow(DeviceBuffer root) {
        String phase = "register";
        checkUsable(phase);
        if (root.isClosed()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "cannot register a closed buffer: " + root)
                    .rank(rank).phase(phase).build();
        }
        checkBuffer(root, "registered");
        Registration existing = null;
        int index = -1;
        synchronized (lock) {
            for (int i = 0; i < registrations.size(); i++) {
                Registration r = registrations.get(i);
                if (r != null && r.buffer() == root) {
                    existing = r;
                } else if (r == null && index < 0) {
                    index = i;
                }
            }
            if (index < 0) {
                index = registrations.size();
            }
        }
        if (existing != null) {
            // registered already: one small exchange, in which every peer must name the same registration
            byte[] message = registrationMessage(existing.index(), existing.index(), new byte[0]);
            for (Map.Entry<Integer, byte[]> e : exchange(message, phase).entrySet()) {
                RegisteredMemory known = peerMemory(e.getKey(), e.getValue(), existing.index(), phase);
                if (known != existing.peers().get(e.getKey())) {
                    throw outOfStep(e.getKey(), phase);
                }
            }
            if (closed) {
                throw closedMeanwhile(phase);
            }
            return;
        }
        if (index >= maxRegistrations()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "this engine holds at most " + maxRegistrations()
                    + " registrations at once (deregister some)").rank(rank).phase(phase).build();
        }
        RegisteredMemory mine;
        try {
            mine = communicator.registerMemory(root, registrationTransports());
        } catch (JmscclppException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "this buffer cannot be registered for"
                    + " collectives (" + e.detail() + "): " + root).rank(rank).phase(phase).cause(e).build();
        }
        byte[] message = registrationMessage(index, -1, mine.serialize());
        Map<Integer, RegisteredMemory> peers = new HashMap<>();
        try {
            Map<Integer, byte[]> received = exchange(message, phase);
            for (Map.Entry<Integer, byte[]> e : received.entrySet()) {
                peers.put(e.getKey(), peerMemory(e.getKey(), e.getValue(), index, phase));
            }
            onRegistered(new Registration(index, root, mine, Collections.unmodifiableMap(peers)));
        } catch (RuntimeException e) {
            closeQuietly(mine, e);
            peers.values().forEach(m -> closeQuietly(m, e));
            throw e;
        }
        Registration r = new Registration(index, root, mine, Collections.unmodifiableMap(peers));
        synchronized (lock) {
            if (!closed) {
                if (index == registrations.size()) {
                    registrations.add(r);
                } else {
                    registrations.set(index, r);
                }
                return;
            }
        }
        // close() ran while the peers' memories came: it released the others, these are this step's to release
        JmscclppException e = closedMeanwhile(phase);
        closeQuietly(mine, e);
        peers.values().forEach(m -> closeQuietly(m, e));
        throw e;
    }

    /** The error of a register or deregister that {@link #close()} overtook while it waited for the peers. */
    private JmscclppException closedMeanwhile(String phase) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "the collective communicator was closed while this "
                + phase + " waited for the peers").rank(rank).phase(phase).build();
    }

    private JmscclppException outOfStep(int peer, String phase) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, "register calls are out of step: rank " + peer
                + " registers another buffer than this rank's registered one").rank(rank).peer(peer).phase(phase)
                .build();
    }

    /** How many registrations the engine holds at once: indexes run from 0 to this, exclusive. */
    protected int maxRegistrations() {
        return CallDescriptor.MAX_REGISTRATIONS + 1;
    }

    private static byte[] registrationMessage(int index, int knownAs, byte[] memory) {
        return ByteBuffer.allocate(8 + memory.length).order(ByteOrder.LITTLE_ENDIAN).putInt(index).putInt(knownAs)
                .put(memory).array();
    }

    /** The memory a peer's registration message names: mapped here, or (registering again) the one it already holds. */
    private RegisteredMemory peerMemory(int peer, byte[] message, int index, String phase) {
        ByteBuffer b = ByteBuffer.wrap(message).order(ByteOrder.LITTLE_ENDIAN);
        if (message.length < 8) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a registration message of " + message.length
                    + " bytes").rank(rank).peer(peer).phase(phase).build();
        }
        int theirIndex = b.getInt();
        int knownAs = b.getInt();
        if (theirIndex != index) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "register calls are out of step: rank " + peer
                    + " makes registration #" + theirIndex + ", this rank #" + index).rank(rank).peer(peer)
                    .phase(phase).build();
        }
        if (knownAs >= 0) {
            Registration earlier = registration(knownAs);
            RegisteredMemory m = earlier == null ? null : earlier.peers().get(peer);
            if (m == null) {
                throw outOfStep(peer, phase);
            }
            return m;
        }
        byte[] memory = new byte[b.remaining()];
        b.get(memory);
        return RegisteredMemory.deserialize(memory, communicator.backend());
    }

    private void deregisterNow(DeviceBuffer root) {
        String phase = "deregister";
        checkUsable(phase);
        List<Registration> mine = new ArrayList<>();
        synchronized (lock) {
            for (Registration r : registrations) {
                if (r != null && r.buffer() == root) {
                    mine.add(r);
                }
            }
        }
        if (mine.isEmpty()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the buffer is not registered: " + root)
                    .rank(rank).phase(phase).build();
        }
        ByteBuffer message = ByteBuffer.allocate(4 * mine.size()).order(ByteOrder.LITTLE_ENDIAN);
        mine.forEach(r -> message.putInt(r.index()));
        Map<Integer, byte[]> received = exchange(message.array(), phase);
        for (Map.Entry<Integer, byte[]> e : received.entrySet()) {
            if (!Arrays.equals(e.getValue(), message.array())) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "deregister calls are out of step: rank "
                        + e.getKey() + " deregisters other registrations than this rank").rank(rank).peer(e.getKey())
                        .phase(phase).build();
            }
        }
        synchronized (lock) {
            if (closed) {
                throw closedMeanwhile(phase);   // close() released every registration already
            }
            mine.forEach(r -> registrations.set(r.index(), null));
        }
        for (Registration r : mine) {
            onDeregistered(r);
        }
        closeRegistrations(mine);
    }

    /** Sends {@code message} to every peer and returns every peer's, each exchange bounded by the deadline. */
    private Map<Integer, byte[]> exchange(byte[] message, String phase) {
        exchanged = true;
        Bootstrap bootstrap = communicator.bootstrap();
        int tag = REGISTRATION_TAGS | options.tag();
        List<Mono<Void>> sends = new ArrayList<>();
        List<Mono<Map.Entry<Integer, byte[]>>> recvs = new ArrayList<>();
        for (int p = 0; p < size; p++) {
            if (p == rank) {
                continue;
            }
            int peer = p;
            sends.add(bootstrap.send(peer, tag, message, timeout));
            recvs.add(bootstrap.recv(peer, tag, timeout).map(bytes -> Map.entry(peer, bytes)));
        }
        Map<Integer, byte[]> out = new HashMap<>();
        Flux.merge(Flux.merge(sends).then(Mono.<Map.Entry<Integer, byte[]>>empty()), Flux.merge(recvs))
                .doOnNext(e -> out.put(e.getKey(), e.getValue()))
                .then()
                .timeout(timeout.plusSeconds(5), Mono.error(() -> timeoutError(phase, JmscclppException.NONE, timeout,
                        "the exchange with every peer")))
                .block();
        return out;
    }

    /** Closes the memories of {@code done}: this rank's registrations and the peers' memories mapped here. */
    private void closeRegistrations(List<Registration> done) {
        List<RegisteredMemory> stillUsed = new ArrayList<>();
        synchronized (lock) {
            for (Registration r : registrations) {
                if (r != null) {
                    stillUsed.add(r.memory());
                    stillUsed.addAll(r.peers().values());
                }
            }
        }
        List<RegisteredMemory> closing = new ArrayList<>();
        for (Registration r : done) {
            closing.add(r.memory());
            closing.addAll(r.peers().values());
        }
        for (RegisteredMemory m : closing) {
            if (stillUsed.stream().noneMatch(u -> u == m) && !m.isClosed()) {
                m.close();
            }
        }
    }

    private static void closeQuietly(AutoCloseable c, Throwable into) {
        try {
            c.close();
        } catch (Exception e) {
            into.addSuppressed(e);
        }
    }

    @Override
    public final void close() {
        synchronized (lock) {
            if (closing) {
                return;
            }
            closing = true;
        }
        // the calls issued before end first, as NCCL's ncclCommDestroy finalizes them: at most the timeout, after
        // which the release below ends a call still waiting (for a peer that never made its part) on this rank. From
        // a call's callback on the engine's thread the calls queued behind that call cannot run while this waits
        // (it waited the whole timeout for them): they end now
        if (onCallThread()) {
            if (callsInFlight.get() > 0) {
                LOG.log(Level.WARNING, "rank {0}: closing the collective communicator from a call''s callback with "
                        + "{1} call(s) issued after that call; they end now", rank, callsInFlight.get());
            }
        } else if (!callsEnded()) {
            LOG.log(Level.WARNING, "rank {0}: closing the collective communicator with {1} call(s) still "
                    + "in flight after {2} ms; they end now", rank, callsInFlight.get(), timeout.toMillis());
        }
        List<Registration> all;
        Disposable w;
        synchronized (lock) {
            closed = true;
            all = new ArrayList<>();
            registrations.forEach(r -> {
                if (r != null) {
                    all.add(r);
                }
            });
            registrations.clear();
            w = watch;
        }
        if (w != null) {
            w.dispose();
        }
        // the engine's own tables of registrations go with the engine: no onDeregistered here
        RuntimeException first = null;
        try {
            release();
        } catch (RuntimeException e) {
            first = e;
        }
        closeRegistrations(all);
        virtual.dispose();
        if (first != null) {
            throw first;
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** The op methods for one set of call options: the communicator's defaults, or a {@link #with} view. */
    private final class Issuer implements CollectiveComm {

        private final CallOptions callOptions;

        Issuer(CallOptions callOptions) {
            this.callOptions = callOptions;
        }

        private Mono<Void> one(CollectiveCall call) {
            return submit(List.of(call), callOptions, false);
        }

        @Override
        public Mono<Void> execute(CollectiveCall call) {
            return one(Objects.requireNonNull(call, "call"));
        }

        @Override
        public Mono<Void> group(Consumer<CollectiveGroup> calls) {
            Objects.requireNonNull(calls, "calls");
            return Mono.defer(() -> submit(record(calls), callOptions, true));
        }

        @Override
        public CollectiveComm with(CallOptions options) {
            return AbstractCollectiveComm.this.with(options);
        }

        @Override
        public int rank() {
            return rank;
        }

        @Override
        public int size() {
            return size;
        }

        @Override
        public Communicator communicator() {
            return communicator;
        }

        @Override
        public CollectiveOptions options() {
            return options;
        }

        @Override
        public List<Algorithm> algorithms() {
            return algorithms;
        }

        @Override
        public Algorithm algorithmFor(CollectiveCall call) {
            return chosen(call, callOptions);
        }

        @Override
        public Mono<Void> register(DeviceBuffer buffer) {
            return AbstractCollectiveComm.this.register(buffer);
        }

        @Override
        public Mono<Void> deregister(DeviceBuffer buffer) {
            return AbstractCollectiveComm.this.deregister(buffer);
        }

        @Override
        public boolean isRegistered(DeviceBuffer buffer) {
            return AbstractCollectiveComm.this.isRegistered(buffer);
        }

        @Override
        public void abort(String reason) {
            AbstractCollectiveComm.this.abort(reason);
        }

        @Override
        public Optional<JmscclppException> failure() {
            return AbstractCollectiveComm.this.failure();
        }

        @Override
        public void close() {
            AbstractCollectiveComm.this.close();
        }

        @Override
        public String toString() {
            return AbstractCollectiveComm.this + " with " + callOptions;
        }
    }

    /** A {@link CollectiveGroup} that records checked calls. */
    private final class Recorder implements CollectiveGroup {

        final List<CollectiveCall> calls = new ArrayList<>();

        @Override
        public CollectiveGroup add(CollectiveCall call) {
            Objects.requireNonNull(call, "call").validate(rank, size);
            calls.add(call);
            return this;
        }
    }
}
