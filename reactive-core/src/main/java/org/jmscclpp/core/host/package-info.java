/**
 * The host backend: CPU ranks whose memory is shared-memory files, which other processes of the
 * same host map through the {@link org.jmscclpp.core.Transport#HOST_IPC} transport. What CUDA IPC
 * is to the GPU backend, a file under {@code /dev/shm} is here.
 *
 * <p>{@link org.jmscclpp.core.host.HostBackend} is the only public class besides its
 * {@link org.jmscclpp.core.spi.BackendProvider}; buffers, handles, the file registry and the
 * connection are package-private machinery.
 */
@NullMarked
package org.jmscclpp.core.host;

import org.jspecify.annotations.NullMarked;
