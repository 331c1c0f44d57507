package org.jmscclpp.core;

/**
 * Who a connection joins, for error messages and bookkeeping.
 *
 * @param rank       this rank
 * @param remoteRank the peer
 * @param tag        the communicator tag the connection was made on
 */
public record ConnectionContext(int rank, int remoteRank, int tag) {
}
