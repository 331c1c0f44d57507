package org.jmscclpp.samples;

import java.util.Map;
import java.util.Optional;

/**
 * The Open MPI side of {@code jmscclpp bench bootstrap}: the same operations, measured the same way,
 * with MPI. This build has no MPI measurement, so the benchmark shows its own columns only.
 */
final class MpiBaseline {

    private MpiBaseline() {
    }

    /**
     * Measures {@code nRanks} MPI ranks on this host.
     *
     * @return µs per operation under the {@link BenchOp} keys ({@code sendrecv_bw_1MiB} in GB/s), or empty
     *         where MPI cannot be measured
     */
    static Optional<Map<String, Double>> measure(int nRanks, int iters, int warmup) {
        return Optional.empty();
    }
}
