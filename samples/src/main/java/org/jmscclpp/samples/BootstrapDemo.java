package org.jmscclpp.samples;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.bootstrap.TcpBootstrap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * {@code bootstrap-demo}: every rank initializes a {@link TcpBootstrap} at the root address,
 * allGathers a small card (rank, pid, host, its own init time), checks every slot, meets the others
 * in a barrier, and rank 0 prints one line per rank plus the timings.
 */
public final class BootstrapDemo implements Sample {

    /** Host names longer than this (in UTF-8 bytes) are cut. */
    static final int HOST_BYTES = 64;

    /** Card layout, big-endian: rank int32 | pid int64 | init µs int64 | host length int16 | host UTF-8, padded. */
    static final int CARD_BYTES = 4 + 8 + 8 + 2 + HOST_BYTES;

    private static final Duration OP_TIMEOUT = Duration.ofSeconds(30);

    record Card(int rank, long pid, long initMicros, String host) {
    }

    @Override
    public int run(RankEnvironment env, List<String> args) {
        Sample.requireNoArguments("bootstrap-demo", args);
        int rank = env.rank();
        BootstrapOptions options = BootstrapOptions.fromEnvironment();
        long start = System.nanoTime();
        try (TcpBootstrap bs = TcpBootstrap.create(rank, env.worldSize(), options)) {
            // initialize has its own deadline (options.initTimeout()); ours is only a backstop
            Blocking.done(env.join(bs), options.initTimeout().plusSeconds(5), rank, "initialize");
            long initNanos = System.nanoTime() - start;

            byte[] mine = encode(new Card(rank, ProcessHandle.current().pid(), initNanos / 1000, hostName()));
            long gatherStart = System.nanoTime();
            byte[] all = Blocking.value(bs.allGather(mine, OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), rank, "allGather");
            long gatherNanos = System.nanoTime() - gatherStart;
            List<Card> cards = check(all, env.worldSize(), rank);

            Blocking.done(bs.barrier(OP_TIMEOUT), OP_TIMEOUT.plusSeconds(5), rank, "barrier");
            if (rank == 0) {
                System.out.printf("%-6s %-10s %-24s %s%n", "rank", "pid", "host", "init ms");
                long slowest = 0;
                for (Card c : cards) {
                    System.out.printf("%-6d %-10d %-24s %.1f%n", c.rank(), c.pid(), c.host(), c.initMicros() / 1e3);
                    slowest = Math.max(slowest, c.initMicros());
                }
                System.out.printf("bootstrap-demo: %d ranks, init %.1f ms (slowest rank), allGather of %d B/rank %.1f µs"
                        + " (rank 0)%n", env.worldSize(), slowest / 1e3, CARD_BYTES, gatherNanos / 1e3);
            }
        }
        return 0;
    }

    static byte[] encode(Card c) {
        byte[] host = truncatedUtf8(c.host());
        return ByteBuffer.allocate(CARD_BYTES).putInt(c.rank()).putLong(c.pid()).putLong(c.initMicros())
                .putShort((short) host.length).put(host).array();
    }

    static Card decode(byte[] all, int offset) {
        ByteBuffer b = ByteBuffer.wrap(all, offset, CARD_BYTES);
        int rank = b.getInt();
        long pid = b.getLong();
        long init = b.getLong();
        int len = b.getShort();
        // a bad length decodes as an empty host, which check() rejects
        String host = len >= 0 && len <= HOST_BYTES ? new String(all, b.position(), len, StandardCharsets.UTF_8) : "";
        return new Card(rank, pid, init, host);
    }

    /** Decodes every slot and checks it holds the card of the rank it belongs to. */
    static List<Card> check(byte[] all, int nRanks, int myRank) {
        if (all.length != nRanks * CARD_BYTES) {
            throw wrong(myRank, "allGather returned " + all.length + " bytes, expected " + nRanks + " x " + CARD_BYTES);
        }
        List<Card> cards = new ArrayList<>(nRanks);
        for (int r = 0; r < nRanks; r++) {
            Card c = decode(all, r * CARD_BYTES);
            if (c.rank() != r || c.pid() <= 0 || c.initMicros() < 0 || c.host().isEmpty()) {
                throw wrong(myRank, "slot " + r + " holds " + c);
            }
            cards.add(c);
        }
        return cards;
    }

    private static JmscclppException wrong(int rank, String detail) {
        return JmscclppException.builder(ErrorCode.INTERNAL_ERROR, detail).rank(rank).phase("allGather check").build();
    }

    private static byte[] truncatedUtf8(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        int end = Math.min(b.length, HOST_BYTES);
        // never cut a multi-byte character in half: back up to the start of a character
        while (end < b.length && end > 0 && (b[end] & 0xC0) == 0x80) {
            end--;
        }
        return Arrays.copyOf(b, end);
    }

    private static String hostName() {
        try {
            String h = InetAddress.getLocalHost().getHostName();
            if (!h.isBlank()) {
                return h;
            }
        } catch (UnknownHostException e) {
            // fall through to the environment
        }
        String h = System.getenv("HOSTNAME");
        return h == null || h.isBlank() ? "unknown-host" : h;
    }
}
