/**
 * Semaphores: a 64-bit token one rank signals and another waits on, host to host
 * ({@link org.jmscclpp.core.semaphore.Host2HostSemaphore}), host to device and device to device, as in MSCCL++.
 */
@NullMarked
package org.jmscclpp.core.semaphore;

import org.jspecify.annotations.NullMarked;
