package org.jmscclpp.samples;

import java.lang.foreign.Arena;
import java.util.Objects;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveGroup;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * One rank's send and receive buffers for {@link CollectiveRun}s up to {@link #bytes()} of S, and
 * the regions of them that a run uses, laid out as NCCL lays out its calls: out of place, the send
 * data from the start of the send buffer and the result from the start of the receive buffer; in
 * place, both in the receive buffer, the send data at {@code rank × count} of the result for
 * allgather, the result at {@code rank × count} of the send data for reducescatter, the same
 * region for the other kinds. The buffers are the backend's ({@link #allocate}: they can be
 * {@linkplain #register registered}) or plain native memory of this process ({@link #hostMemory}:
 * what host-backend collectives stage through their shared scratch).
 */
public final class CollectiveBuffers implements AutoCloseable {

    private final DeviceBuffer send;
    private final DeviceBuffer recv;
    private final @Nullable Arena arena;

    private CollectiveBuffers(DeviceBuffer send, DeviceBuffer recv, @Nullable Arena arena) {
        this.send = send;
        this.recv = recv;
        this.arena = arena;
    }

    /** Two buffers of {@code bytes} (at least 1) of {@code backend}. */
    public static CollectiveBuffers allocate(Backend backend, long bytes) {
        DeviceBuffer s = backend.allocate(Math.max(1, bytes));
        try {
            return new CollectiveBuffers(s, backend.allocate(Math.max(1, bytes)), null);
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
    }

    /** Two native segments of {@code bytes} of this process, wrapped ({@link DeviceBuffer#wrap}): never registered, always staged. */
    public static CollectiveBuffers hostMemory(long bytes) {
        Arena arena = Arena.ofShared();
        try {
            return new CollectiveBuffers(DeviceBuffer.wrap(arena.allocate(Math.max(1, bytes), 64)),
                    DeviceBuffer.wrap(arena.allocate(Math.max(1, bytes), 64)), arena);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** Bytes of each buffer: the largest S a run may have. */
    public long bytes() {
        return Math.min(send.size(), recv.size());
    }

    public DeviceBuffer send() {
        return send;
    }

    public DeviceBuffer recv() {
        return recv;
    }

    /** Registers both buffers with {@code comm} (collective: every rank, at the same point). */
    public Mono<Void> register(CollectiveComm comm) {
        return comm.register(send).then(comm.register(recv));
    }

    /** Whether both buffers are registered with {@code comm} on this rank. */
    public boolean registeredWith(CollectiveComm comm) {
        return comm.isRegistered(send) && comm.isRegistered(recv);
    }

    private void fits(CollectiveRun run) {
        if (run.count() < 1 || run.size() > bytes()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, run.describe() + " (S = " + run.size()
                    + " bytes) does not fit buffers of " + bytes() + " bytes, or has no element").phase("collective buffers")
                    .build();
        }
    }

    /** The in-place region of the receive buffer: S bytes. */
    private DeviceBuffer whole(CollectiveRun run) {
        return recv.slice(0, run.size());
    }

    /** The send region {@code rank} passes for {@code run} (where its input is, when it reads one). */
    public DeviceBuffer sendOf(CollectiveRun run, int rank) {
        fits(run);
        long w = run.type().bytes();
        if (!run.inPlace()) {
            return send.slice(0, run.sendElements() * w);
        }
        return switch (run.kind()) {
            case ALL_GATHER -> whole(run).slice(rank * run.count() * w, run.count() * w);
            default -> whole(run);
        };
    }

    /** The receive region {@code rank} passes for {@code run} (where its output is, when it gets one). */
    public DeviceBuffer recvOf(CollectiveRun run, int rank) {
        fits(run);
        long w = run.type().bytes();
        if (!run.inPlace()) {
            return recv.slice(0, run.recvElements() * w);
        }
        return switch (run.kind()) {
            case REDUCE_SCATTER -> whole(run).slice(rank * run.count() * w, run.count() * w);
            default -> whole(run);
        };
    }

    /** The region poisoned before {@code run}: the receive region, in place the whole region the call uses. */
    public DeviceBuffer poisonOf(CollectiveRun run, int rank) {
        return run.inPlace() ? whole(run) : recvOf(run, rank);
    }

    /** The call {@code rank} makes for {@code run}; not for sendrecv, which is a group ({@link #record}). */
    public CollectiveCall call(CollectiveRun run, int rank) {
        DeviceBuffer s = sendOf(run, rank);
        DeviceBuffer r = recvOf(run, rank);
        long c = run.count();
        return switch (run.kind()) {
            case ALL_REDUCE -> CollectiveCall.allReduce(s, r, c, run.type(), Objects.requireNonNull(run.op()));
            case ALL_GATHER -> CollectiveCall.allGather(s, r, c, run.type());
            case REDUCE_SCATTER -> CollectiveCall.reduceScatter(s, r, c, run.type(), Objects.requireNonNull(run.op()));
            case BROADCAST -> CollectiveCall.broadcast(s, r, c, run.type(), run.root());
            case REDUCE -> CollectiveCall.reduce(s, r, c, run.type(), Objects.requireNonNull(run.op()), run.root());
            case ALL_TO_ALL -> CollectiveCall.allToAll(s, r, c, run.type());
            case SEND, RECV -> throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a sendrecv is a group of a"
                    + " send and a receive, not one call").phase("collective buffers").build();
        };
    }

    /** Records {@code rank}'s calls of {@code run} on a group: the call, or for sendrecv the send to rank + 1 and the receive from rank − 1. */
    public void record(CollectiveGroup group, CollectiveRun run, int rank) {
        if (run.kind() == CollectiveKind.SEND) {
            group.send(sendOf(run, rank), run.count(), run.type(), run.next(rank))
                    .recv(recvOf(run, rank), run.count(), run.type(), run.previous(rank));
        } else {
            group.add(call(run, rank));
        }
    }

    /** {@code rank}'s part of {@code run} on {@code comm}, the Mono form: lazy, one call (a group for sendrecv). */
    public Mono<Void> issue(CollectiveComm comm, CollectiveRun run, int rank) {
        if (run.kind() == CollectiveKind.SEND) {
            return comm.group(g -> record(g, run, rank));
        }
        return comm.execute(call(run, rank));
    }

    /** Frees the buffers (the backend's) or the native memory. */
    @Override
    public void close() {
        try {
            send.close();
            recv.close();
        } finally {
            if (arena != null) {
                arena.close();
            }
        }
    }
}
