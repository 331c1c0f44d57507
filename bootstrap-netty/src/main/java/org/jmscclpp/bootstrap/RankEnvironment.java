package org.jmscclpp.bootstrap;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.UniqueId;
import org.jmscclpp.core.spi.LauncherStore;
import org.jmscclpp.core.spi.LauncherStores;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Who this process is in a job — its rank, the number of ranks, its rank among the ranks of its host — and how
 * the ranks find each other ({@link Rendezvous}), read from what the launcher that started it set.
 *
 * <p>A process started by any launcher joins its job with one call:
 * <pre>{@code
 * TcpBootstrap bs = RankEnvironment.detect().bootstrap().block();   // or compose the Mono
 * }</pre>
 *
 * <p>{@link #from(Map)} understands these launchers (the first whose rank variable is set wins):
 * <ol>
 *   <li>jmscclpp ({@code jmscclpp run}): {@code JMSCCLPP_RANK}, {@code JMSCCLPP_WORLD_SIZE},
 *       {@code MSCCLPP_COMM_ID}, optionally {@code JMSCCLPP_LOCAL_RANK};</li>
 *   <li>Open MPI ({@code mpirun}): {@code OMPI_COMM_WORLD_RANK}, {@code OMPI_COMM_WORLD_SIZE},
 *       {@code OMPI_COMM_WORLD_LOCAL_RANK}; the ranks agree on the unique id through the PMIx server that
 *       {@code mpirun} runs for them ({@code PMIX_RANK}, {@code PMIX_NAMESPACE}; needs jmscclpp-native-bridge and
 *       {@code libpmix.so.2});</li>
 *   <li>torchrun: {@code RANK}, {@code WORLD_SIZE}, {@code LOCAL_RANK}, {@code MASTER_ADDR}, {@code MASTER_PORT};
 *       under torchrun's agent ({@code TORCHELASTIC_USE_AGENT_STORE=True}) the ranks agree on the unique id
 *       through torchrun's own c10d TCPStore at {@code MASTER_ADDR:MASTER_PORT}, never binding that port; without
 *       the agent (the variables set by hand, nobody listening there) rank 0 hosts the root at that address;</li>
 *   <li>Slurm ({@code srun}): {@code SLURM_PROCID}, {@code SLURM_NTASKS}, {@code SLURM_LOCALID}; with
 *       {@code srun --mpi=pmix} through PMIx as for Open MPI, else rank 0 hosts the root on the first node of
 *       {@code SLURM_STEP_NODELIST} at a port derived from the job and step ids ({@link #slurmPort}).</li>
 * </ol>
 * {@code MSCCLPP_COMM_ID=ip:port}, when set, overrides the launcher's rendezvous: rank 0 hosts the root there.
 * Where no local rank is given it equals the rank, which is right for single-host jobs.
 * Where rank 0 hosts the root at an explicit address (MSCCLPP_COMM_ID, Slurm without PMIx,
 * torchrun's variables set by hand), every rank also needs the same {@code MSCCLPP_BOOTSTRAP_SECRET}
 * (which {@code jmscclpp run} sets; with mpirun: {@code -x MSCCLPP_BOOTSTRAP_SECRET}), or
 * {@code MSCCLPP_BOOTSTRAP_INSECURE=1}: see {@link TcpBootstrap#initialize(String)}. The store
 * rendezvous carry a unique id with its own random secret.
 *
 * <p>Where two of jmscclpp's, Open MPI's and torchrun's variables are set (a launcher started under another),
 * their ranks and sizes must agree: {@code WORLD_SIZE=2} beside {@code OMPI_COMM_WORLD_SIZE=4} is
 * {@link ErrorCode#INVALID_USAGE} naming both. Slurm's are not compared: {@code mpirun} and {@code torchrun}
 * run inside Slurm allocations, and their ranks inherit the Slurm task id of the daemon that started them.
 *
 * @param rank       this process's rank, in [0, worldSize)
 * @param worldSize  number of ranks in the job, at least 1
 * @param localRank  this process's rank among the ranks of its host, at least 0
 * @param rendezvous how the ranks agree on the job's root
 */
public record RankEnvironment(int rank, int worldSize, int localRank, Rendezvous rendezvous) {

    /** Variable holding the root address in every convention (the name MSCCL++ uses). */
    public static final String COMM_ID = "MSCCLPP_COMM_ID";

    /** Set by {@code jmscclpp run}: this process's rank. */
    public static final String JMSCCLPP_RANK = "JMSCCLPP_RANK";

    /** Set by {@code jmscclpp run}: the number of ranks. */
    public static final String JMSCCLPP_WORLD_SIZE = "JMSCCLPP_WORLD_SIZE";

    /** Set by {@code jmscclpp run}: the rank on this host. */
    public static final String JMSCCLPP_LOCAL_RANK = "JMSCCLPP_LOCAL_RANK";

    /** The key under which rank 0 publishes the unique id in a launcher's store. */
    static final String STORE_KEY = "jmscclpp/unique_id";

    /**
     * Bootstraps each rank of this process has made through a torchrun store key: the n-th one uses the key
     * suffixed with {@code /n}, so that it never reads the id an earlier bootstrap left under the key.
     */
    private static final Map<String, AtomicLong> TORCH_STORE_JOINS = new ConcurrentHashMap<>();

    private static final String PHASE = "rank environment";
    private static final String HOW_TO = "start the ranks with 'jmscclpp run -n N SAMPLE', mpirun, torchrun or "
            + "srun, or set JMSCCLPP_RANK, JMSCCLPP_WORLD_SIZE, MSCCLPP_COMM_ID=ip:port and MSCCLPP_BOOTSTRAP_SECRET";

    /** One launcher's names for rank, size and local rank. */
    private record Convention(String name, String rankVar, String sizeVar, String localVar) {
    }

    private static final Convention JMSCCLPP = new Convention("jmscclpp", JMSCCLPP_RANK, JMSCCLPP_WORLD_SIZE,
            JMSCCLPP_LOCAL_RANK);
    private static final Convention OPEN_MPI = new Convention("Open MPI", "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK");
    private static final Convention TORCHRUN = new Convention("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK");
    private static final Convention SLURM = new Convention("Slurm", "SLURM_PROCID", "SLURM_NTASKS",
            "SLURM_LOCALID");
    /** Compared with each other where several are set; Slurm is not (see the class comment). */
    private static final List<Convention> COMPARED = List.of(JMSCCLPP, OPEN_MPI, TORCHRUN);

    /**
     * The rank, size and local-rank variables of the launchers other than jmscclpp's whose ranks are compared with
     * its own: a process that starts ranks of its own (jmscclpp run) leaves them out of their environment, where
     * an outer mpirun's or torchrun's would contradict the ranks it gives them.
     */
    public static List<String> otherLaunchersRankVariables() {
        return COMPARED.stream().filter(c -> c != JMSCCLPP)
                .flatMap(c -> Stream.of(c.rankVar(), c.sizeVar(), c.localVar())).toList();
    }

    /** How the ranks of a job agree on its root. */
    public sealed interface Rendezvous {

        /** One line for messages: who hosts the root, or which store carries the unique id. */
        String describe();

        /** Rank 0 hosts the root at {@code address} ({@code ip:port}, {@code if:ip:port}, {@code [v6]:port}, {@code host:port}). */
        record RootAddress(String address) implements Rendezvous {

            /** Checks the address's form; a bad one is {@link ErrorCode#INVALID_USAGE}. */
            public RootAddress {
                checkAddress(address);
            }

            @Override
            public String describe() {
                return "rank 0 hosts the root at " + address;
            }
        }

        /**
         * Rank 0 creates the unique id and sets it under {@code key/n} in torchrun's c10d TCPStore at
         * {@code host:port}; the other ranks wait for that key there. {@code n} counts the bootstraps this rank made
         * through {@code key} before (0 for the first), so every rank must make them in the same order.
         */
        record TorchStore(String host, int port, String key) implements Rendezvous {

            /** Checks the values; a blank host or key, or a port outside [1, 65535], is {@link ErrorCode#INVALID_USAGE}. */
            public TorchStore {
                if (host == null || host.isBlank() || port < 1 || port > 65535 || key == null || key.isBlank()) {
                    throw invalid("torchrun's store needs a host, a port in [1, 65535] and a key, got host '" + host
                            + "', port " + port + ", key '" + key + "'");
                }
            }

            @Override
            public String describe() {
                return "the unique id goes through torchrun's TCPStore at " + host + ":" + port + " (key " + key + ")";
            }
        }

        /** Rank 0 creates the unique id and shares it through the launcher's store {@code store} (PMIx) under {@code key}. */
        record LauncherKeyValue(String store, String key) implements Rendezvous {

            /** Checks the values; a blank store name or key is {@link ErrorCode#INVALID_USAGE}. */
            public LauncherKeyValue {
                if (store == null || store.isBlank() || key == null || key.isBlank()) {
                    throw invalid("the launcher's store needs a name and a key, got store '" + store + "', key '"
                            + key + "'");
                }
            }

            @Override
            public String describe() {
                return "the unique id goes through the launcher's " + store + " store (key " + key + ")";
            }
        }
    }

    /** Checks the values; anything out of range is {@link ErrorCode#INVALID_USAGE}. */
    public RankEnvironment {
        if (worldSize < 1) {
            throw invalid("the world size must be at least 1, got " + worldSize);
        }
        if (rank < 0 || rank >= worldSize) {
            throw invalid("the rank must be in [0, " + worldSize + "), got " + rank);
        }
        if (localRank < 0) {
            throw invalid("the local rank must be at least 0, got " + localRank);
        }
        if (rendezvous == null) {
            throw invalid("the rendezvous is null");
        }
    }

    /** A rank whose job's root rank 0 hosts at {@code rootAddress}. */
    public RankEnvironment(int rank, int worldSize, String rootAddress, int localRank) {
        this(rank, worldSize, localRank, new Rendezvous.RootAddress(rootAddress));
    }

    /** Reads the process environment; see {@link #from(Map)}. */
    public static RankEnvironment fromEnvironment() {
        return from(System.getenv());
    }

    /** The same as {@link #fromEnvironment()}: who this process is, from its launcher's variables. */
    public static RankEnvironment detect() {
        return fromEnvironment();
    }

    /** Where rank 0 hosts the root, when the job has an explicit address; empty when a store carries the id. */
    public Optional<String> rootAddress() {
        return rendezvous instanceof Rendezvous.RootAddress(String address) ? Optional.of(address) : Optional.empty();
    }

    /**
     * Reads the rank identity from {@code env} (normally {@link System#getenv()}).
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} naming the variables to set when no launcher's
     *                           variables are complete, when a value is not a number or out of range, or when two
     *                           launchers' variables contradict each other (naming both)
     */
    public static RankEnvironment from(Map<String, String> env) {
        checkAgreement(env);
        @Nullable String commId = present(env, COMM_ID) ? value(env, COMM_ID) : null;
        if (present(env, JMSCCLPP_RANK) || present(env, JMSCCLPP_WORLD_SIZE)) {
            requireAll(env, JMSCCLPP.name(), JMSCCLPP_RANK, JMSCCLPP_WORLD_SIZE, COMM_ID);
            return build(env, JMSCCLPP, new Rendezvous.RootAddress(value(env, COMM_ID)));
        }
        if (present(env, OPEN_MPI.rankVar())) {
            requireAll(env, OPEN_MPI.name(), OPEN_MPI.rankVar(), OPEN_MPI.sizeVar());
            if (commId != null) {
                return build(env, OPEN_MPI, new Rendezvous.RootAddress(commId));
            }
            if (pmix(env)) {
                return build(env, OPEN_MPI, new Rendezvous.LauncherKeyValue("PMIx", STORE_KEY));
            }
            throw invalid("the Open MPI launch convention is incomplete: no PMIx server (PMIX_RANK, PMIX_NAMESPACE) "
                    + "and MSCCLPP_COMM_ID is not set; start with an mpirun that runs PMIx (Open MPI 4 and later) or "
                    + "pass -x MSCCLPP_COMM_ID=ip:port");
        }
        if (present(env, TORCHRUN.rankVar()) || present(env, TORCHRUN.sizeVar())) {
            if (commId != null) {
                requireAll(env, TORCHRUN.name(), TORCHRUN.rankVar(), TORCHRUN.sizeVar());
                return build(env, TORCHRUN, new Rendezvous.RootAddress(commId));
            }
            requireAll(env, TORCHRUN.name(), "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT");
            String host = value(env, "MASTER_ADDR");
            int port = number(env, "MASTER_PORT");
            if (port < 1 || port > 65535) {
                throw invalid("MASTER_PORT must be in [1, 65535], got " + port);
            }
            if ("true".equalsIgnoreCase(value(env, "TORCHELASTIC_USE_AGENT_STORE"))) {
                String key = STORE_KEY + "/" + orDefault(env, "TORCHELASTIC_RUN_ID", "none") + "/"
                        + orDefault(env, "TORCHELASTIC_RESTART_COUNT", "0");
                return build(env, TORCHRUN, new Rendezvous.TorchStore(host, port, key));
            }
            // a bare IPv6 literal needs brackets before a port can follow it
            String root = host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
            return build(env, TORCHRUN, new Rendezvous.RootAddress(root + ":" + port));
        }
        if (present(env, SLURM.rankVar())) {
            requireAll(env, SLURM.name(), SLURM.rankVar(), SLURM.sizeVar());
            if (commId != null) {
                return build(env, SLURM, new Rendezvous.RootAddress(commId));
            }
            if (pmix(env)) {
                return build(env, SLURM, new Rendezvous.LauncherKeyValue("PMIx", STORE_KEY));
            }
            String nodes = present(env, "SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
            requireAll(env, SLURM.name(), nodes, "SLURM_JOB_ID");
            String host = firstHost(value(env, nodes));
            int port = slurmPort(slurmId(env, "SLURM_JOB_ID"),
                    present(env, "SLURM_STEP_ID") ? slurmId(env, "SLURM_STEP_ID") : 0);
            return build(env, SLURM, new Rendezvous.RootAddress(host + ":" + port));
        }
        throw invalid("no rank identity in the environment: " + HOW_TO);
    }

    /**
     * The port on which rank 0 of a Slurm step hosts the root when neither PMIx nor {@code MSCCLPP_COMM_ID}
     * is there: in [29600, 39600), a function of the job and step ids, so every task computes the same one and
     * two steps of a job differ. Set {@code MSCCLPP_COMM_ID} where that range is not free.
     */
    static int slurmPort(long jobId, long stepId) {
        return 29_600 + (int) Math.floorMod(jobId * 7919L + stepId, 10_000L);
    }

    /**
     * The first host of a Slurm host list: {@code node[03-05,9],gpu1} gives {@code node03}, and a name with several
     * ranges takes the first of each ({@code rack[1-2]-n[01-04]} gives {@code rack1-n01}, as
     * {@code scontrol show hostnames} lists it first).
     */
    static String firstHost(String hostList) {
        String list = hostList.strip();
        int depth = 0;
        int end = list.length();
        for (int i = 0; i < list.length(); i++) {
            char c = list.charAt(i);
            if (c == '[') {
                depth++;
            } else if (c == ']') {
                depth--;
            } else if (c == ',' && depth == 0) {
                end = i;
                break;
            }
        }
        String first = list.substring(0, end);
        if (first.isEmpty()) {
            throw invalid("the Slurm node list is empty: '" + hostList + "'");
        }
        StringBuilder host = new StringBuilder();
        int from = 0;
        for (int open = first.indexOf('['); open >= 0; open = first.indexOf('[', from)) {
            int close = first.indexOf(']', open);
            if (close < 0) {
                throw invalid("the Slurm node list '" + hostList + "' has an unclosed '['");
            }
            String range = first.substring(open + 1, close).split(",", 2)[0];
            String start = range.split("-", 2)[0];
            if (start.isEmpty() || !start.chars().allMatch(Character::isDigit)) {
                throw invalid("the Slurm node list '" + hostList + "' has a range that does not start with a number");
            }
            host.append(first, from, open).append(start);
            from = close + 1;
        }
        return host.append(first, from, first.length()).toString();
    }

    /**
     * Joins the job: agrees on the root as {@link #rendezvous()} says, then initializes {@code bootstrap} (created
     * for this rank and world size). The rendezvous gets the bootstrap's init timeout, and so does the
     * initialization after it. Rank 0 of a store rendezvous starts the root ({@link TcpBootstrap#createUniqueId()}),
     * publishes the id and initializes; the others wait for the id in the store.
     *
     * @return the bootstrap once its ring is connected; errors as {@link TcpBootstrap#initialize(UniqueId)}, and
     *         TIMEOUT / REMOTE_ERROR naming the store and its address when the rendezvous fails
     */
    public Mono<TcpBootstrap> join(TcpBootstrap bootstrap) {
        return Mono.defer(() -> {
            if (bootstrap.rank() != rank || bootstrap.size() != worldSize) {
                throw invalid("the bootstrap is rank " + bootstrap.rank() + " of " + bootstrap.size()
                        + " but this environment is rank " + rank + " of " + worldSize);
            }
            return switch (rendezvous) {
                case Rendezvous.RootAddress(String address) -> bootstrap.initialize(address);
                case Rendezvous.TorchStore store -> onThread(true, bootstrap.scheduler(), () -> viaTorchStore(store, bootstrap))
                        .flatMap(bootstrap::initialize);
                // the store bounds its own waits (PMIX_TIMEOUT); this bounds a server that ignores that
                case Rendezvous.LauncherKeyValue store -> onThread(false, bootstrap.scheduler(), () -> viaLauncher(store, bootstrap))
                        .timeout(bootstrap.initTimeout().plusSeconds(5), Mono.error(() -> JmscclppException.builder(
                                ErrorCode.TIMEOUT, "the launcher's " + store.store() + " store did not answer within "
                                        + bootstrap.initTimeout().plusSeconds(5)).rank(rank).phase(PHASE).build()))
                        .flatMap(bootstrap::initialize);
            };
        });
    }

    /**
     * Creates this rank's bootstrap with {@code options} and {@link #join joins} the job; on error or cancellation
     * the bootstrap is closed.
     */
    public Mono<TcpBootstrap> bootstrap(BootstrapOptions options) {
        return Mono.defer(() -> {
            TcpBootstrap bs = TcpBootstrap.create(rank, worldSize, options);
            return join(bs).doOnError(e -> bs.close()).doOnCancel(bs::close);
        });
    }

    /** {@link #bootstrap(BootstrapOptions)} with the options from the environment. */
    public Mono<TcpBootstrap> bootstrap() {
        return Mono.defer(() -> bootstrap(BootstrapOptions.fromEnvironment()));
    }

    private UniqueId viaTorchStore(Rendezvous.TorchStore store, TcpBootstrap bs) {
        long deadline = System.nanoTime() + bs.initTimeout().toNanos();
        // the store keeps a key for the whole run: a second bootstrap under the same key would find the first
        // one's id (its root long gone) there before rank 0 set the new one
        String key = store.key() + "/" + TORCH_STORE_JOINS.computeIfAbsent(store.host() + ":" + store.port() + "/"
                + store.key() + "#" + rank, k -> new AtomicLong()).getAndIncrement();
        try (TorchStoreClient client = TorchStoreClient.connect(store.host(), store.port(), deadline, rank)) {
            if (rank == 0) {
                UniqueId id = bs.createUniqueId();
                client.set(key, id.toBytes());
                return id;
            }
            return uniqueId(client.waitAndGet(key), "torchrun's TCPStore at " + client.address());
        }
    }

    private UniqueId viaLauncher(Rendezvous.LauncherKeyValue store, TcpBootstrap bs) {
        LauncherStore.Provider provider = LauncherStores.named(store.store()).orElseThrow(() ->
                JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "the launcher runs a " + store.store()
                        + " server, but no " + store.store() + " binding is on the class path: add "
                        + "jmscclpp-native-bridge, or set MSCCLPP_COMM_ID=ip:port").rank(rank).phase(PHASE).build());
        Optional<LauncherStore> opened = provider.open(System.getenv(), rank);
        if (opened.isEmpty()) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "this process has no " + store.store()
                    + " server to join; set MSCCLPP_COMM_ID=ip:port").rank(rank).phase(PHASE).build();
        }
        try (LauncherStore kv = opened.get()) {
            if (rank == 0) {
                UniqueId id = bs.createUniqueId();
                kv.shareFromRankZero(store.key(), id.toBytes(), bs.initTimeout());
                return id;
            }
            return uniqueId(kv.shareFromRankZero(store.key(), null, bs.initTimeout()), "the " + kv.name() + " store");
        }
    }

    private UniqueId uniqueId(byte[] bytes, String where) {
        if (bytes.length != UniqueId.BYTES) {
            throw JmscclppException.builder(ErrorCode.REMOTE_ERROR, where + " holds " + bytes.length
                    + " bytes under the unique id's key, not a unique id of " + UniqueId.BYTES)
                    .rank(rank).phase(PHASE).build();
        }
        return UniqueId.fromBytes(bytes);
    }

    /**
     * Runs a blocking rendezvous on {@code supplied} (the service's scheduler, whose threads must be allowed
     * to block), else on its own thread: a virtual one for socket I/O, a platform daemon for native waits
     * (which would pin a virtual thread's carrier). Its own deadline bounds it.
     */
    private static Mono<UniqueId> onThread(boolean virtual, @Nullable Scheduler supplied,
                                           java.util.concurrent.Callable<UniqueId> work) {
        Scheduler on = supplied != null ? supplied : Schedulers.fromExecutor(virtual
                ? run -> Thread.ofVirtual().name("jmscclpp-rendezvous").start(run)
                : run -> Thread.ofPlatform().daemon().name("jmscclpp-rendezvous").start(run));
        return Mono.fromCallable(work).subscribeOn(on);
    }

    /** Two launchers' variables for rank or size that disagree are INVALID_USAGE naming both. */
    private static void checkAgreement(Map<String, String> env) {
        for (int i = 0; i < COMPARED.size(); i++) {
            for (int j = i + 1; j < COMPARED.size(); j++) {
                Convention a = COMPARED.get(i);
                Convention b = COMPARED.get(j);
                agree(env, a.rankVar(), b.rankVar());
                agree(env, a.sizeVar(), b.sizeVar());
            }
        }
    }

    private static void agree(Map<String, String> env, String a, String b) {
        if (present(env, a) && present(env, b) && !value(env, a).equals(value(env, b))) {
            throw invalid(a + "=" + value(env, a) + " contradicts " + b + "=" + value(env, b)
                    + ": two launchers' variables disagree; unset the stale ones");
        }
    }

    private static boolean pmix(Map<String, String> env) {
        return present(env, "PMIX_RANK") && present(env, "PMIX_NAMESPACE");
    }

    private static RankEnvironment build(Map<String, String> env, Convention c, Rendezvous rendezvous) {
        int size = number(env, c.sizeVar());
        int rank = number(env, c.rankVar());
        if (size < 1) {
            throw invalid(c.sizeVar() + " must be at least 1, got " + size);
        }
        if (rank < 0 || rank >= size) {
            throw invalid(c.rankVar() + "=" + rank + " is outside [0, " + c.sizeVar() + "=" + size + ")");
        }
        int local = present(env, c.localVar()) ? number(env, c.localVar()) : rank;
        if (local < 0) {
            throw invalid(c.localVar() + " must be at least 0, got " + local);
        }
        return new RankEnvironment(rank, size, local, rendezvous);
    }

    private static void checkAddress(String address) {
        int colon = address.lastIndexOf(':');
        String port = colon < 0 ? "" : address.substring(colon + 1);
        boolean ok = colon > 0 && !port.isEmpty() && port.chars().allMatch(c -> c >= '0' && c <= '9')
                && port.length() <= 5 && Integer.parseInt(port) >= 1 && Integer.parseInt(port) <= 65535;
        if (!ok) {
            throw invalid("the root address must look like ip:port, if:ip:port, [v6]:port or host:port "
                    + "with a port in [1, 65535], got '" + address + "'");
        }
    }

    private static void requireAll(Map<String, String> env, String convention, String... names) {
        List<String> missing = new ArrayList<>();
        for (String name : names) {
            if (!present(env, name)) {
                missing.add(name);
            }
        }
        if (!missing.isEmpty()) {
            throw invalid("the " + convention + " launch convention is incomplete: " + String.join(", ", missing)
                    + (missing.size() == 1 ? " is" : " are") + " not set; " + HOW_TO);
        }
    }

    private static int number(Map<String, String> env, String name) {
        String v = value(env, name);
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, name + " is not an integer: '" + v + "'")
                    .phase(PHASE).cause(e).build();
        }
    }

    /** A Slurm job or step id: an unsigned 32-bit number (a federated job's id carries its cluster in the top bits). */
    private static long slurmId(Map<String, String> env, String name) {
        String v = value(env, name);
        try {
            return Integer.toUnsignedLong(Integer.parseUnsignedInt(v));
        } catch (NumberFormatException e) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, name + " is not a Slurm id (an integer in [0, "
                    + 0xFFFF_FFFFL + "]): '" + v + "'").phase(PHASE).cause(e).build();
        }
    }

    private static boolean present(Map<String, String> env, String name) {
        @Nullable String v = env.get(name);
        return v != null && !v.isBlank();
    }

    private static String value(Map<String, String> env, String name) {
        @Nullable String v = env.get(name);
        return v == null ? "" : v.strip();
    }

    private static String orDefault(Map<String, String> env, String name, String fallback) {
        return present(env, name) ? value(env, name) : fallback;
    }

    private static JmscclppException invalid(String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase(PHASE).build();
    }
}
