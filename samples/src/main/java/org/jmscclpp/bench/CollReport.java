package org.jmscclpp.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.jmscclpp.core.collective.CollectiveKind;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.ReduceOp;
import org.jspecify.annotations.Nullable;

/**
 * What one {@code jmscclpp bench coll} run produced: how it was run, on what, and its rows. Printed
 * by {@link CollTable}, written and read by {@link CollJson}, drawn by {@link CollPlot}.
 *
 * @param command   the command line that produced it
 * @param host      the host name of the ranks
 * @param op        the reduction of a reducing kind, else null
 * @param root      the root of broadcast and reduce, else -1
 * @param algorithm jmscclpp's algorithm as asked for ({@code auto}: the tuning table's, per size in the rows)
 * @param devices   one line per rank: pid, host, device
 * @param versions  versions of what ran (jmscclpp, java, nccl)
 * @param rows      every row of every implementation and placement, in the order they ran
 * @param overhead  the Mono form's call overhead, when it was measured
 */
record CollReport(String command, String host, String backend, CollectiveKind kind, DataType type,
                  @Nullable ReduceOp op, int root, int ranks, String algorithm, long minBytes, long maxBytes,
                  int factor, int iters, int warmup, int check, int graph, List<String> devices,
                  Map<String, String> versions, List<CollectiveRunner.Measurement> rows,
                  @Nullable CallOverhead overhead) {

    static final String JMSCCLPP = "jmscclpp";
    /** jmscclpp on buffers that are not registered: staged through the engine's scratch. */
    static final String STAGED = "jmscclpp-staged";
    static final String NCCL = "nccl";
    /** The algorithm of a report that let the tuning table choose. */
    static final String AUTO = "auto";

    CollReport {
        devices = List.copyOf(devices);
        versions = new LinkedHashMap<>(versions);
        rows = List.copyOf(rows);
    }

    /** algbw in GB/s (GB = 1e9) of {@code m}: S / time. */
    static double algbw(CollectiveRunner.Measurement m) {
        return m.timeUs() > 0 ? m.size() / (m.timeUs() * 1e3) : 0;
    }

    /** busbw in GB/s: algbw times the kind's factor for {@code ranks}. */
    static double busbw(CollectiveRunner.Measurement m, int ranks) {
        return algbw(m) * m.kind().busFactor(ranks);
    }

    /** One size's rows: jmscclpp's out-of-place and in-place, NCCL's and staged out-of-place (each null when absent). */
    record Line(long size, long count, CollectiveRunner.Measurement out, CollectiveRunner.@Nullable Measurement in,
                CollectiveRunner.@Nullable Measurement ncclOut, CollectiveRunner.@Nullable Measurement stagedOut) {
    }

    /** The rows grouped by size, in increasing size; a size without a jmscclpp out-of-place row is left out. */
    List<Line> lines() {
        Map<Long, CollectiveRunner.@Nullable Measurement[]> bySize = new TreeMap<>();
        for (CollectiveRunner.Measurement m : rows) {
            CollectiveRunner.@Nullable Measurement[] slot = bySize.computeIfAbsent(m.size(),
                    s -> new CollectiveRunner.@Nullable Measurement[4]);
            switch (m.implementation()) {
                case JMSCCLPP -> slot[m.inPlace() ? 1 : 0] = m;
                case NCCL -> {
                    if (!m.inPlace()) {
                        slot[2] = m;
                    }
                }
                case STAGED -> {
                    if (!m.inPlace()) {
                        slot[3] = m;
                    }
                }
                default -> {
                    // an implementation this table does not know
                }
            }
        }
        List<Line> lines = new ArrayList<>();
        bySize.forEach((size, s) -> {
            CollectiveRunner.Measurement out = s[0];
            if (out != null) {
                lines.add(new Line(size, out.count(), out, s[1], s[2], s[3]));
            }
        });
        return lines;
    }

    /** Whether any row has NCCL's results. */
    boolean hasNccl() {
        return has(NCCL);
    }

    /** Whether any row was timed on staged (unregistered) buffers. */
    boolean hasStaged() {
        return has(STAGED);
    }

    private boolean has(String implementation) {
        return rows.stream().anyMatch(m -> m.implementation().equals(implementation));
    }

    /** Wrong elements over every checked row. */
    long wrong() {
        return rows.stream().mapToLong(m -> Math.max(0, m.wrong())).sum();
    }

    /** The mean busbw of {@code implementation}'s rows (both placements), as nccl-tests' "Avg bus bandwidth". */
    Optional<Double> averageBusbw(String implementation) {
        List<Double> values = rows.stream().filter(m -> m.implementation().equals(implementation))
                .map(m -> busbw(m, ranks)).toList();
        return values.isEmpty() ? Optional.empty()
                : Optional.of(values.stream().mapToDouble(Double::doubleValue).sum() / values.size());
    }
}
