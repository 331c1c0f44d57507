package org.jmscclpp.core.collective;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * One algorithm an engine offers for one kind of call, as {@link CollectiveComm#algorithms()} lists
 * them and {@link CallOptions#algorithm(String)}, {@link CollectiveOptions#algorithms()} and the
 * {@link TuningTable} name them.
 *
 * @param kind     the calls it serves
 * @param name     short lower-case name ({@code ll16}, {@code rsag}, {@code direct}, ...)
 * @param id       1 to 255, unique within the engine: the byte a {@link CallDescriptor} carries, so
 *                 that ranks running different algorithms for one call notice it
 * @param synopsis one line on how it moves the data
 */
public record Algorithm(CollectiveKind kind, String name, int id, String synopsis) {

    public Algorithm {
        if (id < 1 || id > 255) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "an algorithm id is 1 to 255, got " + id)
                    .phase("algorithm").build();
        }
        if (name.isBlank()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "an algorithm needs a name").phase("algorithm")
                    .build();
        }
    }
}
