/**
 * The proxy: the {@link org.jmscclpp.core.proxy.Fifo} of 128-bit {@link org.jmscclpp.core.proxy.ProxyTrigger}s that
 * kernels and host threads push, and the {@link org.jmscclpp.core.proxy.ProxyService} whose polling loops turn them into
 * writes, signals and flushes, published as {@link org.jmscclpp.core.proxy.FlushCompletion}s.
 */
@NullMarked
package org.jmscclpp.core.proxy;

import org.jspecify.annotations.NullMarked;
