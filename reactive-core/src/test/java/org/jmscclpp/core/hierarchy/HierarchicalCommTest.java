package org.jmscclpp.core.hierarchy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.collective.CollectiveComm;
import org.jmscclpp.core.collective.CollectiveOptions;
import org.jmscclpp.core.collective.DataType;
import org.jmscclpp.core.collective.TuningTable;
import org.jmscclpp.core.hierarchy.HierarchicalComm.RailPreference;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.testkit.HostBackendJob;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Mono;

/**
 * {@link HierarchicalComm}'s own arithmetic and its links for sends and receives (its collectives
 * run in HostCollectivesTest, over pretend hosts).
 */
class HierarchicalCommTest {

    private static final Duration LIMIT = Duration.ofSeconds(120);

    /** Each pretend host's communicator: the host backend's own engine over the host's ranks. */
    private static final HierarchicalComm.Level HOST_LEVEL = new HierarchicalComm.Level() {
        @Override
        public Mono<CollectiveComm> create(Communicator hostCommunicator, CollectiveOptions options,
                                           TuningTable tuning) {
            return CollectiveComm.create(hostCommunicator, options);
        }

        @Override
        public void checkBuffer(Backend backend, int rank, DeviceBuffer buffer, String which) {
        }
    };

    /**
     * Two ranks on two pretend hosts, each sending to the other in the same groups (each direction
     * has a link of its own, so neither waits for the other): a message of several of the link's
     * chunks, a small one and an empty one each way, every element checked; both ranks then hold
     * two links, to and from each other, and a second round reuses them.
     */
    @Test
    @Timeout(180)
    void sendsAndReceivesBetweenHostsGoOverALinkOfTheTwo() {
        int n = 2;
        long big = (3 * HostRail.CHUNK) / 4 + 5;   // floats: three chunks and a bit
        long[] counts = {big, 7, 0};
        try (HostBackendJob job = new HostBackendJob(n, (r, c) -> HierarchicalComm.create(c,
                CollectiveOptions.defaults(), TuningTable.empty(), HOST_LEVEL, () -> 0x5EED0000L + r, Transport.HOST_IPC),
                LIMIT)) {
            List<CollectiveComm> comms = job.comms();
            List<HostBackend> backends = job.backends;
            for (int round = 0; round < 2; round++) {
                List<List<DeviceBuffer>> sends = new ArrayList<>();
                List<List<DeviceBuffer>> recvs = new ArrayList<>();
                List<Mono<Void>> calls = new ArrayList<>();
                for (int r = 0; r < n; r++) {
                    List<DeviceBuffer> s = new ArrayList<>();
                    List<DeviceBuffer> d = new ArrayList<>();
                    for (int m = 0; m < counts.length; m++) {
                        DeviceBuffer b = backends.get(r).allocate(Math.max(4, counts[m] * 4));
                        for (long i = 0; i < counts[m]; i++) {
                            b.hostSegment().set(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * i, value(round, r, m, i));
                        }
                        s.add(b);
                        d.add(backends.get(r).allocate(Math.max(4, counts[m] * 4)));
                    }
                    sends.add(s);
                    recvs.add(d);
                    int peer = 1 - r;
                    calls.add(comms.get(r).group(g -> {
                        for (int m = 0; m < counts.length; m++) {
                            g.recv(d.get(m), counts[m], DataType.FLOAT32, peer);
                            g.send(s.get(m), counts[m], DataType.FLOAT32, peer);
                        }
                    }));
                }
                Mono.when(calls).block(LIMIT);
                for (int r = 0; r < n; r++) {
                    for (int m = 0; m < counts.length; m++) {
                        MemorySegment got = recvs.get(r).get(m).hostSegment();
                        for (long i = 0; i < counts[m]; i++) {
                            assertEquals(value(round, 1 - r, m, i), got.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * i),
                                    "round " + round + ", rank " + r + ", message " + m + ", element " + i);
                        }
                    }
                    // a link to the peer and one from it
                    assertEquals(Set.of(1 - r, -1 - (1 - r)), ((HierarchicalComm) comms.get(r)).links(), "rank " + r);
                }
                sends.forEach(l -> l.forEach(DeviceBuffer::close));
                recvs.forEach(l -> l.forEach(DeviceBuffer::close));
            }
        }
    }

    /**
     * A rank's preference for the rails' transport: unset, IB0 where usable, else ETHERNET (here
     * no module provides IB0); named, in any case, a network transport this rank can use, else a
     * problem saying why (this module's tests have no ETHERNET provider either), which fails every
     * rank once the ranks have exchanged preferences: its own reason on that rank, its name on
     * the others.
     */
    @Test
    void aRanksRailTransportIsTheNamedOneOrTheBestItHas() {
        String phase = "collective setup";
        try (HostBackend b = HostBackend.open()) {
            assertEquals(new RailPreference(Transport.ETHERNET, false), HierarchicalComm.railPreference(null, b));
            assertEquals(new RailPreference(Transport.ETHERNET, false), HierarchicalComm.railPreference(" ", b));
            for (String bad : List.of("ib9", "HOST_IPC", "tcp")) {
                RailPreference p = HierarchicalComm.railPreference(bad, b);
                assertTrue(p.named() && p.problem() != null && p.problem().contains("MSCCLPP_RAIL_TRANSPORT=" + bad
                        + " names no network transport"), p.toString());
            }
            RailPreference ib = HierarchicalComm.railPreference("ib0", b);
            assertEquals(Transport.IB0, ib.transport());
            assertTrue(ib.problem() != null && ib.problem().contains(
                    "MSCCLPP_RAIL_TRANSPORT=ib0, which this rank cannot use: no module") && ib.problem()
                    .contains("provides IB0"), ib.toString());
            RailPreference ok = new RailPreference(Transport.IB0, true);
            JmscclppException own = assertThrows(JmscclppException.class,
                    () -> HierarchicalComm.agreeOnRails(new RailPreference[] {ok, ib}, 1, phase));
            assertEquals(ErrorCode.INVALID_USAGE, own.code());
            assertTrue(own.getMessage().contains("which this rank cannot use") && own.rank() == 1, own.getMessage());
            JmscclppException other = assertThrows(JmscclppException.class,
                    () -> HierarchicalComm.agreeOnRails(new RailPreference[] {ok, ib}, 0, phase));
            assertEquals(ErrorCode.INVALID_USAGE, other.code());
            assertTrue(other.getMessage().contains("rank 1 names a rails' transport (MSCCLPP_RAIL_TRANSPORT) that it "
                    + "cannot use") && other.peer() == 1, other.getMessage());
        }
    }

    /**
     * The job's rails' transport: a named one when every rank named the same; INVALID_USAGE
     * naming two ranks when they differ or one left it unset; unnamed, the one every rank chose,
     * else ETHERNET (one host without IB takes every rail to ETHERNET).
     */
    @Test
    void theRanksAgreeOnTheRailsTransport() {
        RailPreference ib = new RailPreference(Transport.IB0, false);
        RailPreference eth = new RailPreference(Transport.ETHERNET, false);
        RailPreference ib1 = new RailPreference(Transport.IB1, true);
        String phase = "collective setup";
        assertEquals(Transport.IB0, HierarchicalComm.agreeOnRails(new RailPreference[] {ib, ib, ib}, 0, phase));
        assertEquals(Transport.ETHERNET, HierarchicalComm.agreeOnRails(new RailPreference[] {ib, eth, ib}, 0, phase));
        assertEquals(Transport.IB1, HierarchicalComm.agreeOnRails(new RailPreference[] {ib1, ib1}, 1, phase));
        JmscclppException unset = assertThrows(JmscclppException.class,
                () -> HierarchicalComm.agreeOnRails(new RailPreference[] {eth, ib1, ib1}, 2, phase));
        assertEquals(ErrorCode.INVALID_USAGE, unset.code());
        assertTrue(unset.getMessage().contains("the ranks disagree on MSCCLPP_RAIL_TRANSPORT: rank 1 has IB1, rank 0 "
                + "has it unset"), unset.getMessage());
        RailPreference namedEth = new RailPreference(Transport.ETHERNET, true);
        JmscclppException differ = assertThrows(JmscclppException.class,
                () -> HierarchicalComm.agreeOnRails(new RailPreference[] {namedEth, namedEth, ib1}, 0, phase));
        assertTrue(differ.getMessage().contains("rank 0 has ETHERNET, rank 2 has IB1") && differ.peer() == 2,
                differ.getMessage());
    }

    private static float value(int round, int rank, int message, long i) {
        return round * 1e6f + rank * 1e5f + message * 1e4f + (i % 9973);
    }

    /**
     * The hierarchical allReduce's AVG divides a sum once: the quotient of every type is the one
     * {@link org.jmscclpp.core.collective.Reductions#reduceBits} gives for an average, a sum of -0
     * included (it stays -0).
     */
    @Test
    void theHierarchicalAverageDividesASumAsReduceBitsAverages() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(8);
            s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, -0.0f);
            HierarchicalComm.divide(DataType.FLOAT32, s, 0, 1, 4);
            assertEquals(Float.floatToRawIntBits(-0.0f),
                    Float.floatToRawIntBits(s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0)));
            s.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0, -0.0);
            HierarchicalComm.divide(DataType.FLOAT64, s, 0, 1, 3);
            assertEquals(Double.doubleToRawLongBits(-0.0),
                    Double.doubleToRawLongBits(s.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0)));
            s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, 7.0f);
            HierarchicalComm.divide(DataType.FLOAT32, s, 0, 1, 2);
            assertEquals(3.5f, s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
            s.set(ValueLayout.JAVA_INT_UNALIGNED, 0, -7);
            HierarchicalComm.divide(DataType.INT32, s, 0, 1, 2);
            assertEquals(-3, s.get(ValueLayout.JAVA_INT_UNALIGNED, 0), "truncates toward zero");
            s.set(ValueLayout.JAVA_INT_UNALIGNED, 0, -2);
            HierarchicalComm.divide(DataType.UINT32, s, 0, 1, 2);
            assertEquals(0x7FFFFFFF, s.get(ValueLayout.JAVA_INT_UNALIGNED, 0), "unsigned division");
        }
    }
}
