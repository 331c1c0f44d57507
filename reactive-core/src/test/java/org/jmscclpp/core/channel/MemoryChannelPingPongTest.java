package org.jmscclpp.core.channel;

import static org.jmscclpp.testkit.MemoryChannelPair.STEP;
import static org.jmscclpp.testkit.MemoryChannelPair.check;
import static org.jmscclpp.testkit.MemoryChannelPair.fill;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import org.jmscclpp.core.packet.LL16Packet;
import org.jmscclpp.core.packet.LL8Packet;
import org.jmscclpp.testkit.FifoTesting;
import org.jmscclpp.testkit.MemoryChannelPair;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * MSCCL++'s MemoryChannelOneToOneTest on two ranks of this JVM, Java threads as kernels: put and
 * get ping-pongs, LL8 and LL16 packet ping-pongs (flag = round + 1), every element checked every
 * round; and the same with thread groups, whose threads split each range between them.
 */
class MemoryChannelPingPongTest {

    /** What rank 1 adds to its values, so that a stale value of rank 0 never passes for one of rank 1 (MSCCL++'s). */
    private static final int RANK1_OFFSET = 10_000_000;
    private static final Duration RUN = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    /** MSCCL++'s PutPingPong: rank 0 puts {@code i + j}, rank 1 checks and puts {@code 10^7 + i + j} back, in place. */
    @ParameterizedTest(name = "{0} ints, {1} rounds")
    @CsvSource({"1, 5000", "1024, 5000", "1048576, 200"})
    void putPingPong(int nElem, int rounds) throws Exception {
        long bytes = 4L * nElem;
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, bytes, 0)) {
            pair.run((rank, h, data) -> {
                for (int i = 0; i < rounds; i++) {
                    if (rank == 0) {
                        if (i > 0) {
                            h.await(STEP);
                            check(data, 0, nElem, RANK1_OFFSET + i - 1, "rank 0, round " + i);
                        }
                        fill(data, 0, nElem, i);
                        h.put(0, 0, bytes);
                        h.signal();
                    } else {
                        h.await(STEP);
                        check(data, 0, nElem, i, "rank 1, round " + i);
                        if (i < rounds - 1) {
                            fill(data, 0, nElem, RANK1_OFFSET + i);
                            h.put(0, bytes);
                            h.signal();
                        }
                    }
                }
            });
            assertEquals(rounds - 1, pair.channels.get(0).semaphore().deviceHandle().expectedValue());
            assertEquals(rounds, pair.channels.get(1).semaphore().deviceHandle().expectedValue());
        }
    }

    /** MSCCL++'s GetPingPong: ranks take turns to write their own buffer and signal; the other gets it and checks. */
    @ParameterizedTest(name = "{0} ints, {1} rounds")
    @CsvSource({"1, 5000", "1024, 5000", "1048576, 200"})
    void getPingPong(int nElem, int rounds) throws Exception {
        long bytes = 4L * nElem;
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, bytes, 0)) {
            pair.run((rank, h, data) -> {
                int own = rank == 0 ? 0 : RANK1_OFFSET;
                int peer = rank == 0 ? RANK1_OFFSET : 0;
                for (int i = 0; i < rounds; i++) {
                    if ((rank ^ (i & 1)) == 0) {
                        fill(data, 0, nElem, own + i);
                        h.signal();
                    } else {
                        h.await(STEP);
                        h.get(0, 0, bytes);
                        check(data, 0, nElem, peer + i, "rank " + rank + ", round " + i);
                    }
                }
            });
        }
    }

    /** MSCCL++'s LL16PacketPingPong: packets straight into the peer's packet buffer, no semaphore, flag = round + 1. */
    @ParameterizedTest(name = "{0} ints, {1} rounds")
    @CsvSource({"2, 5000", "1024, 5000", "1048576, 50"})
    void ll16PacketPingPong(int nElem, int rounds) throws Exception {
        packetPingPong(nElem, rounds, true);
    }

    /** MSCCL++'s LL8PacketPingPong. */
    @ParameterizedTest(name = "{0} ints, {1} rounds")
    @CsvSource({"1, 5000", "1024, 5000", "1048576, 50"})
    void ll8PacketPingPong(int nElem, int rounds) throws Exception {
        packetPingPong(nElem, rounds, false);
    }

    private void packetPingPong(int nElem, int rounds, boolean ll16) throws Exception {
        long bytes = 4L * nElem;
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, bytes, 2 * bytes)) {
            pair.run((rank, h, data) -> {
                int putBase = rank == 0 ? 0 : RANK1_OFFSET;
                int getBase = rank == 0 ? RANK1_OFFSET : 0;
                for (int i = 0; i < rounds; i++) {
                    int flag = i + 1;
                    if ((rank ^ (i & 1)) == 0) {
                        fill(data, 0, nElem, putBase + i);
                        if (ll16) {
                            h.putPackets(0, 0, bytes, flag);
                        } else {
                            h.putLL8Packets(0, 0, bytes, flag);
                        }
                    } else {
                        if (ll16) {
                            h.unpackPackets(0, 0, bytes, flag, STEP);
                        } else {
                            h.unpackLL8Packets(0, 0, bytes, flag, STEP);
                        }
                        check(data, 0, nElem, getBase + i, "rank " + rank + ", round " + i);
                    }
                }
            });
            // the last round's packets: rank 1 received round rounds - 1 if it is even, rank 0 otherwise
            int receiver = (rounds - 1) % 2 == 0 ? 1 : 0;
            MemorySegment packets = pair.packets(receiver);
            for (long at = 0; at < 2 * bytes; at += 8) {   // in both formats, every word's high half is a flag
                assertEquals(rounds, packets.get(ValueLayout.JAVA_INT, at + 4), "flag at " + at);
            }
        }
    }

    /**
     * put and get by groups of three threads per rank over a range that is no multiple of the
     * 64-byte share unit: each thread does its share, the group joins, then one thread signals.
     */
    @Test
    void putAndGetWithThreadGroups() throws Exception {
        int nElem = (1 << 20) + 3;
        long bytes = 4L * nElem;
        int threads = 3;
        int rounds = 20;
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, bytes, 0)) {
            pair.run((rank, h, data) -> {
                for (int i = 0; i < rounds; i++) {
                    if (rank == 0) {
                        fill(data, 0, nElem, i);
                        group(threads, t -> h.put(0, 0, bytes, t, threads));
                        h.signal();
                        h.await(STEP);
                        group(threads, t -> h.get(0, bytes, t, threads));
                        check(data, 0, nElem, RANK1_OFFSET + i, "rank 0 after get, round " + i);
                    } else {
                        h.await(STEP);
                        check(data, 0, nElem, i, "rank 1 after put, round " + i);
                        fill(data, 0, nElem, RANK1_OFFSET + i);
                        h.signal();
                    }
                }
            });
        }
    }

    /**
     * LL16 and LL8 ping-pongs by groups of three threads per rank, without any barrier: each
     * thread fills, sends, receives and checks only its own share, which is the same range on
     * both ranks, so each share is a ping-pong of its own (as MSCCL++'s kernels rely on).
     */
    @ParameterizedTest(name = "LL16 {0}")
    @CsvSource({"true", "false"})
    void packetPingPongWithThreadGroups(boolean ll16) throws Exception {
        int nElem = (1 << 16) + 2;
        long bytes = 4L * nElem;
        int threads = 3;
        int rounds = 500;
        int packetBytes = ll16 ? LL16Packet.BYTES : LL8Packet.BYTES;
        int intsPerPacket = ll16 ? 2 : 1;
        long packetCount = nElem / intsPerPacket;
        try (MemoryChannelPair pair = new MemoryChannelPair(dir, bytes, 2 * bytes)) {
            pair.run((rank, h, data) -> group(threads, t -> {
                long unit = 64 / packetBytes;
                long first = intsPerPacket * MemoryChannel.shareStart(packetCount, unit, t, threads);
                long end = intsPerPacket * MemoryChannel.shareStart(packetCount, unit, t + 1, threads);
                int putBase = rank == 0 ? 0 : RANK1_OFFSET;
                int getBase = rank == 0 ? RANK1_OFFSET : 0;
                for (int i = 0; i < rounds; i++) {
                    int flag = i + 1;
                    if ((rank ^ (i & 1)) == 0) {
                        fill(data, first, end, putBase + i);
                        if (ll16) {
                            h.putPackets(0, 0, bytes, t, threads, flag);
                        } else {
                            h.putLL8Packets(0, 0, bytes, t, threads, flag);
                        }
                    } else {
                        if (ll16) {
                            h.unpackPackets(0, 0, bytes, t, threads, flag, STEP);
                        } else {
                            h.unpackLL8Packets(0, 0, bytes, t, threads, flag, STEP);
                        }
                        check(data, first, end, getBase + i, "rank " + rank + " thread " + t + ", round " + i);
                    }
                }
            }));
        }
    }

    /** The body of one thread of a group. */
    @FunctionalInterface
    private interface GroupThread {
        void run(int threadId) throws Exception;
    }

    /** Runs {@code body} on {@code n} platform threads and joins them: what a kernel's thread block does between barriers. */
    private static void group(int n, GroupThread body) throws Exception {
        try (FifoTesting.Workers workers = new FifoTesting.Workers()) {
            for (int t = 0; t < n; t++) {
                int id = t;
                workers.start("thread-" + t, () -> body.run(id));
            }
            MemoryChannelPair.awaitAll(workers, RUN);
        }
    }
}
