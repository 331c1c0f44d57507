package org.jmscclpp.core;

import java.lang.System.Logger.Level;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.semaphore.Semaphore;

/**
 * What {@link Communicator#mesh} built: for every other rank, a connection, the peer's memory and
 * a semaphore over the connection. The communicator owns all of it and closes it with itself.
 */
public final class Mesh {

    private static final System.Logger LOG = Log.logger(Mesh.class, Subsystem.INIT);

    private final int rank;
    private final List<Integer> peers;
    private final Map<Integer, Semaphore> semaphores = new TreeMap<>();
    private final Map<Integer, RegisteredMemory> memories = new TreeMap<>();

    Mesh(int rank, List<Integer> peers, List<Semaphore> semaphores, List<RegisteredMemory> memories) {
        this.rank = rank;
        this.peers = List.copyOf(peers);
        for (Semaphore s : semaphores) {
            this.semaphores.put(s.connection().context().remoteRank(), s);
        }
        for (int i = 0; i < peers.size(); i++) {
            this.memories.put(peers.get(i), memories.get(i));
        }
        if (LOG.isLoggable(Level.INFO)) {
            Set<Transport> transports = EnumSet.noneOf(Transport.class);
            for (Semaphore s : semaphores) {
                Connection c = s.connection();
                transports.add(c.transport());
                LOG.log(Level.DEBUG, "rank {0}: connected to rank {1} (tag {2}) over {3}", rank,
                        c.context().remoteRank(), c.context().tag(), c.transport());
            }
            LOG.log(Level.INFO, "rank {0}: mesh connected: {1} peers over {2}", rank, peers.size(), transports);
        }
    }

    /** This rank. */
    public int rank() {
        return rank;
    }

    /** Every other rank, in increasing order. */
    public List<Integer> peers() {
        return Collections.unmodifiableList(peers);
    }

    public Connection connection(int peer) {
        return semaphore(peer).connection();
    }

    /** The memory {@code peer} exchanged, mapped here where the transport allows. */
    public RegisteredMemory remoteMemory(int peer) {
        return lookup(memories, peer);
    }

    /** The semaphore over the connection to {@code peer}. */
    public Semaphore semaphore(int peer) {
        return lookup(semaphores, peer);
    }

    private <V> V lookup(Map<Integer, V> map, int peer) {
        V v = map.get(peer);
        if (v == null) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "rank " + peer + " is not a peer of this mesh "
                    + peers).rank(rank).peer(peer).phase("mesh").build();
        }
        return v;
    }
}
