/**
 * The TCP bootstrap over Netty: {@link org.jmscclpp.bootstrap.TcpBootstrap} with its options
 * ({@link org.jmscclpp.bootstrap.BootstrapOptions}), a rank's identity from the launcher's environment
 * and the launcher's own rendezvous ({@link org.jmscclpp.bootstrap.RankEnvironment}: jmscclpp's variables, PMIx
 * under {@code mpirun} or {@code srun}, torchrun's TCPStore through {@code TorchStoreClient}), the unique id and
 * the root's address, the root
 * that hands out the address book, the links between ranks and their mailboxes, the bootstrap's
 * collectives, the choice of network interface, and the event loops every bootstrap of a JVM
 * shares. What travels on the connections is in {@link org.jmscclpp.bootstrap.wire}; the
 * {@code ETHERNET} data transport is in {@link org.jmscclpp.ethernet}.
 */
@NullMarked
package org.jmscclpp.bootstrap;

import org.jspecify.annotations.NullMarked;
