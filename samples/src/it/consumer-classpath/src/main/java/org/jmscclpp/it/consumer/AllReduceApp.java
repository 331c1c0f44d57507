package org.jmscclpp.it.consumer;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Backends;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.UniqueId;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** A user's program: ranks of this JVM on the host backend sum their floats with an allReduce. */
public final class AllReduceApp {

    static final Duration TIMEOUT = Duration.ofSeconds(60);

    private AllReduceApp() {
    }

    /** Starts one rank per input; each sums its floats with every other rank's, in place. */
    public static List<float[]> sumOverRanks(List<float[]> inputs) {
        int n = inputs.size();
        TcpBootstrap root = TcpBootstrap.create(0, n);
        UniqueId id = root.createUniqueId();
        return Flux.range(0, n)
                .flatMapSequential(rank -> rank(
                        rank == 0 ? root.initialize(id) : TcpBootstrap.initialize(rank, n, id, TIMEOUT),
                        inputs.get(rank).clone()))
                .collectList()
                .block(TIMEOUT);
    }

    private static Mono<float[]> rank(Mono<TcpBootstrap> ready, float[] values) {
        Backend host = Backends.named("host");
        DeviceBuffer buffer = DeviceBuffer.wrap(MemorySegment.ofArray(values));
        return ready.flatMap(bootstrap -> {
            Communicator comm = Communicator.create(bootstrap, host);
            return CollectiveComm.create(comm)
                    .flatMap(coll -> coll.allReduce(buffer, buffer, values.length, DataType.FLOAT32, ReduceOp.SUM)
                            .doFinally(s -> coll.close()))
                    .doFinally(s -> {
                        comm.close();
                        bootstrap.close();
                    });
        }).thenReturn(values);
    }

    public static void main(String[] args) {
        List<float[]> sums = sumOverRanks(List.of(new float[] {1, 2, 3, 4}, new float[] {10, 20, 30, 40}));
        for (int rank = 0; rank < sums.size(); rank++) {
            System.out.println("rank " + rank + ": " + Arrays.toString(sums.get(rank)));
        }
    }
}
