/**
 * Collectives of jobs whose ranks span hosts, for every backend: {@link org.jmscclpp.core.hierarchy.HierarchicalComm}
 * runs each op as steps inside each host, on the backend's own collective communicator of that host's ranks
 * (a {@code SubsetBootstrap} view of them), and steps between hosts on rails ({@code HostRail}): one-sided writes and
 * semaphore signals over the network transport in host memory.
 *
 * <p>Not an application API: the package is exported to the jmscclpp modules whose collective engines use it
 * (applications call {@link org.jmscclpp.core.collective.CollectiveComm#create}, which picks it when the ranks span
 * hosts).
 */
@NullMarked
package org.jmscclpp.core.hierarchy;

import org.jspecify.annotations.NullMarked;
