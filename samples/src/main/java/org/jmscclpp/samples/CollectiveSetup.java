package org.jmscclpp.samples;

import java.time.Duration;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Communicator;

/**
 * What every collective is built from: the job's communicator (its bootstrap and backend), the
 * largest size S in bytes it must handle, and the deadline of each setup step and wait.
 */
record CollectiveSetup(Communicator communicator, long maxSize, Duration timeout) {

    Backend backend() {
        return communicator.backend();
    }

    Bootstrap bootstrap() {
        return communicator.bootstrap();
    }

    int rank() {
        return communicator.rank();
    }

    int size() {
        return communicator.size();
    }
}
