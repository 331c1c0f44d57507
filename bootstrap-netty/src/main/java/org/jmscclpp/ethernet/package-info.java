/**
 * The {@code ETHERNET} data transport: TCP connections that carry a communicator's writes, tokens
 * and flushes between ranks on any hosts, for host memory and (staged through pinned memory)
 * device memory. {@link org.jmscclpp.ethernet.EthernetTransportProvider} is found through
 * {@code META-INF/services/org.jmscclpp.core.spi.TransportProvider} and opens one
 * {@link org.jmscclpp.ethernet.EthernetSession} per communicator; what travels on the sockets is
 * described once, in {@link org.jmscclpp.ethernet.EthernetWire}. The communicator reaches it
 * through {@link org.jmscclpp.core.spi}; from the bootstrap it takes only the shared event loops,
 * the interface choice and the lingering close of a connection.
 */
@NullMarked
package org.jmscclpp.ethernet;

import org.jspecify.annotations.NullMarked;
