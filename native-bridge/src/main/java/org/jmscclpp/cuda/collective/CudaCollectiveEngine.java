package org.jmscclpp.cuda.collective;

import java.util.List;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.collective.Algorithm;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveEngine;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.TuningTable;
import reactor.core.publisher.Mono;

/**
 * The collectives of the {@code cuda} backend ({@link CudaCollectiveComm}), found by
 * {@link CollectiveComm#create} through the service loader.
 */
public final class CudaCollectiveEngine implements CollectiveEngine {

    /** Called by {@link java.util.ServiceLoader}. */
    public CudaCollectiveEngine() {
    }

    @Override
    public String backend() {
        return "cuda";
    }

    @Override
    public List<Algorithm> algorithms() {
        return CudaCollectiveComm.ALGORITHMS;
    }

    @Override
    public Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options) {
        return Mono.defer(() -> CudaCollectiveComm.create(communicator, options,
                TuningTable.read(CudaCollectiveEngine.class.getResourceAsStream("/" + CudaCollectiveComm.TUNING),
                        CudaCollectiveComm.TUNING)));
    }
}
