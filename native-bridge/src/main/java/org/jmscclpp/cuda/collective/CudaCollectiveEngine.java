package org.jmscclpp.cuda.collective;

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
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.cuda.CudaBackend;
import reactor.core.publisher.Mono;

/**
 * The collectives of the {@code cuda} backend, found by {@link CollectiveComm#create} through the
 * service loader: {@link CudaCollectiveComm} for the GPUs of one host, and {@link HierarchicalComm}
 * with a {@link CudaCollectiveComm} per host when the ranks span hosts (steps between hosts staged
 * through host memory and carried over ETHERNET).
 */
public final class CudaCollectiveEngine implements CollectiveEngine {

    /** The steps inside a host of a job that spans hosts: this engine's NVLink collectives. */
    static final HierarchicalComm.Level LEVEL = new HierarchicalComm.Level() {
        @Override
        public Mono<CollectiveComm> create(Communicator hostCommunicator, CollectiveOptions options,
                                           TuningTable tuning) {
            return CudaCollectiveComm.create(hostCommunicator, options, tuning);
        }

        @Override
        public void checkBuffer(Backend backend, int rank, DeviceBuffer buffer, String which) {
            CudaCollectiveComm.checkGpuBuffer((CudaBackend) backend, rank, buffer, which);
        }

        /** The rails' host memory: a host backend of the communicator's own. */
        @Override
        public Backend openRailBackend() {
            return HostBackend.open();
        }
    };

    /** Called by {@link java.util.ServiceLoader}. */
    public CudaCollectiveEngine() {
    }

    @Override
    public String backend() {
        return "cuda";
    }

    @Override
    public List<Algorithm> algorithms() {
        return Stream.concat(CudaCollectiveComm.ALGORITHMS.stream(), HierarchicalComm.ALGORITHMS.stream()).toList();
    }

    /**
     * A communicator whose ranks share one host gets the NVLink collectives; one whose ranks span
     * hosts (the bootstrap counts fewer ranks on this host than in the job) the hierarchical ones.
     */
    @Override
    public Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options) {
        return Mono.defer(() -> {
            TuningTable tuning = TuningTable.read(
                    CudaCollectiveEngine.class.getResourceAsStream("/" + CudaCollectiveComm.TUNING),
                    CudaCollectiveComm.TUNING);
            return communicator.bootstrap().nRanksPerNode() < communicator.size()
                    ? HierarchicalComm.create(communicator, options, tuning, LEVEL)
                    : CudaCollectiveComm.create(communicator, options, tuning);
        });
    }
}
