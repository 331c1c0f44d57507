package org.jmscclpp.samples;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.Algorithm;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveEngine;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jspecify.annotations.Nullable;

/**
 * One rank's side of a collective sample or of {@code jmscclpp bench coll}: the collective
 * communicator ({@link CollectiveComm}, created once over the job's {@link Communicator} with the
 * algorithm asked for, else the engine's tuning table) and the bootstrap steps between runs: a
 * barrier, a seed every rank agrees on, every rank's results on every rank, and a
 * {@linkplain #checkedRun checked run}.
 *
 * <p>An algorithm name may also name a <em>wrapper</em> ({@link #wrap}): the engine's own choice
 * with the wrapper around the communicator. That is how tests put a faulty collective (one that
 * corrupts an element) under the samples and the bench, to see the checks catch it.
 */
public final class CollectiveJob implements AutoCloseable {

    private static final Map<String, UnaryOperator<CollectiveComm>> WRAPPERS = new ConcurrentHashMap<>();

    private final Communicator communicator;
    private final CollectiveComm comm;
    private final @Nullable String wrapper;
    private final Duration timeout;

    private CollectiveJob(Communicator communicator, CollectiveComm comm, @Nullable String wrapper, Duration timeout) {
        this.communicator = communicator;
        this.comm = comm;
        this.wrapper = wrapper;
        this.timeout = timeout;
    }

    /**
     * Makes {@code --algo name} run the engine's choice inside {@code wrapper}, in this process (the
     * ranks a test starts register theirs before they run). Replaces an earlier one of the name.
     */
    public static void wrap(String name, UnaryOperator<CollectiveComm> wrapper) {
        WRAPPERS.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(wrapper, "wrapper"));
    }

    /**
     * The algorithm names {@code --algo} takes for {@code kind} on the backend named {@code backend}
     * without opening it: those of its collective engine ({@link CollectiveEngine#all()}), the
     * default first, then the wrappers.
     */
    public static List<String> algorithms(String backend, CollectiveKind kind) {
        List<String> names = new ArrayList<>();
        for (CollectiveEngine e : CollectiveEngine.all()) {
            if (e.backend().equals(backend)) {
                e.algorithms().stream().filter(a -> a.kind() == kind).map(Algorithm::name).forEach(names::add);
            }
        }
        names.addAll(new TreeSet<>(WRAPPERS.keySet()));
        return names;
    }

    /**
     * Creates the collective communicator of {@code communicator} (every rank at once) for calls of
     * {@code kind}, with {@code algorithm} for them (null: the tuning table's choice, or what
     * {@value CollectiveOptions#ALGORITHM_ENV} says) and {@code timeout} as the deadline of setup and
     * of each call.
     *
     * @throws JmscclppException INVALID_USAGE for an algorithm the engine lacks (naming its
     *                           algorithms); the setup's errors
     */
    public static CollectiveJob open(Communicator communicator, CollectiveKind kind, @Nullable String algorithm,
                                     Duration timeout) {
        UnaryOperator<CollectiveComm> wrapper = algorithm == null ? null : WRAPPERS.get(algorithm);
        CollectiveOptions options = CollectiveOptions.fromEnvironment().withTimeout(timeout);
        if (algorithm != null && wrapper == null) {
            List<String> known = algorithms(communicator.backend().name(), kind);
            if (!known.contains(algorithm)) {
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no " + CollectiveRun.label(kind)
                        + " algorithm '" + algorithm + "' on the " + communicator.backend().name() + " backend (known: "
                        + known + ")").rank(communicator.rank()).phase("collective setup").build();
            }
            options = options.withAlgorithm(kind, algorithm);
            if (kind == CollectiveKind.SEND) {
                options = options.withAlgorithm(CollectiveKind.RECV, algorithm);
            }
        }
        CollectiveComm comm = Blocking.value(CollectiveComm.create(communicator, options), timeout.plusSeconds(5),
                communicator.rank(), "collective setup");
        return new CollectiveJob(communicator, wrapper == null ? comm : wrapper.apply(comm),
                wrapper == null ? null : algorithm, timeout);
    }

    /** The collective communicator (the wrapper's, when one was asked for). */
    public CollectiveComm comm() {
        return comm;
    }

    public Communicator communicator() {
        return communicator;
    }

    public Backend backend() {
        return communicator.backend();
    }

    public int rank() {
        return communicator.rank();
    }

    public int size() {
        return communicator.size();
    }

    /** The deadline of each setup step, call and bootstrap exchange. */
    public Duration timeout() {
        return timeout;
    }

    /** The algorithm {@code run} gets on {@code buffers} (the wrapper's name, when one was asked for). */
    public String algorithm(CollectiveRun run, CollectiveBuffers buffers) {
        if (wrapper != null) {
            return wrapper;
        }
        CollectiveCall call = run.kind() == CollectiveKind.SEND
                ? CollectiveCall.send(buffers.sendOf(run, rank()), run.count(), run.type(), run.next(rank()))
                : buffers.call(run, rank());
        return comm.algorithmFor(call).name();
    }

    /** A barrier of every rank, within the deadline. */
    public void barrier(String phase) {
        Blocking.done(communicator.bootstrap().barrier(timeout), timeout.plusSeconds(5), rank(),
                "barrier (" + phase + ")");
    }

    /** Rank 0's fresh random seed, on every rank. */
    public long agreeOnSeed() {
        byte[] mine = ByteBuffer.allocate(Long.BYTES).putLong(new SecureRandom().nextLong()).array();
        byte[] root = Blocking.value(communicator.bootstrap().broadcast(0, mine, timeout), timeout.plusSeconds(5),
                rank(), "seed");
        return ByteBuffer.wrap(root).getLong();
    }

    /** Every rank's {@code values} (the same number on every rank), rank by rank: {@code [rank][i]}. */
    public long[][] gather(long... values) {
        ByteBuffer mine = ByteBuffer.allocate(values.length * Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (long v : values) {
            mine.putLong(v);
        }
        byte[] all = Blocking.value(communicator.bootstrap().allGather(mine.array(), timeout), timeout.plusSeconds(5),
                rank(), "gather results");
        ByteBuffer b = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        long[][] out = new long[size()][values.length];
        for (long[] rankValues : out) {
            for (int i = 0; i < rankValues.length; i++) {
                rankValues[i] = b.getLong();
            }
        }
        return out;
    }

    /**
     * One checked run on every rank: a barrier (a peer may still read this rank's buffers in the run
     * before), a fresh seed, {@link CollectiveData#prepare}, a wait for it, a barrier (every rank's
     * poison and input are in place before any rank's run starts writing into peers), then
     * {@code run} (which issues this rank's part and waits for it), then {@link CollectiveData#check}.
     * Returns this rank's wrong elements.
     */
    public long checkedRun(CollectiveRun run, CollectiveBuffers buffers, CollectiveData data, Runnable runAndWait) {
        barrier("check " + run.describe());
        long seed = agreeOnSeed();
        data.prepare(run, buffers, seed);
        data.awaitPrepared();
        barrier("prepared " + run.describe());
        runAndWait.run();
        return data.check(run, buffers, seed);
    }

    /** Closes the collective communicator (the communicator, bootstrap and backend are the caller's). */
    @Override
    public void close() {
        comm.close();
    }
}
