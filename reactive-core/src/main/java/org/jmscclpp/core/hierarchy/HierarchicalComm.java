package org.jmscclpp.core.hierarchy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jmscclpp.core.Backend;
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
import org.jmscclpp.core.collective.CallOptions;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jmscclpp.core.collective.Reductions;
import org.jmscclpp.core.collective.TuningTable;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.spi.Closeables;
import org.jmscclpp.core.spi.HostIdentity;
import org.jmscclpp.core.spi.TransportProvider;
import org.jmscclpp.core.spi.TransportProviders;
import org.jmscclpp.core.spi.Tunables;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The collectives of a job whose ranks span hosts, for any backend: every op runs as steps inside
 * each host, on the backend's own collective communicator of that host's ranks (shared memory on
 * the host backend, CUDA IPC and NVLink on the CUDA backend), and steps between the hosts, each
 * rank exchanging with its <em>rail</em> (the ranks of the other hosts with the same local index)
 * over the network. An engine whose job spans hosts calls {@link #create} with its {@link Level}.
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
 *   <li>send/recv: inside a host, a group of the host's communicator; between hosts, over a
 *       link of the two ranks (a two-member rail on the rails' transport, made at their first
 *       transfer), the receiver checking the sender's descriptor (over the bootstrap) and
 *       answering before any data moves.</li>
 * </ul>
 * The steps between hosts run on a {@link HostRail}: one-sided writes and semaphore signals over
 * {@code ETHERNET} connections between the rail's members, in host memory of a host backend (the
 * communicator's own on CPU ranks; one of this communicator's on other backends). What a rail
 * step sends and receives is staged between the backend's memory and the host: on GPUs a copy to
 * and from the device per step, as NCCL's socket transport stages. Calls are always staged
 * (registering a buffer is accepted and changes nothing). The ranks compare every collective
 * call's descriptors over the bootstrap while its step inside the host runs (each engine checks its
 * host's ranks itself), and no step between hosts starts before the comparison is in: ranks that
 * disagree fail with INVALID_USAGE naming them. A collective's descriptors and the descriptors of
 * sends between hosts travel on one stream of bootstrap messages per pair of ranks, so a rank that
 * finds a send's descriptor where it expects a collective's, or the reverse, knows that the calls
 * crossed (NCCL hangs there): both fail with INVALID_USAGE naming the two calls, and the sending or
 * receiving rank tells the others (its descriptor in place of its collective one on every stream,
 * and a send to a rank of its host, which that host's engine finds crossed too). Calls run one
 * batch at a time on a platform thread of the communicator's, in issue order.
 *
 * <h2>Precision</h2>
 * Sums, products and averages of 8- and 16-bit floats run in float32 through both levels and round
 * to the type once, as on one host.
 */
public final class HierarchicalComm extends AbstractCollectiveComm {

    /** The name of the flat algorithms ({@link #ALGORITHMS}). */
    public static final String FLAT = "flat";
    /** The most bytes of its send buffer a rank sends in a flat call (to each rank that needs them). */
    static final long FLAT_MAX_BYTES = 4L << 20;

    /** The topology name of this communicator's tuning rows. */
    public static final String TOPOLOGY = "hosts";
    /**
     * System property: threads that fold one chunk of the rail (the worker and helpers), 1 to 16; by
     * default a quarter of the cores, at most 4.
     */
    public static final String FOLD_THREADS_PROPERTY = "jmscclpp.foldThreads";
    /** Fewest elements a fold's thread takes. */
    private static final long FOLD_MIN_ELEMENTS = 32 << 10;

    /**
     * The algorithms (ids 101 to 113, apart from any engine's own): per kind the hierarchical one
     * (the default) and, for small calls, a flat one that sends every rank what it needs with the
     * call's descriptor, one bootstrap message per pair of ranks, and computes the result on the
     * host: a round trip of the network instead of the hierarchical steps' six synchronisations.
     */
    public static final List<Algorithm> ALGORITHMS = List.of(
            new Algorithm(CollectiveKind.ALL_REDUCE, "hier", 101,
                    "allReduce in each host, slice i reduced over rail i between hosts, allGather in each host"),
            new Algorithm(CollectiveKind.ALL_GATHER, "hier", 102,
                    "allGather in each host, then the host blocks over each rail"),
            new Algorithm(CollectiveKind.REDUCE_SCATTER, "hier", 103, "the hierarchical allReduce, then this rank's slot"),
            new Algorithm(CollectiveKind.BROADCAST, "hier", 104,
                    "broadcast in the root's host, then from each of its ranks over its rail"),
            new Algorithm(CollectiveKind.REDUCE, "hier", 105, "the hierarchical allReduce, kept by the root"),
            new Algorithm(CollectiveKind.ALL_TO_ALL, "hier", 106,
                    "allToAll in each host grouped by destination local index, then over each rail"),
            new Algorithm(CollectiveKind.SEND, "hier", 107,
                    "the host's own communicator inside a host, the bootstrap's connection between hosts"),
            new Algorithm(CollectiveKind.RECV, "hier", 107,
                    "the host's own communicator inside a host, the bootstrap's connection between hosts"),
            new Algorithm(CollectiveKind.ALL_REDUCE, FLAT, 108,
                    "every rank's data to every rank with the descriptor, reduced there in rank order on the host"),
            new Algorithm(CollectiveKind.ALL_GATHER, FLAT, 109, "every rank's slice to every rank with the descriptor"),
            new Algorithm(CollectiveKind.REDUCE_SCATTER, FLAT, 110,
                    "slot q of every rank to rank q with the descriptor, reduced there in rank order on the host"),
            new Algorithm(CollectiveKind.BROADCAST, FLAT, 111, "the root's data to every rank with the descriptor"),
            new Algorithm(CollectiveKind.REDUCE, FLAT, 112,
                    "every rank's data to the root with the descriptor, reduced there in rank order on the host"),
            new Algorithm(CollectiveKind.ALL_TO_ALL, FLAT, 113, "slot q of every rank to rank q with the descriptor"));

    /**
     * What an engine supplies for the steps inside one host.
     */
    public interface Level {

        /** Sets up the engine's collective communicator of one host's ranks (over {@code hostCommunicator}). */
        Mono<CollectiveComm> create(Communicator hostCommunicator, CollectiveOptions options, TuningTable tuning);

        /** Throws INVALID_USAGE naming {@code which} when the engine cannot take {@code buffer}. */
        void checkBuffer(Backend backend, int rank, DeviceBuffer buffer, String which);

        /**
         * The backend whose host memory the rails register for the network: null where the
         * communicator's own backend gives host memory (the host backend), else a host backend
         * opened for this communicator, which closes it.
         */
        default @Nullable Backend openRailBackend() {
            return null;
        }
    }

    private static final System.Logger LOG = Log.logger(HierarchicalComm.class, Subsystem.COLL);

    /**
     * Environment variable naming the rails' transport ({@code ETHERNET}, {@code IB0..IB7});
     * unset, {@code IB0} where every rank can use it, else {@code ETHERNET}.
     */
    public static final String RAIL_TRANSPORT_ENV = "MSCCLPP_RAIL_TRANSPORT";

    /**
     * Bootstrap tags (this prefix | the options' tag): the descriptors of collectives and of sends
     * between hosts (one stream per pair of ranks, in call order), and the answers to the sends.
     */
    private static final int CALL_TAGS = 0x4F000000;
    private static final int P2P_ANSWER_TAGS = 0x51000000;
    /**
     * An answer's first byte: the receiver's descriptor disagrees; the receiver is in a collective
     * (a hierarchical one, or a flat one, whose ranks wait on no step inside their host).
     */
    private static final byte ANSWER_MISMATCH = 1;
    private static final byte ANSWER_CROSSED = 2;
    private static final byte ANSWER_CROSSED_FLAT = 3;
    /** How long the send that tells a host's engine of a crossing waits for a rank of the host to meet it. */
    private static final Duration TELL_HOST_TIMEOUT = Duration.ofSeconds(5);

    private final Backend backend;
    private final Level level;
    /** The rail's host backend when this communicator opened one (non-host backends), else null. */
    private final @Nullable Backend railBackend;
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
    private final Transport railTransport;
    /**
     * The links for sends and receives between this rank and ranks of other hosts, one per
     * direction ({@link #linkKey}): a two-member rail each, made at the first transfer that way
     * (both ranks make it then), closed with this.
     */
    private final Map<Integer, Link> links = new ConcurrentHashMap<>();
    private final ExecutorService worker;
    /** Emitted when {@link #release()} begins: the waits of a call still running end then, as on one host. */
    private final Sinks.Empty<Void> released = Sinks.empty();
    /** The worker's thread, which completes the calls (and so runs a close() from their callbacks). */
    private volatile @Nullable Thread workerThread;
    private final Scratch scratch;
    /** Threads that fold a chunk ({@value #FOLD_THREADS_PROPERTY}). */
    private final int foldThreads = Tunables.intValue(FOLD_THREADS_PROPERTY,
            Math.clamp(Runtime.getRuntime().availableProcessors() / 4, 1, 4), 1, 16);
    /** The fold pool, once a fold was large enough to split (see {@link #foldPool()}). */
    private @Nullable ForkJoinPool foldPool;
    /** The descriptor comparison of the collective call under way, until settled (the worker thread's). */
    private @Nullable CompletableFuture<byte[][]> agreement;
    /** Where a collective call's time went, by step (TRACE of COLL only; the worker thread's). */
    private final @Nullable Map<String, Long> phases;

    private HierarchicalComm(Communicator communicator, CollectiveOptions options, Level level,
                             @Nullable Backend railBackend, TuningTable tuning, int[][] ranksOf,
                             Communicator hostCommunicator, CollectiveComm hostComm, HostRail rail,
                             Transport railTransport) {
        // the engine's rows for any topology name its single-host algorithms: only the hosts rows apply here
        super(communicator, options, ALGORITHMS, tuning.only(TOPOLOGY), TOPOLOGY);
        this.backend = communicator.backend();
        this.level = level;
        this.railBackend = railBackend;
        // where the backend's memory is the host's (no rail backend of its own), scratch is host memory
        this.scratch = new Scratch(railBackend == null ? null : backend);
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
        this.railTransport = railTransport;
        // synchronized: the sends and receives between hosts run on threads of their own
        this.phases = LOG.isLoggable(System.Logger.Level.TRACE) ? Collections.synchronizedMap(new LinkedHashMap<>()) : null;
        // a platform thread: its waits on the rail run the network's receiving end themselves
        // (Waiting.Progress), where a virtual thread would wait for the event loop to wake it
        ThreadFactory platform = Thread.ofPlatform().daemon().name("jmscclpp-hier-r" + rank).factory();
        this.worker = Executors.newSingleThreadExecutor(task -> {
            Thread t = platform.newThread(task);
            workerThread = t;
            return t;
        });
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

    /**
     * Sets up the collectives of {@code communicator}, whose ranks span hosts, with {@code level}'s
     * communicators inside each host and the rails between hosts over the network transport that
     * {@value #RAIL_TRANSPORT_ENV} names, else {@code IB0} where every rank can use it, else
     * {@code ETHERNET}. Every rank of the job calls it at once.
     */
    public static Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options, TuningTable tuning,
                                              Level level) {
        String setting = System.getenv(RAIL_TRANSPORT_ENV);
        return setUpOnVirtualThread(() -> setUp(communicator, options, tuning, level, HostIdentity.hostHash(),
                railBackend -> railPreference(setting, railBackend)));
    }

    /**
     * As above, with {@code hostHash} telling this rank's host and {@code railTransport} carrying the
     * steps between hosts (tests split one host into several, and connect them over HOST_IPC).
     */
    public static Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options,
                                              TuningTable tuning, Level level, LongSupplier hostHash,
                                              Transport railTransport) {
        return setUpOnVirtualThread(() -> setUp(communicator, options, tuning, level, hostHash.getAsLong(),
                railBackend -> new RailPreference(railTransport, true)));
    }

    /**
     * The rails' transport a rank asks for: named ({@value #RAIL_TRANSPORT_ENV}) or chosen by what
     * it has; {@code problem} says why a named one is not a network transport or not usable here
     * (the ranks exchange preferences first, so that every rank fails with the news, none waits).
     */
    record RailPreference(Transport transport, boolean named, @Nullable String problem) {
        RailPreference(Transport transport, boolean named) {
            this(transport, named, null);
        }
    }

    /**
     * This rank's preference: the transport {@code setting} names ({@code ETHERNET} or
     * {@code IB0..IB7}, any case; with a problem when it is another value or this rank cannot use
     * it, saying why), else {@code IB0} when its provider is present and usable with
     * {@code backend}, else {@code ETHERNET}.
     */
    static RailPreference railPreference(@Nullable String setting, Backend backend) {
        if (setting == null || setting.isBlank()) {
            return new RailPreference(usable(Transport.IB0, backend) == null ? Transport.IB0 : Transport.ETHERNET,
                    false);
        }
        Transport named;
        try {
            named = Transport.valueOf(setting.strip().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            named = null;
        }
        if (named == null || named != Transport.ETHERNET && !named.isIb()) {
            return new RailPreference(Transport.ETHERNET, true, RAIL_TRANSPORT_ENV + "=" + setting
                    + " names no network transport: ETHERNET or IB0..IB7");
        }
        String why = usable(named, backend);
        return new RailPreference(named, true, why == null ? null : RAIL_TRANSPORT_ENV + "=" + setting
                + ", which this rank cannot use: " + why);
    }

    /** Why {@code transport} cannot carry memory of {@code backend} here, or null when it can. */
    private static @Nullable String usable(Transport transport, Backend backend) {
        TransportProvider provider = TransportProviders.find(transport);
        if (provider == null) {
            return "no module on the module or class path provides " + transport;
        }
        return provider.unavailableReason(backend, transport).orElse(null);
    }

    /**
     * The rails' transport from every rank's preference: INVALID_USAGE when a rank's has a problem
     * (its own reason on that rank, naming it on the others); where any rank named one, every rank must
     * have named the same (else INVALID_USAGE naming two that differ); else the one they all chose,
     * or {@code ETHERNET} when they chose differently (one host without IB takes every rail to
     * ETHERNET).
     */
    static Transport agreeOnRails(RailPreference[] all, int rank, String phase) {
        String mine = all[rank].problem();
        if (mine != null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, mine).rank(rank).phase(phase).build();
        }
        for (int r = 0; r < all.length; r++) {
            if (all[r].problem() != null) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "rank " + r + " names a rails' transport ("
                        + RAIL_TRANSPORT_ENV + ") that it cannot use; its own error says why").rank(rank).peer(r)
                        .phase(phase).build();
            }
        }
        int namedBy = -1;
        for (int r = 0; r < all.length; r++) {
            if (all[r].named()) {
                namedBy = r;
                break;
            }
        }
        if (namedBy >= 0) {
            for (int r = 0; r < all.length; r++) {
                if (!all[r].named() || all[r].transport() != all[namedBy].transport()) {
                    throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the ranks disagree on "
                            + RAIL_TRANSPORT_ENV + ": rank " + namedBy + " has " + all[namedBy].transport()
                            + ", rank " + r + " has " + (all[r].named() ? all[r].transport() : "it unset"))
                            .rank(rank).peer(r == rank ? namedBy : r).phase(phase).build();
                }
            }
            return all[namedBy].transport();
        }
        for (RailPreference p : all) {
            if (p.transport() != all[0].transport()) {
                return Transport.ETHERNET;
            }
        }
        return all[0].transport();
    }

    private static HierarchicalComm setUp(Communicator communicator, CollectiveOptions options, TuningTable tuning,
                                          Level level, long hostHash,
                                          Function<Backend, RailPreference> preference) {
        Backend railBackend = level.openRailBackend();
        try {
            return setUp(communicator, options, tuning, level, hostHash, preference, railBackend);
        } catch (RuntimeException e) {
            if (railBackend != null) {
                Closeables.closeAll(List.of(railBackend), e);
            }
            throw e;
        }
    }

    private static HierarchicalComm setUp(Communicator communicator, CollectiveOptions options, TuningTable tuning,
                                          Level level, long hostHash, Function<Backend, RailPreference> preference,
                                          @Nullable Backend railBackend) {
        int rank = communicator.rank();
        String phase = "collective setup";
        Duration timeout = timeoutOf(communicator, options);
        Bootstrap bs = communicator.bootstrap();
        RailPreference wanted = preference.apply(railBackend == null ? communicator.backend() : railBackend);
        byte[] mine = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(hostHash)
                .putInt(wanted.transport().ordinal())
                .putInt(wanted.problem() != null ? 2 : wanted.named() ? 1 : 0).array();
        ByteBuffer all = ByteBuffer.wrap(Objects.requireNonNull(bs.allGather(mine, timeout)
                .timeout(timeout.plusSeconds(5)).block())).order(ByteOrder.LITTLE_ENDIAN);
        long[] hashes = new long[communicator.size()];
        RailPreference[] preferences = new RailPreference[communicator.size()];
        for (int r = 0; r < hashes.length; r++) {
            hashes[r] = all.getLong();
            int ordinal = all.getInt();
            int how = all.getInt();
            if (ordinal < 0 || ordinal >= Transport.values().length || how < 0 || how > 2) {
                throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "rank " + r + " sent transport "
                        + ordinal + " (" + how + ")").rank(rank).peer(r).phase(phase).build();
            }
            preferences[r] = r == rank ? wanted : new RailPreference(Transport.values()[ordinal], how != 0,
                    how == 2 ? "rank " + r + " cannot use the rails' transport it names" : null);
        }
        Transport railTransport = agreeOnRails(preferences, rank, phase);
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
        Communicator hostCommunicator = Communicator.create(hostBootstrap, communicator.backend());
        List<AutoCloseable> made = new ArrayList<>(List.of(hostCommunicator));
        try {
            CollectiveComm hostComm = Objects.requireNonNull(level.create(hostCommunicator, insideHost(options),
                    tuning).timeout(timeout.plusSeconds(5)).block());
            made.addFirst(hostComm);
            // the rail's waits end with the job's failure, as the collective communicator's watch sees it
            AtomicReference<@Nullable HierarchicalComm> self = new AtomicReference<>();
            HostRail rail = HostRail.open(new SubsetBootstrap(bs, railMembers, 1),
                    railBackend == null ? communicator.backend() : railBackend, railTransport, timeout, () -> {
                        HierarchicalComm c = self.get();
                        return c == null ? null : c.stopping();
                    });
            made.addFirst(rail);
            HierarchicalComm comm = new HierarchicalComm(communicator, options, level, railBackend, tuning, ranksOf,
                    hostCommunicator, hostComm, rail, railTransport);
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
    protected Algorithm adjust(Planned planned) {
        // a table's flat for a call beyond its capacity gives way to the hierarchical algorithm
        CollectiveCall call = planned.call();
        if (planned.algorithm().name().equals(FLAT) && call.sendBytes(rank, size) > FLAT_MAX_BYTES) {
            return ALGORITHMS.stream().filter(a -> a.kind() == call.kind()).findFirst().orElseThrow();
        }
        return planned.algorithm();
    }

    @Override
    protected void checkBuffer(DeviceBuffer buffer, String which) {
        level.checkBuffer(backend, rank, buffer, which);
    }

    /** Registrations travel with no transport: calls here are always staged. */
    @Override
    protected TransportFlags registrationTransports() {
        return TransportFlags.NONE;
    }

    @Override
    protected boolean onCallThread() {
        return Thread.currentThread() == workerThread;
    }

    /**
     * What ends the waits of a call: the job's failure as the watch saw it, else (the communicator closed while the
     * call waited past close()'s wait for it) ABORTED, as the host engine's waits end; null while neither.
     */
    private @Nullable JmscclppException stopping() {
        JmscclppException job = peerFailure();
        if (job != null || !isClosed()) {
            return job;
        }
        return JmscclppException.builder(ErrorCode.ABORTED, "the collective communicator was closed").rank(rank)
                .phase("collective").build();
    }

    @Override
    protected void release() {
        released.tryEmitEmpty();
        worker.shutdown();
        try {
            // closed from a call's own completion, which runs on the worker: it ends after this call, not before
            if (!onCallThread()
                    && !worker.awaitTermination(timeout.toMillis() + 5_000, TimeUnit.MILLISECONDS)) {
                worker.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (this) {
            if (foldPool != null) {
                foldPool.shutdownNow();
            }
        }
        List<AutoCloseable> all = new ArrayList<>(links.values());
        all.addAll(List.of(rail, hostComm, hostCommunicator, scratch));
        if (railBackend != null) {
            all.add(railBackend);
        }
        Closeables.closeAll(all);
    }

    // ---------------------------------------------------------------------------------------------
    // running calls

    private void run(Batch batch) {
        JmscclppException broken = callFailure();
        if (broken != null) {
            throw broken;   // an earlier call broke the communicator; the peers are not in this one
        }
        if (isClosed()) {
            // queued behind the call whose callback closed the communicator (release() let the worker run it)
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the collective communicator was closed before"
                    + " this call ran").rank(rank).phase("close").build();
        }
        long deadline = Waiting.deadline(batch.timeout());
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
                long start = System.nanoTime();
                // the ranks compare descriptors while the step inside the host runs: each engine checks
                // its host's ranks itself, and nothing crosses hosts before the comparison is in; a flat
                // algorithm's data travels with the descriptors and is used once they agree
                boolean flat = p.algorithm().name().equals(FLAT);
                byte[][] payloads = flat ? timed("flat staging", () -> payloads(p.call())) : null;
                agreement = agreeing(p.descriptor(), payloads, deadline);
                try {
                    if (flat) {
                        byte[][] all = Objects.requireNonNull(settleAgreement(deadline));
                        timed("flat result", () -> runFlat(p.call(), all));
                    } else {
                        runCollective(p.call(), deadline);
                        settleAgreement(deadline);
                    }
                } catch (RuntimeException e) {
                    // a mismatch between hosts says more than what it made fail in a host
                    try {
                        settleAgreement(deadline);
                    } catch (JmscclppException mismatch) {
                        if (mismatch.code() == ErrorCode.INVALID_USAGE) {
                            mismatch.addSuppressed(e);
                            throw mismatch;
                        }
                    }
                    throw e;
                } finally {
                    agreement = null;
                }
                if (phases != null) {
                    logPhases(p.call(), System.nanoTime() - start);
                }
            }
        }
    }

    /**
     * Starts the comparison of this call's descriptor with every rank's: sent to every rank on its
     * stream of call descriptors, each message followed by {@code payloads[q]} where given (a flat
     * algorithm's data for rank q), and every rank's message received (by rank; this rank's own,
     * with its own payload, at its index).
     */
    private CompletableFuture<byte[][]> agreeing(CallDescriptor mine, byte @Nullable [][] payloads, long deadline) {
        byte[] descriptor = descriptorMessage(mine);
        Duration left = left(deadline);
        byte[][] all = new byte[size][];
        List<Mono<Void>> steps = new ArrayList<>();
        for (int q = 0; q < size; q++) {
            byte[] out = descriptor;
            if (payloads != null && payloads[q].length > 0) {
                out = Arrays.copyOf(descriptor, descriptor.length + payloads[q].length);
                System.arraycopy(payloads[q], 0, out, descriptor.length, payloads[q].length);
            }
            if (q == rank) {
                all[q] = out;
            } else {
                int peer = q;
                steps.add(bootstrap.send(peer, tag(CALL_TAGS), out, left));
                steps.add(bootstrap.recv(peer, tag(CALL_TAGS), left).doOnNext(b -> all[peer] = b).then());
            }
        }
        return Mono.when(steps).thenReturn(all).toFuture();
    }

    /** The first two words of a descriptor (what calls are compared on), as a message of {@link CallDescriptor#BYTES}. */
    private static byte[] descriptorMessage(CallDescriptor d) {
        long[] words = d.words();
        return ByteBuffer.allocate(CallDescriptor.BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(words[0])
                .putLong(words[1]).putLong(0).putLong(0).array();
    }

    private static CallDescriptor descriptorOf(byte[] message, int rank) {
        ByteBuffer in = ByteBuffer.wrap(message).order(ByteOrder.LITTLE_ENDIAN);
        return CallDescriptor.decode(new long[] {in.getLong(), in.getLong(), in.getLong(), in.getLong()}, rank);
    }

    /**
     * Waits for the comparison this call started, once (later calls return null at once):
     * INVALID_USAGE on every rank when the descriptors differ, else every rank's message. Every
     * step that moves data between hosts calls it first.
     */
    private byte @Nullable [][] settleAgreement(long deadline) {
        CompletableFuture<byte[][]> pending = agreement;
        if (pending == null) {
            return null;
        }
        agreement = null;
        byte[][] all = await(Mono.fromFuture(pending), deadline, "descriptors");
        List<CallDescriptor> byRank = new ArrayList<>(size);
        for (int r = 0; r < size; r++) {
            byRank.add(descriptorOf(all[r], 0));
        }
        CallDescriptor mine = byRank.get(rank);
        for (int q = 0; q < size; q++) {
            CallDescriptor theirs = byRank.get(q);
            if (theirs.kind().pointToPoint()) {
                // q sends to this rank (it waits for the answer) or told every rank that it crossed
                String mineText = mine.describe(this::algorithmName);
                String theirsText = theirs.describe(this::algorithmName);
                if (theirs.kind() == CollectiveKind.SEND) {
                    answer(q, isFlat(mine) ? ANSWER_CROSSED_FLAT : ANSWER_CROSSED,
                            CallDescriptor.crossedCalls(rank, mineText, theirsText), deadline);
                }
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, CallDescriptor.crossedCalls(q, theirsText,
                        mineText)).rank(rank).peer(q).tag(options.tag()).phase("collective").build();
            }
        }
        CallDescriptor.mismatch(byRank, this::algorithmName).ifPresent(why -> {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, why).rank(rank).phase("collective").build();
        });
        return all;
    }

    /**
     * A flat algorithm's data for each rank, read from this rank's send buffer before anything is
     * written (the receive buffer may be the same memory): all of it for every rank (allReduce,
     * allGather; the root's for broadcast, every rank's for the root in reduce), slot q for rank q
     * (reduceScatter, allToAll).
     */
    private byte[][] payloads(CollectiveCall call) {
        byte[][] out = new byte[size][];
        long sendBytes = call.sendBytes(rank, size);
        byte[] data = new byte[Math.toIntExact(sendBytes)];
        if (sendBytes > 0) {
            MemorySegment staged = scratch.host(0, sendBytes);
            toHost(Objects.requireNonNull(call.send()), 0, staged);
            MemorySegment.copy(staged, 0, MemorySegment.ofArray(data), 0, sendBytes);
        }
        int slot = Math.toIntExact(call.count() * call.type().bytes());
        for (int q = 0; q < size; q++) {
            out[q] = switch (call.kind()) {
                case REDUCE_SCATTER, ALL_TO_ALL -> Arrays.copyOfRange(data, q * slot, (q + 1) * slot);
                case REDUCE -> q == call.root() ? data : new byte[0];
                default -> data;   // allReduce, allGather; broadcast: the root's (the others send none)
            };
        }
        return out;
    }

    /**
     * A flat algorithm's result from what every rank sent ({@code all[q]}: rank q's message, its
     * descriptor then its data for this rank): reductions fold the ranks' data in rank order on
     * the host ({@link Reductions#reduce}: low-precision floats in float32, rounded once).
     */
    private void runFlat(CollectiveCall call, byte[][] all) {
        long bytes = call.count() * call.type().bytes();
        if (bytes == 0 || !call.writesRecv(rank)) {
            return;
        }
        DeviceBuffer recv = Objects.requireNonNull(call.recv());
        MemorySegment[] from = new MemorySegment[size];
        for (int q = 0; q < size; q++) {
            from[q] = MemorySegment.ofArray(all[q]).asSlice(CallDescriptor.BYTES);
        }
        switch (call.kind()) {
            case ALL_REDUCE, REDUCE_SCATTER, REDUCE -> {
                MemorySegment out = recv.hostAccessible() ? recv.hostSegment().asSlice(0, bytes)
                        : scratch.host(1, bytes);
                Reductions.reduce(call.type(), Objects.requireNonNull(call.op()), from, new long[size], out, 0,
                        call.count());
                if (!recv.hostAccessible()) {
                    fromHost(out, recv, 0);
                }
            }
            case BROADCAST -> deliver(from[call.root()], recv, 0);
            case ALL_GATHER, ALL_TO_ALL -> {
                for (int q = 0; q < size; q++) {
                    deliver(from[q], recv, q * bytes);
                }
            }
            default -> throw new IllegalStateException("not a collective: " + call.kind());
        }
    }

    /** Copies the (heap) segment {@code src} into {@code dst} at {@code offset}, through pinned memory for a device. */
    private void deliver(MemorySegment src, DeviceBuffer dst, long offset) {
        if (dst.hostAccessible()) {
            MemorySegment.copy(src, 0, dst.hostSegment(), offset, src.byteSize());
        } else {
            MemorySegment staged = scratch.host(1, src.byteSize());
            MemorySegment.copy(src, 0, staged, 0, src.byteSize());
            fromHost(staged, dst, offset);
        }
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
                    long bytes = count * call.type().bytes();
                    DeviceBuffer all = scratch.device(0, bytes * size);
                    allReduce(Objects.requireNonNull(call.send()), all, count * size, call.type(),
                            Objects.requireNonNull(call.op()), deadline);
                    copy(all, rank * bytes, Objects.requireNonNull(call.recv()), 0, bytes);
                }
            }
            case REDUCE -> {
                if (count > 0) {
                    long bytes = count * call.type().bytes();
                    DeviceBuffer result = scratch.device(0, bytes);
                    allReduce(Objects.requireNonNull(call.send()), result, count, call.type(),
                            Objects.requireNonNull(call.op()), deadline);
                    if (rank == call.root()) {
                        copy(result, 0, Objects.requireNonNull(call.recv()), 0, bytes);
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
     * and averages of 8- and 16-bit floats run in float32 through both levels and are rounded to the
     * type once at the end, as the single-host algorithms round them: rounding after each level
     * instead would err by up to an ulp per level (the price: the input and the result pass through
     * the host, and twice the data moves inside the host).
     */
    private void allReduce(DeviceBuffer send, DeviceBuffer recv, long count, DataType type, ReduceOp op,
                           long deadline) {
        if (op != ReduceOp.MIN && op != ReduceOp.MAX && type.isFloatingPoint() && type.bytes() < 4) {
            MemorySegment narrow = scratch.host(4, count * type.bytes());
            MemorySegment wide = scratch.host(5, count * 4);
            toHost(send, 0, narrow);
            Reductions.toFloat32(type, narrow, 0, wide, 0, count);
            DeviceBuffer wideSend = scratch.device(4, count * 4);
            DeviceBuffer wideRecv = scratch.device(5, count * 4);
            fromHost(wide, wideSend, 0);
            allReduce(wideSend, wideRecv, count, DataType.FLOAT32, op, deadline);
            toHost(wideRecv, 0, wide);
            Reductions.fromFloat32(type, wide, 0, narrow, 0, count);
            fromHost(narrow, recv, 0);
            return;
        }
        ReduceOp partial = op == ReduceOp.AVG ? ReduceOp.SUM : op;
        int e = type.bytes();
        inHost(hostComm.allReduce(send, recv, count, type, partial), deadline, "allReduce in the host");
        long lo = count * local / perHost;
        long n = count * (local + 1) / perHost - lo;
        if (n > 0) {
            MemorySegment gathered = scratch.host(1, n * e * hosts);
            MemorySegment mine = gathered.asSlice(host * n * e, n * e);
            MemorySegment result = scratch.host(2, n * e);
            toHost(recv, lo * e, mine);
            // each chunk is folded as soon as every other host's part of it is in, while the rest travels
            HostRail.Arrival foldRange = (member, offset, bytes) -> timed("fold", () -> fold(type, partial,
                    op == ReduceOp.AVG, gathered, n * e, result, offset, bytes / e));
            int[] arrived = new int[(int) ((n * e + HostRail.CHUNK - 1) / HostRail.CHUNK)];
            HostRail.Arrival fold = (member, offset, bytes) -> {
                if (++arrived[(int) (offset / HostRail.CHUNK)] == hosts - 1) {
                    foldRange.chunk(member, offset, bytes);
                }
            };
            if (hosts == 1) {
                foldRange.chunk(0, 0, n * e);   // no other host: this host's result is the job's
            }
            railExchange(n * e, p -> mine, p -> gathered.asSlice(p * n * e, n * e), -1, fold, deadline);
            fromHost(result, recv, lo * e);
        }
        if (perHost > 1 && count % perHost == 0) {
            // equal slices: an in-place allGather into recv itself
            inHost(hostComm.allGather(recv.slice(lo * e, n * e), recv, n, type), deadline,
                    "allGather of the slices in the host");
        } else if (perHost > 1) {
            long padded = (count + perHost - 1) / perHost;
            DeviceBuffer slice = scratch.device(2, padded * e);
            DeviceBuffer slices = scratch.device(3, padded * e * perHost);
            copy(recv, lo * e, slice, 0, n * e);
            inHost(hostComm.allGather(slice, slices, padded, type), deadline, "allGather of the slices in the host");
            for (int j = 0; j < perHost; j++) {
                long jlo = count * j / perHost;
                long jn = count * (j + 1) / perHost - jlo;
                if (j != local) {
                    copy(slices, j * padded * e, recv, jlo * e, jn * e);
                }
            }
        }
    }

    /**
     * {@code result[offset, +count elements)} = the reduction of the hosts' parts at the same place
     * of {@code gathered} (host h's part starts at {@code h * part} bytes), divided by the rank count
     * for an average. Large ranges are split over the fold pool's threads.
     */
    private void fold(DataType type, ReduceOp op, boolean average, MemorySegment gathered, long part,
                      MemorySegment result, long offset, long count) {
        int e = type.bytes();
        int pieces = (int) Math.max(1, Math.min(foldThreads, count / FOLD_MIN_ELEMENTS));
        Runnable[] work = new Runnable[pieces];
        for (int i = 0; i < pieces; i++) {
            long lo = count * i / pieces;
            long len = count * (i + 1) / pieces - lo;
            long at = offset + lo * e;
            work[i] = () -> {
                MemorySegment[] sources = new MemorySegment[hosts];
                long[] offsets = new long[hosts];
                for (int h = 0; h < hosts; h++) {
                    sources[h] = gathered;
                    offsets[h] = h * part + at;
                }
                Reductions.reduce(type, op, sources, offsets, result, at, len);
                if (average) {
                    divide(type, result, at, len, size);
                }
            };
        }
        if (pieces == 1) {
            work[0].run();
            return;
        }
        ForkJoinPool pool = foldPool();
        List<ForkJoinTask<?>> tasks = new ArrayList<>();
        for (int i = 1; i < pieces; i++) {
            tasks.add(pool.submit(work[i]));
        }
        work[0].run();
        for (ForkJoinTask<?> t : tasks) {
            t.join();
        }
    }

    /** The fold's helper threads, started by the first fold large enough to split. */
    private synchronized ForkJoinPool foldPool() {
        if (foldPool == null) {
            foldPool = new ForkJoinPool(foldThreads - 1, pool -> {
                ForkJoinWorkerThread t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(pool);
                t.setName("jmscclpp-fold-r" + rank + "-" + t.getPoolIndex());
                t.setDaemon(true);
                return t;
            }, null, false);
        }
        return foldPool;
    }

    private void allGather(CollectiveCall call, long deadline) {
        long c = call.count();
        if (c == 0) {
            return;
        }
        long bytes = c * call.type().bytes();
        long block = bytes * perHost;
        DeviceBuffer mine = scratch.device(0, block);
        inHost(hostComm.allGather(Objects.requireNonNull(call.send()), mine, c, call.type()), deadline,
                "allGather in the host");
        MemorySegment byHost = scratch.host(0, block * hosts);
        MemorySegment ours = byHost.asSlice(host * block, block);
        toHost(mine, 0, ours);
        railExchange(block, p -> ours, p -> byHost.asSlice(p * block, block), -1, deadline);
        placeByRank(byHost, bytes, Objects.requireNonNull(call.recv()));
    }

    /**
     * Copies the {@code bytes} of every rank from {@code byHost} (host blocks in host order, each
     * holding its ranks in local order) to that rank's slot of {@code recv}, one copy per run of
     * ranks whose slots follow each other.
     */
    private void placeByRank(MemorySegment byHost, long bytes, DeviceBuffer recv) {
        int total = hosts * perHost;
        for (int k = 0; k < total; ) {
            int r = ranksOf[k / perHost][k % perHost];
            int run = 1;
            while (k + run < total && ranksOf[(k + run) / perHost][(k + run) % perHost] == r + run) {
                run++;
            }
            fromHost(byHost.asSlice(k * bytes, run * bytes), recv, r * bytes);
            k += run;
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
            inHost(hostComm.broadcast(call.send(), recv, count, call.type(), localOf[call.root()]), deadline,
                    "broadcast in the root's host");
        }
        long bytes = count * call.type().bytes();
        MemorySegment r = scratch.host(0, bytes);
        if (host == rootHost) {
            toHost(recv, 0, r);
        }
        railExchange(bytes, p -> r, p -> r, rootHost, deadline);
        if (host != rootHost) {
            fromHost(r, recv, 0);
        }
    }

    private void allToAll(CollectiveCall call, long deadline) {
        long c = call.count();
        if (c == 0) {
            return;
        }
        long bytes = c * call.type().bytes();
        long block = bytes * hosts;
        DeviceBuffer send = Objects.requireNonNull(call.send());
        // byLocal: block j holds, per host h, what this rank sends to local rank j of host h
        DeviceBuffer byLocal = scratch.device(0, block * perHost);
        for (int j = 0; j < perHost; j++) {
            for (int h = 0; h < hosts; h++) {
                copy(send, ranksOf[h][j] * bytes, byLocal, j * block + h * bytes, bytes);
            }
        }
        // fromLocal: block i holds, per host h, what local rank i of this host sends to (h, this local index)
        DeviceBuffer fromLocal = scratch.device(1, block * perHost);
        inHost(hostComm.allToAll(byLocal, fromLocal, hosts * c, call.type()), deadline, "allToAll in the host");
        MemorySegment staged = scratch.host(1, block * perHost);
        toHost(fromLocal, 0, staged);
        // toHost: block h holds, per local rank i, what (this host, i) sends to (h, this local index)
        long railBlock = bytes * perHost;
        MemorySegment toHost = scratch.host(2, railBlock * hosts);
        for (int h = 0; h < hosts; h++) {
            for (int i = 0; i < perHost; i++) {
                MemorySegment.copy(staged, i * block + h * bytes, toHost, h * railBlock + i * bytes, bytes);
            }
        }
        MemorySegment fromHost = scratch.host(3, railBlock * hosts);
        MemorySegment.copy(toHost, host * railBlock, fromHost, host * railBlock, railBlock);
        railExchange(railBlock, p -> toHost.asSlice(p * railBlock, railBlock),
                p -> fromHost.asSlice(p * railBlock, railBlock), -1, deadline);
        placeByRank(fromHost, bytes, Objects.requireNonNull(call.recv()));
    }

    /** One step between hosts on this rank's rail: {@link HostRail#exchange}. */
    private void railExchange(long bytes, IntFunction<MemorySegment> out, IntFunction<MemorySegment> in, int from,
                              long deadline) {
        railExchange(bytes, out, in, from, null, deadline);
    }

    /** {@link #railExchange(long, IntFunction, IntFunction, int, long)}, telling {@code arrival} of each chunk that came. */
    private void railExchange(long bytes, IntFunction<MemorySegment> out, IntFunction<MemorySegment> in, int from,
                              HostRail.@Nullable Arrival arrival, long deadline) {
        settleAgreement(deadline);
        rail.exchange(bytes, out, in, from, deadline, arrival, phases);
    }

    /**
     * The sends and receives of a batch, progressing together: those within this host as one group
     * of the host's communicator, those to or from each rank of another host over the link of that
     * direction ({@link #link}), each direction's on a virtual thread of its own, in call order (the
     * i-th send meets the i-th receive).
     */
    private void runPointToPoint(List<Planned> calls, long deadline) {
        List<Planned> inHost = new ArrayList<>();
        Map<Integer, List<Planned>> across = new LinkedHashMap<>();
        for (Planned p : calls) {
            int peer = p.call().peer();
            if (hostOf[peer] == host) {
                inHost.add(p);
            } else {
                across.computeIfAbsent(linkKey(peer, p.call().kind() == CollectiveKind.SEND), k -> new ArrayList<>())
                        .add(p);
            }
        }
        List<Mono<Void>> steps = new ArrayList<>();
        across.values().forEach(inOrder -> steps.add(Mono.<Void>fromRunnable(() -> {
            for (Planned p : inOrder) {
                if (p.call().kind() == CollectiveKind.SEND) {
                    sendAcross(p, deadline);
                } else {
                    recvAcross(p, deadline);
                }
            }
        }).subscribeOn(Waiting.VIRTUAL)));
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

    /** The key of the link to {@code peer} ({@code sending}) or from it: peer, or -1 - peer. */
    private static int linkKey(int peer, boolean sending) {
        return sending ? peer : -1 - peer;
    }

    /**
     * The link of one direction between this rank and {@code peer} (on another host): a
     * {@link HostRail} of the two, sender first, over the rails' transport, made on first use; both
     * ranks make it at their first transfer that way. Its view of the bootstrap has tags of its own
     * ({@link SubsetBootstrap#LINK_TAG_FLIP}, with one more bit for links from the higher rank), so
     * the two directions of a pair set up side by side.
     */
    private Link link(int peer, boolean sending, long deadline) {
        int key = linkKey(peer, sending);
        Link l = links.get(key);
        if (l == null) {
            int from = sending ? rank : peer;
            int to = sending ? peer : rank;
            int flip = SubsetBootstrap.LINK_TAG_FLIP ^ (from < to ? 0 : SubsetBootstrap.LINK_DOWN_BIT);
            l = new Link(HostRail.open(new SubsetBootstrap(bootstrap, new int[] {from, to}, 1, flip),
                    railBackend == null ? backend : railBackend, railTransport, left(deadline), this::stopping));
            links.put(key, l);
        }
        return l;
    }

    /**
     * A link and, for messages in memory the host cannot reach, its staging area in the backend's
     * host-visible (pinned) memory, grown to the largest message; confined to the link's
     * direction's thread of each batch.
     */
    private final class Link implements AutoCloseable {
        final HostRail rail;
        /** The staging area, as {@link Scratch#grown} keeps it: one slot. */
        private final @Nullable DeviceBuffer[] staging = new DeviceBuffer[1];

        Link(HostRail rail) {
            this.rail = rail;
        }

        MemorySegment staging(long bytes) {
            return Scratch.grown(staging, 0, bytes, backend::allocateHostVisible).hostSegment().asSlice(0, bytes);
        }

        @Override
        public void close() {
            Closeables.closeAll(staging[0] == null ? List.of(rail) : List.of(rail, staging[0]));
        }
    }

    /** The links this rank has: the peer for one to it, -1 - the peer for one from it (for tests). */
    Set<Integer> links() {
        return Set.copyOf(links.keySet());
    }

    /**
     * The options of the communicator inside the host: these, less the algorithm choices that name
     * this engine's own algorithms ({@code hier}, {@code flat}), which the engine inside the host has not.
     */
    static CollectiveOptions insideHost(CollectiveOptions options) {
        Map<CollectiveKind, String> kept = new EnumMap<>(CollectiveKind.class);
        options.algorithms().forEach((kind, name) -> {
            if (ALGORITHMS.stream().noneMatch(a -> a.kind() == kind && a.name().equals(name))) {
                kept.put(kind, name);
            }
        });
        return kept.size() == options.algorithms().size() ? options : options.withAlgorithms(kept);
    }

    /** Whether {@code d} is the descriptor of a flat call. */
    private static boolean isFlat(CallDescriptor d) {
        return ALGORITHMS.stream().anyMatch(a -> a.id() == d.algorithm() && a.name().equals(FLAT));
    }

    /** Answers a sender ({@code peer}) that its send fails, and why. */
    private void answer(int peer, byte code, String why, long deadline) {
        byte[] text = why.getBytes(StandardCharsets.UTF_8);
        byte[] answer = new byte[1 + text.length];
        answer[0] = code;
        System.arraycopy(text, 0, answer, 1, text.length);
        await(bootstrap.send(peer, tag(P2P_ANSWER_TAGS), answer, left(deadline)), deadline, "answer");
    }

    /**
     * After this rank's send or receive {@code p} crossed a collective: tells the ranks in it. Its
     * descriptor goes, in place of its collective one, on its stream to every rank but
     * {@code told} (a receiver that has it already), and, where this host has other ranks and the
     * collective is a hierarchical one (not {@code flat}, whose ranks wait on the streams only), a
     * send of one byte to one of them makes this host's engine find the crossing there too, so that
     * the ranks waiting for this one inside the host fail at once rather than at the deadline.
     * Neither is waited for: the ranks it reaches may be anywhere by now; the send gives up after
     * {@link #TELL_HOST_TIMEOUT}.
     */
    private void tellCrossed(Planned p, int told, boolean flat, long deadline) {
        byte[] mine = descriptorMessage(p.descriptor());
        for (int q = 0; q < size; q++) {
            if (q != rank && q != told) {
                bootstrap.send(q, tag(CALL_TAGS), mine, left(deadline)).subscribe(null, e -> { });
            }
        }
        if (perHost > 1 && !flat) {
            DeviceBuffer one = backend.allocate(1);
            hostComm.with(CallOptions.timeout(TELL_HOST_TIMEOUT)).send(one, 1, DataType.INT8, local == 0 ? 1 : 0)
                    .doFinally(s -> one.close()).subscribe(null, e -> { });
        }
    }

    /**
     * The descriptor over the bootstrap, the receiver's answer (empty when it matches), then the
     * data over the link with the peer. Blocks; runs on a virtual thread.
     */
    private void sendAcross(Planned p, long deadline) {
        CollectiveCall c = p.call();
        int peer = c.peer();
        byte[] answer = await(bootstrap.send(peer, tag(CALL_TAGS), descriptorMessage(p.descriptor()), left(deadline))
                .then(Mono.defer(() -> bootstrap.recv(peer, tag(P2P_ANSWER_TAGS), left(deadline)))), deadline, "send");
        if (answer.length > 0) {
            if (answer[0] == ANSWER_CROSSED || answer[0] == ANSWER_CROSSED_FLAT) {
                tellCrossed(p, peer, answer[0] == ANSWER_CROSSED_FLAT, deadline);
            }
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, new String(answer, 1, answer.length - 1,
                    StandardCharsets.UTF_8)).rank(rank).peer(peer).tag(options.tag()).phase("send").build();
        }
        long bytes = c.count() * c.type().bytes();
        if (bytes == 0) {
            return;
        }
        Link l = link(peer, true, deadline);
        DeviceBuffer src = Objects.requireNonNull(c.send());
        MemorySegment out = src.hostAccessible() ? src.hostSegment() : l.staging(bytes);
        if (!src.hostAccessible()) {
            toHost(src, 0, out);
        }
        l.rail.exchange(bytes, q -> out, q -> MemorySegment.NULL, 0, deadline, null, null);
    }

    /** The receiving side of {@link #sendAcross}: checks the descriptor, answers, takes the data. */
    private void recvAcross(Planned p, long deadline) {
        CollectiveCall c = p.call();
        int peer = c.peer();
        CallDescriptor theirs = descriptorOf(await(bootstrap.recv(peer, tag(CALL_TAGS), left(deadline)), deadline,
                "recv"), 0);
        if (theirs.kind() != CollectiveKind.SEND) {
            // the peer is in a collective (or told every rank that its own send or receive crossed one)
            tellCrossed(p, -1, isFlat(theirs), deadline);
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, CallDescriptor.crossedCalls(peer,
                    theirs.describe(this::algorithmName), p.descriptor().describe(this::algorithmName))).rank(rank)
                    .peer(peer).tag(options.tag()).phase("recv").build();
        }
        String why = CallDescriptor.pointToPointMismatch(peer, theirs, rank, p.descriptor(), this::algorithmName)
                .orElse(null);
        if (why == null) {
            await(bootstrap.send(peer, tag(P2P_ANSWER_TAGS), new byte[0], left(deadline)), deadline, "recv");
        } else {
            answer(peer, ANSWER_MISMATCH, why, deadline);
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, why).rank(rank).peer(peer).tag(options.tag())
                    .phase("recv").build();
        }
        long bytes = c.count() * c.type().bytes();
        if (bytes == 0) {
            return;
        }
        Link l = link(peer, false, deadline);
        DeviceBuffer dst = Objects.requireNonNull(c.recv());
        MemorySegment in = dst.hostAccessible() ? dst.hostSegment() : l.staging(bytes);
        l.rail.exchange(bytes, q -> MemorySegment.NULL, q -> in, 0, deadline, null, null);
        if (!dst.hostAccessible()) {
            fromHost(in, dst, 0);
        }
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

    /** Copies {@code dst.byteSize()} bytes of {@code src} from {@code offset} to the host segment {@code dst}. */
    private void toHost(DeviceBuffer src, long offset, MemorySegment dst) {
        if (src.hostAccessible()) {
            MemorySegment.copy(src.hostSegment(), offset, dst, 0, dst.byteSize());
        } else {
            timed("to host", () -> backend.copyToHost(dst, src, offset));
        }
    }

    /** Copies the host segment {@code src} into {@code dst} at {@code offset}. */
    private void fromHost(MemorySegment src, DeviceBuffer dst, long offset) {
        if (dst.hostAccessible()) {
            MemorySegment.copy(src, 0, dst.hostSegment(), offset, src.byteSize());
        } else {
            timed("from host", () -> backend.copyFromHost(dst, offset, src));
        }
    }

    /** Copies {@code bytes} between two buffers of the backend (or wrapped host memory). */
    private void copy(DeviceBuffer src, long srcOffset, DeviceBuffer dst, long dstOffset, long bytes) {
        if (bytes == 0) {
            return;
        }
        if (src.hostAccessible() && dst.hostAccessible()) {
            MemorySegment.copy(src.hostSegment(), srcOffset, dst.hostSegment(), dstOffset, bytes);
        } else {
            timed("device copies", () -> backend.copy(dst, dstOffset, src, srcOffset, bytes));
        }
    }

    private static Duration left(long deadline) {
        return Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
    }

    /**
     * {@link #await} of a step of the host's communicator, whose errors name this rank by its place
     * in the host: they are rethrown naming its rank in the job.
     */
    private <T> T inHost(Mono<T> step, long deadline, String what) {
        try {
            return await(step, deadline, what);
        } catch (JmscclppException e) {
            throw inJob(e);
        }
    }

    /**
     * An error of the host's communicator, whose ranks are numbered within the host, as the job's: this rank's
     * rank and the peer's rank in the job, and the detail saying which job rank the host-local number it names is.
     */
    private JmscclppException inJob(JmscclppException e) {
        int[] members = ranksOf[host];
        int p = e.peer();
        if (p < 0 || p >= members.length || members[p] == p) {
            return e.rank() == rank ? e : e.withRank(rank);
        }
        return JmscclppException.builder(e.code(), e.detail() + " (rank " + p + " of this host's communicator is rank "
                        + members[p] + " of the job)").rank(rank).peer(members[p]).tag(e.tag()).phase(e.phase())
                .cause(e.getCause()).build();
    }

    private <T> T await(Mono<T> step, long deadline, String what) {
        long start = phases == null ? 0 : System.nanoTime();
        try {
            Mono<T> closed = released.asMono().then(Mono.error(() -> Objects.requireNonNull(stopping())));
            return Mono.firstWithSignal(step, closed).timeout(left(deadline).plusSeconds(5)).block();
        } catch (RuntimeException e) {
            Throwable cause = e instanceof JmscclppException ? e : e.getCause();
            if (cause instanceof JmscclppException je) {
                throw je;
            }
            // this wait's own bound (the step's own deadline passed without a word: a peer that froze, or
            // this rank frozen past it) is a timeout; anything else is not, and says what it was
            if (cause instanceof java.util.concurrent.TimeoutException) {
                throw JmscclppException.builder(ErrorCode.TIMEOUT, what + " did not end by the call's deadline")
                        .rank(rank).phase("collective").cause(e).build();
            }
            throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, what + " failed: " + (cause != null ? cause : e))
                    .rank(rank).phase("collective").cause(e).build();
        } finally {
            if (phases != null) {
                phases.merge(what, System.nanoTime() - start, Long::sum);
            }
        }
    }

    /** Runs {@code step}, adding its time to {@code phase}'s when tracing. */
    private void timed(String phase, Runnable step) {
        timed(phase, () -> {
            step.run();
            return null;
        });
    }

    /** Runs {@code step} and returns what it gives, adding its time to {@code phase}'s when tracing. */
    private <T> T timed(String phase, Supplier<T> step) {
        if (phases == null) {
            return step.get();
        }
        long start = System.nanoTime();
        try {
            return step.get();
        } finally {
            phases.merge(phase, System.nanoTime() - start, Long::sum);
        }
    }

    /** The TRACE line of one collective call: its time and each step's, in microseconds. */
    private void logPhases(CollectiveCall call, long nanos) {
        Map<String, Long> p = Objects.requireNonNull(phases);
        StringBuilder b = new StringBuilder("rank ").append(rank).append(' ').append(call.kind().label()).append(' ')
                .append(call.countBytes()).append(" B: ").append(nanos / 1000).append(" us");
        p.forEach((k, v) -> b.append(", ").append(k).append(' ').append(v / 1000));
        p.clear();
        LOG.log(System.Logger.Level.TRACE, b.toString());
    }

    /**
     * Scratch of the calls, grown as needed and reused (the worker thread only): host segments
     * (pinned memory of a device backend), and memory of the backend for the steps inside a host
     * (on host memory, views of host segments).
     */
    private static final class Scratch implements AutoCloseable {
        private static final int HOST_SLOTS = 6;
        private static final int DEVICE_SLOTS = 6;
        private final @Nullable Backend backend;
        private final Arena[] arenas = new Arena[HOST_SLOTS + DEVICE_SLOTS];
        private final MemorySegment[] segments = new MemorySegment[HOST_SLOTS + DEVICE_SLOTS];
        private final @Nullable DeviceBuffer[] buffers = new DeviceBuffer[DEVICE_SLOTS];
        private final @Nullable DeviceBuffer[] pinned = new DeviceBuffer[HOST_SLOTS];

        /** @param backend where the device slots are allocated; null for views of host segments */
        Scratch(@Nullable Backend backend) {
            this.backend = backend;
        }

        /** Host memory: pinned memory of the backend where it has device memory (its copies are faster), else plain. */
        MemorySegment host(int slot, long bytes) {
            if (backend != null) {
                return grown(pinned, slot, bytes, backend::allocateHostVisible).hostSegment().asSlice(0, bytes);
            }
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

        DeviceBuffer device(int slot, long bytes) {
            if (backend == null) {
                return DeviceBuffer.wrap(host(HOST_SLOTS + slot, bytes));
            }
            return grown(buffers, slot, bytes, backend::allocate).slice(0, bytes);
        }

        /** {@code held[slot]}, replaced by a new one of the next power of two (4 KiB at least) when smaller than {@code bytes}. */
        private static DeviceBuffer grown(@Nullable DeviceBuffer[] held, int slot, long bytes,
                                          LongFunction<DeviceBuffer> allocate) {
            DeviceBuffer b = held[slot];
            if (b == null || b.size() < bytes) {
                if (b != null) {
                    held[slot] = null;
                    b.close();
                }
                b = allocate.apply(Math.max(Long.highestOneBit(Math.max(bytes, 4096) - 1) << 1, 4096));
                held[slot] = b;
            }
            return b;
        }

        @Override
        public synchronized void close() {
            for (Arena a : arenas) {
                if (a != null) {
                    a.close();
                }
            }
            for (DeviceBuffer[] held : List.of(buffers, pinned)) {
                for (DeviceBuffer b : held) {
                    if (b != null) {
                        b.close();
                    }
                }
            }
        }
    }
}
