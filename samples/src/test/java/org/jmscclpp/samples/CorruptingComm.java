package org.jmscclpp.samples;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.collective.Algorithm;
import org.jmscclpp.core.collective.CallOptions;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveGroup;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A collective communicator for the tests of the samples and the bench: the real one, but every
 * call through {@link #execute} leaves the first element of this rank's output wrong (its lowest
 * bit flipped; host memory only). Registered under {@value #NAME} by {@link #register()}, so
 * {@code --algo test-corrupt} runs it; the checks must then count one wrong element per rank that
 * gets an output, per checked run.
 */
final class CorruptingComm implements CollectiveComm {

    static final String NAME = "test-corrupt";

    private final CollectiveComm comm;

    private CorruptingComm(CollectiveComm comm) {
        this.comm = comm;
    }

    /** Makes {@code --algo test-corrupt} run this wrapper in this process. */
    static void register() {
        CollectiveJob.wrap(NAME, CorruptingComm::new);
    }

    @Override
    public Mono<Void> execute(CollectiveCall call) {
        return comm.execute(call).then(Mono.fromRunnable(() -> {
            DeviceBuffer recv = call.recv();
            if (recv != null && call.writesRecv(comm.rank()) && call.count() > 0 && recv.hostAccessible()) {
                MemorySegment s = recv.hostSegment();
                s.set(ValueLayout.JAVA_BYTE, 0, (byte) (s.get(ValueLayout.JAVA_BYTE, 0) ^ 1));
            }
        }));
    }

    @Override
    public int rank() {
        return comm.rank();
    }

    @Override
    public int size() {
        return comm.size();
    }

    @Override
    public Communicator communicator() {
        return comm.communicator();
    }

    @Override
    public CollectiveOptions options() {
        return comm.options();
    }

    @Override
    public List<Algorithm> algorithms() {
        return comm.algorithms();
    }

    @Override
    public Algorithm algorithmFor(CollectiveCall call) {
        return comm.algorithmFor(call);
    }

    @Override
    public Mono<Void> register(DeviceBuffer buffer) {
        return comm.register(buffer);
    }

    @Override
    public Mono<Void> deregister(DeviceBuffer buffer) {
        return comm.deregister(buffer);
    }

    @Override
    public boolean isRegistered(DeviceBuffer buffer) {
        return comm.isRegistered(buffer);
    }

    /** Sends and receives go to the real communicator uncorrupted (through {@link #execute} a receive would be). */
    @Override
    public Mono<Void> send(@Nullable DeviceBuffer send, long count, DataType type, int peer) {
        return comm.send(send, count, type, peer);
    }

    @Override
    public Mono<Void> recv(@Nullable DeviceBuffer recv, long count, DataType type, int peer) {
        return comm.recv(recv, count, type, peer);
    }

    @Override
    public Mono<Void> group(Consumer<CollectiveGroup> calls) {
        return comm.group(calls);
    }

    @Override
    public CollectiveComm with(CallOptions options) {
        return new CorruptingComm(comm.with(options));
    }

    @Override
    public Optional<JmscclppException> failure() {
        return comm.failure();
    }

    @Override
    public void abort(String reason) {
        comm.abort(reason);
    }

    @Override
    public void close() {
        comm.close();
    }
}
