package org.jmscclpp.core.host;

import java.util.List;
import java.util.stream.Stream;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.collective.Algorithm;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveEngine;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.TuningTable;
import org.jmscclpp.core.hierarchy.HierarchicalComm;
import reactor.core.publisher.Mono;

/**
 * The collectives of the {@code host} backend (CPU ranks over shared memory), found by
 * {@link CollectiveComm#create} through the service loader. One algorithm per kind; its tuning
 * table is {@value #TUNING}.
 */
public final class HostCollectiveEngine implements CollectiveEngine {

    /** The engine's committed tuning table, a class-path resource. */
    public static final String TUNING = "org/jmscclpp/core/host/tuning-host.txt";

    /** The steps inside a host of a job that spans hosts: this engine's shared-memory collectives. */
    static final HierarchicalComm.Level LEVEL = new HierarchicalComm.Level() {
        @Override
        public Mono<CollectiveComm> create(Communicator hostCommunicator, CollectiveOptions options,
                                           TuningTable tuning) {
            return HostCollectiveComm.create(hostCommunicator, options, tuning);
        }

        @Override
        public void checkBuffer(Backend backend, int rank, DeviceBuffer buffer, String which) {
            HostCollectiveComm.checkHostBuffer((HostBackend) backend, rank, buffer, which);
        }
    };

    /** Called by {@link java.util.ServiceLoader}. */
    public HostCollectiveEngine() {
    }

    @Override
    public String backend() {
        return "host";
    }

    /** The algorithms of one host, then those of jobs that span hosts ({@link HierarchicalComm}). */
    @Override
    public List<Algorithm> algorithms() {
        return Stream.concat(HostCollectiveComm.ALGORITHMS.stream(), HierarchicalComm.ALGORITHMS.stream()).toList();
    }

    /**
     * A communicator whose ranks share one host gets the shared-memory collectives; one whose
     * ranks span hosts (the bootstrap counts fewer ranks on this host than in the job) the
     * hierarchical ones.
     */
    @Override
    public Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options) {
        return Mono.defer(() -> {
            TuningTable tuning = TuningTable.read(HostCollectiveEngine.class.getResourceAsStream("/" + TUNING), TUNING);
            return communicator.bootstrap().nRanksPerNode() < communicator.size()
                    ? HierarchicalComm.create(communicator, options, tuning, LEVEL)
                    : HostCollectiveComm.create(communicator, options, tuning);
        });
    }
}
