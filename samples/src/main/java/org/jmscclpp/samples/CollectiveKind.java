package org.jmscclpp.samples;

/**
 * The collectives of the samples and of {@code jmscclpp bench coll}, with nccl-tests' conventions
 * for what the "size" and "count" columns mean and how bus bandwidth is derived (GB = 1e9):
 * <table>
 *   <caption>size, count and busbw per collective</caption>
 *   <tr><th>kind</th><th>size S (bytes)</th><th>count</th><th>busbw</th><th>in-place input</th></tr>
 *   <tr><td>ALLREDUCE</td><td>the buffer</td><td>elements</td><td>algbw × 2(n−1)/n</td>
 *       <td>the output buffer</td></tr>
 *   <tr><td>ALLGATHER</td><td>the whole output (n × per-rank)</td><td>elements per rank</td>
 *       <td>algbw × (n−1)/n</td><td>slice {@code rank} of the output</td></tr>
 *   <tr><td>ALLTOALL</td><td>one rank's whole buffer</td><td>elements per peer</td><td>algbw × (n−1)/n</td>
 *       <td>not offered</td></tr>
 *   <tr><td>SENDRECV</td><td>the buffer (send to rank+1, receive from rank−1)</td><td>elements</td>
 *       <td>algbw × 1</td><td>not offered</td></tr>
 * </table>
 * algbw = S / time.
 */
public enum CollectiveKind {
    ALLREDUCE("all_reduce"),
    ALLGATHER("all_gather"),
    ALLTOALL("alltoall"),
    SENDRECV("sendrecv");

    private final String label;

    CollectiveKind(String label) {
        this.label = label;
    }

    /** nccl-tests' name of the collective ({@code all_reduce}, {@code all_gather}, ...). */
    String label() {
        return label;
    }

    /** busbw / algbw for {@code n} ranks, as nccl-tests computes it. */
    double busFactor(int n) {
        return switch (this) {
            case ALLREDUCE -> 2.0 * (n - 1) / n;
            case ALLGATHER, ALLTOALL -> (double) (n - 1) / n;
            case SENDRECV -> 1.0;
        };
    }

    /** Elements in the count column for a size of {@code sizeBytes}, n ranks, {@code type}; chunks 16-byte aligned as nccl-tests does. */
    long count(long sizeBytes, int n, DataType type) {
        long elements = sizeBytes / type.bytes();
        return switch (this) {
            case ALLREDUCE, SENDRECV -> elements;
            case ALLGATHER, ALLTOALL -> (elements / n) & ~(16L / type.bytes() - 1);
        };
    }

    /** Bytes of S for {@code count} elements of {@code type} and n ranks (the inverse of {@link #count}). */
    long size(long count, int n, DataType type) {
        long bytes = count * type.bytes();
        return switch (this) {
            case ALLREDUCE, SENDRECV -> bytes;
            case ALLGATHER, ALLTOALL -> bytes * n;
        };
    }

    /** Bytes of one rank's input for {@code count}: S except for allgather, where it is one slice. */
    long inputBytes(long count, int n, DataType type) {
        return this == ALLGATHER ? count * type.bytes() : size(count, n, type);
    }

    /** Bytes of one rank's output for {@code count}: always S. */
    long outputBytes(long count, int n, DataType type) {
        return size(count, n, type);
    }

    /** Whether nccl-tests' in-place variant exists here. */
    boolean hasInPlace() {
        return this == ALLREDUCE || this == ALLGATHER;
    }
}
