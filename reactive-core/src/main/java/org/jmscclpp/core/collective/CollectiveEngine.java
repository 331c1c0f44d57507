package org.jmscclpp.core.collective;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import reactor.core.publisher.Mono;

/**
 * The service interface through which a backend's module supplies collectives: found with
 * {@link ServiceLoader} ({@code META-INF/services/org.jmscclpp.core.collective.CollectiveEngine}).
 * The host backend's engine is in {@code org.jmscclpp.core.host}, the CUDA backend's in
 * {@code org.jmscclpp.cuda.collective}. Not an application API: applications call
 * {@link CollectiveComm#create}.
 */
public interface CollectiveEngine {

    /** The {@link Backend#name()} this engine serves. */
    String backend();

    /** Every algorithm, per kind, the default of each kind first. */
    List<Algorithm> algorithms();

    /** Sets up a collective communicator (see {@link CollectiveComm#create(Communicator, CollectiveOptions)}). */
    Mono<CollectiveComm> create(Communicator communicator, CollectiveOptions options);

    /** Every engine on the class path. */
    static List<CollectiveEngine> all() {
        List<CollectiveEngine> engines = new ArrayList<>();
        ServiceLoader.load(CollectiveEngine.class, CollectiveEngine.class.getClassLoader()).forEach(engines::add);
        return engines;
    }

    /**
     * The engine of {@code backend}.
     *
     * @throws JmscclppException INVALID_USAGE naming the engines found when none serves it
     */
    static CollectiveEngine forBackend(Backend backend) {
        List<CollectiveEngine> engines = all();
        for (CollectiveEngine e : engines) {
            if (e.backend().equals(backend.name())) {
                return e;
            }
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "no collective engine serves the " + backend.name()
                + " backend (engines on the class path: " + engines.stream().map(CollectiveEngine::backend).toList()
                + ")").phase("collective setup").build();
    }
}
