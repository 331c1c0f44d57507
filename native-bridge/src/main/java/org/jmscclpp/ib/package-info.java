/**
 * The InfiniBand verbs transport ({@code IB0..IB7}) for host memory, through libibverbs:
 * {@link org.jmscclpp.ib.IbTransportProvider}, found through {@code META-INF/services}, and what it
 * builds on: devices and ports, protection domains, registered regions, reliable-connected queue
 * pairs and the connections over them.
 */
@NullMarked
package org.jmscclpp.ib;

import org.jspecify.annotations.NullMarked;
