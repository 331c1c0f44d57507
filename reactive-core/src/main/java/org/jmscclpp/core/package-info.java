/**
 * The API every rank uses: {@link org.jmscclpp.core.Bootstrap}, {@link org.jmscclpp.core.UniqueId},
 * {@link org.jmscclpp.core.Communicator}, {@link org.jmscclpp.core.RegisteredMemory}, {@link org.jmscclpp.core.Connection},
 * backends and buffers, transports, and the errors ({@link org.jmscclpp.core.ErrorCode}). Proxies, channels, semaphores,
 * packets and collectives each have their own package beside this one.
 */
@NullMarked
package org.jmscclpp.core;

import org.jspecify.annotations.NullMarked;
