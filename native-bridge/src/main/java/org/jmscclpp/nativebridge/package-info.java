/**
 * The raw JNA bindings of the native libraries: the CUDA driver ({@code CudaDriver}), NVRTC
 * ({@code Nvrtc}), libibverbs ({@code Verbs}, with the struct layouts of {@code VerbsLayout}) and
 * libc ({@code LibC}). Internal: the CUDA backend ({@code org.jmscclpp.cuda}), the kernels
 * ({@code org.jmscclpp.cuda.kernel}) and the InfiniBand transport ({@code org.jmscclpp.ib}) are
 * built on them; applications use those.
 */
@NullMarked
package org.jmscclpp.nativebridge;

import org.jspecify.annotations.NullMarked;
