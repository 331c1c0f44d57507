/**
 * The CUDA backend: {@link org.jmscclpp.cuda.CudaBackend} (one GPU's memory through the CUDA driver:
 * device, VMM and pinned host-visible buffers, copies, {@code CUDA_IPC} export and import), found
 * through {@link org.jmscclpp.cuda.CudaBackendProvider}; its GPU context
 * ({@link org.jmscclpp.cuda.CudaContext}), streams ({@link org.jmscclpp.cuda.CudaStream}) and graphs
 * ({@link org.jmscclpp.cuda.CudaGraph}); the {@code CUDA_IPC} connections between GPUs of one host;
 * and {@link org.jmscclpp.cuda.HotBindingsProbe}, the cost of its hot driver calls.
 */
@NullMarked
package org.jmscclpp.cuda;

import org.jspecify.annotations.NullMarked;
