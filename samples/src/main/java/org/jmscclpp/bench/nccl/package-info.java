/**
 * NCCL through JNA, the baseline of {@code jmscclpp bench coll --baseline nccl}: {@link
 * org.jmscclpp.bench.nccl.NcclCommunicator} (one rank's non-blocking NCCL communicator on a CUDA
 * backend's GPU, every wait with a deadline) over the binding of {@code libnccl.so.2}. The
 * benchmarks' own, not part of the library.
 */
@NullMarked
package org.jmscclpp.bench.nccl;

import org.jspecify.annotations.NullMarked;
