/**
 * Channels between two ranks: {@link org.jmscclpp.core.channel.PortChannel} (put, signal and flush through the
 * proxy, over any transport) and {@link org.jmscclpp.core.channel.MemoryChannel} (loads and stores straight into a
 * peer's mapped memory), each with the device handle its kernels use.
 */
@NullMarked
package org.jmscclpp.core.channel;

import org.jspecify.annotations.NullMarked;
