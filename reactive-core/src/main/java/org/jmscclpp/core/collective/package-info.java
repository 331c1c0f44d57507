/**
 * Collectives on the caller's own buffers: NCCL's set (allReduce, allGather, reduceScatter,
 * broadcast, reduce, allToAll, send/recv, grouped calls) as {@link reactor.core.publisher.Mono}s,
 * through a {@link org.jmscclpp.core.collective.CollectiveComm} built once from a
 * {@link org.jmscclpp.core.Communicator}. Backends supply the algorithms through
 * {@link org.jmscclpp.core.collective.CollectiveEngine}: the host backend's in
 * {@code org.jmscclpp.core.host}, the CUDA backend's in {@code org.jmscclpp.cuda.collective}.
 */
@NullMarked
package org.jmscclpp.core.collective;

import org.jspecify.annotations.NullMarked;
