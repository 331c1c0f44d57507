/**
 * Kernels: {@link org.jmscclpp.cuda.kernel.KernelCompiler} (CUDA C++ to a cubin with NVRTC, cached in
 * memory and on disk), {@link org.jmscclpp.cuda.kernel.CudaModule}s loaded on a CUDA backend and
 * their {@link org.jmscclpp.cuda.kernel.Kernel}s, launched with a
 * {@link org.jmscclpp.cuda.kernel.LaunchConfig} and {@link org.jmscclpp.cuda.kernel.KernelArgs}; the
 * device headers kernels include ({@code jmscclpp/jmscclpp.cuh}: fifos, channels, semaphores,
 * packets, reductions; class-path resources under {@code org/jmscclpp/cuda/kernel/include/}) and the
 * library's test and benchmark kernels ({@link org.jmscclpp.cuda.kernel.DeviceKernels}).
 */
@NullMarked
package org.jmscclpp.cuda.kernel;

import org.jspecify.annotations.NullMarked;
