/**
 * The CUDA backend's collectives: {@link org.jmscclpp.cuda.collective.CudaCollectiveComm} (the
 * collective API of {@code org.jmscclpp.core.collective} on the GPUs of one host, as Monos and
 * enqueued on a caller's stream) and its kernels ({@code collectives.cu}, compiled with NVRTC).
 */
@NullMarked
package org.jmscclpp.cuda.collective;

import org.jspecify.annotations.NullMarked;
