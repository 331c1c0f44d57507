/**
 * The raw bindings of the native libraries, through JNA: the CUDA driver ({@code CudaDriver}, whose calls per
 * kernel wait, signal, copy and launch go through {@code java.lang.foreign} downcalls: {@code CudaHotCalls},
 * {@code Downcalls}), NVRTC
 * ({@code Nvrtc}), libibverbs ({@code Verbs}, with the struct layouts of {@code VerbsLayout}) and
 * libc ({@code LibC}). Internal: the CUDA backend ({@code org.jmscclpp.cuda}), the kernels
 * ({@code org.jmscclpp.cuda.kernel}) and the InfiniBand transport ({@code org.jmscclpp.ib}) are
 * built on them; applications use those.
 */
@NullMarked
package org.jmscclpp.nativebridge;

import org.jspecify.annotations.NullMarked;
