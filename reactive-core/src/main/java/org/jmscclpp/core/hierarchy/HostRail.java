package org.jmscclpp.core.hierarchy;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Mesh;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.TransportFlags;
import org.jmscclpp.core.semaphore.Host2HostSemaphore;
import org.jmscclpp.core.spi.Closeables;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A rank's links to its rail (the ranks of the other hosts with its local index) for the steps
 * between hosts of {@link HierarchicalComm}: a communicator of the rail's members, one buffer
 * registered for the network transport ({@code ETHERNET}) and a mesh over it, so that every step
 * is one-sided writes into the peer's buffer, each followed by a semaphore signal, as a
 * PortChannel's put with signal is. The buffer is host memory of a host backend (the job's own on
 * CPU ranks, one opened for the rails on GPU ranks), so that the network transport sends it
 * without staging.
 *
 * <h2>The pipeline</h2>
 * A step moves its bytes to each member in chunks of {@value #CHUNK} bytes through {@value #DEPTH}
 * slots per member and direction: the sender copies a chunk into its send slot for the peer,
 * writes it into its receive slot at the peer and signals the peer's <em>data</em> semaphore; the
 * receiver, on that signal, copies the chunk out and signals the sender's <em>answer</em>
 * semaphore, which frees the slot. Up to {@value #DEPTH} chunks per member are in flight, so the
 * network, the copies and the answers overlap. Each semaphore carries one kind of signal in one
 * direction, so signals are counted, never told apart.
 */
final class HostRail implements AutoCloseable {

    /** Bytes of one chunk (and slot). */
    static final long CHUNK = 1 << 20;
    /** Slots per member and direction: the chunks in flight to one member. */
    static final int DEPTH = 4;
    /** How long past the deadline a step waits for its sending half to stop. */
    private static final long GRACE_NANOS = 5_000_000_000L;

    private final int rank;
    private final int me;
    private final int[] members;
    private final Communicator communicator;
    private final DeviceBuffer buffer;
    private final RegisteredMemory memory;
    private final MemorySegment segment;
    private final RegisteredMemory[] remotes;
    /** data[p]: chunks p wrote to this rank (inbound), and this rank's signal after a chunk it wrote to p. */
    private final Host2HostSemaphore[] data;
    /** answers[p]: chunks p has copied out (inbound), and this rank's signal after copying out one of p's. */
    private final Host2HostSemaphore[] answers;
    private final Supplier<@Nullable JmscclppException> failure;
    // the progress of the step under way, per member: sent and answered belong to the thread of the
    // sending half (the sender thread in a step of several chunks), arrived and copied to the caller's
    private final long[] sent;
    private final long[] answered;
    private final long[] arrived;
    private final long[] copied;
    private @Nullable ExecutorService sender;

    private HostRail(int rank, int me, int[] members, Communicator communicator, DeviceBuffer buffer,
                     RegisteredMemory memory, Mesh mesh, Host2HostSemaphore[] answers,
                     Supplier<@Nullable JmscclppException> failure) {
        this.rank = rank;
        this.me = me;
        this.members = members;
        this.communicator = communicator;
        this.buffer = buffer;
        this.memory = memory;
        this.segment = buffer.hostSegment();
        this.failure = failure;
        int n = members.length;
        this.remotes = new RegisteredMemory[n];
        this.data = new Host2HostSemaphore[n];
        this.answers = answers;
        for (int p = 0; p < n; p++) {
            if (p != me) {
                remotes[p] = mesh.remoteMemory(p);
                data[p] = new Host2HostSemaphore(mesh.semaphore(p));
            }
        }
        this.sent = new long[n];
        this.answered = new long[n];
        this.arrived = new long[n];
        this.copied = new long[n];
    }

    /**
     * Connects this rank with the other members of {@code rail} over {@code transport} (every
     * member calls it at once); {@code failure} tells the job's failure, which ends every wait.
     */
    static HostRail open(SubsetBootstrap rail, Backend backend, Transport transport, Duration timeout,
                         Supplier<@Nullable JmscclppException> failure) {
        int n = rail.size();
        int[] members = new int[n];
        for (int p = 0; p < n; p++) {
            members[p] = rail.member(p);
        }
        Communicator communicator = Communicator.create(rail, backend);
        DeviceBuffer buffer = null;
        RegisteredMemory memory = null;
        try {
            buffer = backend.allocate(2L * n * DEPTH * CHUNK);
            memory = communicator.registerMemory(buffer, TransportFlags.of(transport));
            Mesh mesh = Objects.requireNonNull(communicator.mesh(memory, peer -> EndpointConfig.of(transport), 0,
                    timeout).timeout(timeout.multipliedBy(2).plusSeconds(5)).block(), "mesh");
            // a second semaphore per member, for the answers
            Host2HostSemaphore[] answers = new Host2HostSemaphore[n];
            List<Mono<?>> building = new ArrayList<>();
            for (int p = 0; p < n; p++) {
                if (p != rail.rank()) {
                    int peer = p;
                    building.add(Host2HostSemaphore.build(communicator, mesh.connection(p))
                            .doOnNext(sem -> answers[peer] = sem));
                }
            }
            Mono.when(building).timeout(timeout.plusSeconds(5)).block();
            return new HostRail(members[rail.rank()], rail.rank(), members, communicator, buffer, memory, mesh,
                    answers, failure);
        } catch (RuntimeException e) {
            List<AutoCloseable> made = new ArrayList<>();
            if (memory != null) {
                made.add(memory);
            }
            made.add(communicator);
            if (buffer != null) {
                made.add(buffer);
            }
            Closeables.closeAll(made, e);
            throw e;
        }
    }

    /**
     * One step between hosts: sends {@code bytes} of {@code out(p)} to every other member {@code p}
     * and receives as many from each into {@code in(p)}; with a {@code from} of 0 or more, only
     * that member sends, to every other. In chunks, pipelined (see the class comment); the step
     * ends when every chunk this rank sent was copied out by its receiver and every chunk it
     * expects was copied into {@code in}. A step of several chunks that this rank sends runs its
     * sending half on the rail's sender thread, beside the receiving half on the calling thread.
     * {@code arrival}, when given, hears of each chunk once it is in {@code in} (and its slot
     * answered), on the calling thread, so that the caller works on it while the rest travels.
     * With {@code phases} non-null, the calling thread's time spent moving and waiting is added to it.
     */
    void exchange(long bytes, IntFunction<MemorySegment> out, IntFunction<MemorySegment> in, int from, long deadline,
                  @Nullable Arrival arrival, @Nullable Map<String, Long> phases) {
        long chunks = (bytes + CHUNK - 1) / CHUNK;
        boolean sending = from < 0 || from == me;
        java.util.Arrays.fill(sent, 0);
        java.util.Arrays.fill(answered, 0);
        java.util.Arrays.fill(arrived, 0);
        java.util.Arrays.fill(copied, 0);
        if (!sending || chunks <= 1) {
            // one chunk: this thread runs the receiving end itself while it waits (the lowest latency)
            pump(bytes, chunks, out, in, from, deadline, arrival, sending, true, chunks <= 1, () -> false, phases);
            return;
        }
        AtomicBoolean cancelled = new AtomicBoolean();
        CompletableFuture<Void> sends = CompletableFuture.runAsync(() -> pump(bytes, chunks, out, in, from, deadline,
                null, true, false, false, cancelled::get, null), sender());
        try {
            pump(bytes, chunks, out, in, from, deadline, arrival, false, true, false,
                    () -> sends.isCompletedExceptionally(), phases);
            sends.get(Math.max(0, deadline - System.nanoTime()) + GRACE_NANOS, TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (TimeoutException e) {
            throw stalled(from, chunks);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw JmscclppException.builder(ErrorCode.TIMEOUT, "interrupted in a step between hosts").rank(rank)
                    .phase("collective").build();
        } catch (RuntimeException e) {
            // the sending half may not outlive the step: it would write into the next one's slots
            cancelled.set(true);
            Throwable why = null;
            try {
                sends.get(GRACE_NANOS, TimeUnit.NANOSECONDS);
            } catch (ExecutionException failed) {
                why = failed.getCause();
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            } catch (TimeoutException ignored) {
                // still writing: the rail is broken with the call, and close() stops the thread
            }
            // the receiving half stopped because the sending half failed: that failure is the news
            if (e instanceof JmscclppException j && j.code() == ErrorCode.INTERNAL_ERROR
                    && why instanceof RuntimeException r) {
                throw r;
            }
            throw e;
        }
    }

    /**
     * Moves chunks until this thread's part is done: with {@code send}, writes this rank's chunks
     * (as slots free up) and consumes the answers; with {@code receive}, copies out the chunks that
     * came and answers them. Between rounds with nothing to move it waits for a signal, the job's
     * failure, {@code stop} or the deadline; with {@code drive} the wait runs the network's
     * receiving end itself.
     */
    private void pump(long bytes, long chunks, IntFunction<MemorySegment> out, IntFunction<MemorySegment> in,
                      int from, long deadline, @Nullable Arrival arrival, boolean send, boolean receive, boolean drive,
                      BooleanSupplier stop, @Nullable Map<String, Long> phases) {
        int n = members.length;
        long moving = 0;
        long waiting = 0;
        while (true) {
            boolean done = true;
            boolean moved = false;
            long t0 = phases == null ? 0 : System.nanoTime();
            for (int p = 0; p < n; p++) {
                if (p == me) {
                    continue;
                }
                if (send) {
                    while (sent[p] < chunks && sent[p] - answered[p] < DEPTH) {
                        long k = sent[p];
                        long len = Math.min(CHUNK, bytes - k * CHUNK);
                        long slot = slot(p, k);
                        MemorySegment.copy(out.apply(p), k * CHUNK, segment, slot, len);
                        data[p].writeAndSignal(remotes[p], inboundSlot(me, k), memory, slot, len);
                        sent[p]++;
                        moved = true;
                    }
                    done &= answered[p] == chunks;
                }
                if (receive && (from < 0 || from == p)) {
                    while (copied[p] < arrived[p]) {
                        long k = copied[p];
                        long len = Math.min(CHUNK, bytes - k * CHUNK);
                        MemorySegment.copy(segment, inboundSlot(p, k), in.apply(p), k * CHUNK, len);
                        answers[p].signal();
                        copied[p]++;
                        moved = true;
                        if (arrival != null) {
                            arrival.chunk(p, k * CHUNK, len);
                        }
                    }
                    done &= copied[p] == chunks;
                }
            }
            long t1 = phases == null ? 0 : System.nanoTime();
            moving += t1 - t0;
            if (done) {
                break;
            }
            if (!moved) {
                boolean got = Waiting.await(() -> collect(from, send, receive) || failure.get() != null
                        || stop.getAsBoolean(), deadline, drive);
                JmscclppException failed = failure.get();
                if (failed != null) {
                    throw failed;
                }
                if (stop.getAsBoolean()) {
                    throw JmscclppException.builder(ErrorCode.INTERNAL_ERROR, "the other half of a step between hosts"
                            + " stopped").rank(rank).phase("collective").build();
                }
                if (!got) {
                    throw stalled(from, chunks);
                }
                waiting += phases == null ? 0 : System.nanoTime() - t1;
            } else {
                collect(from, send, receive);
            }
        }
        if (phases != null) {
            phases.merge("rail moves" + (send ? "" : " (receiving)"), moving, Long::sum);
            phases.merge("rail waits", waiting, Long::sum);
        }
    }

    /** The rail's sender thread, started by the first step that needs it. */
    private synchronized ExecutorService sender() {
        if (sender == null) {
            sender = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon()
                    .name("jmscclpp-rail-tx-r" + rank).factory());
        }
        return sender;
    }

    /** What the caller does with a chunk that arrived from a member. */
    @FunctionalInterface
    interface Arrival {
        /** The chunk of {@code bytes} at byte {@code offset} from member {@code member} is in its {@code in} segment. */
        void chunk(int member, long offset, long bytes);
    }

    /**
     * Consumes every signal that has arrived for this thread's part (data from the senders when
     * {@code receive}, answers from the receivers when {@code send}); whether any had.
     */
    private boolean collect(int from, boolean send, boolean receive) {
        boolean any = false;
        for (int p = 0; p < members.length; p++) {
            if (p == me) {
                continue;
            }
            if (receive && (from < 0 || from == p)) {
                while (data[p].poll()) {
                    arrived[p]++;
                    any = true;
                }
            }
            if (send) {
                while (answers[p].poll()) {
                    answered[p]++;
                    any = true;
                }
            }
        }
        return any;
    }

    /** TIMEOUT naming the first member this rank still waits for. */
    private JmscclppException stalled(int from, long chunks) {
        for (int p = 0; p < members.length; p++) {
            if (p == me) {
                continue;
            }
            String what = (from < 0 || from == p) && copied[p] < chunks ? "data of a step between hosts ("
                    + copied[p] + " of " + chunks + " chunks)"
                    : (from < 0 || from == me) && answered[p] < chunks ? "the answer to a step between hosts ("
                    + answered[p] + " of " + chunks + " chunks)" : null;
            if (what != null) {
                return JmscclppException.builder(ErrorCode.TIMEOUT, "no signal from rank " + members[p] + " (" + what
                        + ") before the call's deadline").rank(rank).peer(members[p]).phase("collective").build();
            }
        }
        return JmscclppException.builder(ErrorCode.TIMEOUT, "a step between hosts did not end before the call's"
                + " deadline").rank(rank).phase("collective").build();
    }

    /** This rank's send slot for chunk {@code k} to member {@code p}. */
    private long slot(int p, long k) {
        return ((long) p * DEPTH + k % DEPTH) * CHUNK;
    }

    /** The slot, in a member's buffer, where member {@code p}'s chunk {@code k} arrives. */
    private long inboundSlot(int p, long k) {
        return ((long) (members.length + p) * DEPTH + k % DEPTH) * CHUNK;
    }

    @Override
    public void close() {
        ExecutorService s;
        synchronized (this) {
            s = sender;
            sender = null;
        }
        if (s != null) {
            s.shutdownNow();
            try {
                s.awaitTermination(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        Closeables.closeAll(List.of(memory, communicator, buffer));
    }
}
