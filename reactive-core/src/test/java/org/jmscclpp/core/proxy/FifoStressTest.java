package org.jmscclpp.core.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Path;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.testkit.FifoTesting;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Seeded random rounds of producers and a consumer on small and large rings: random producer
 * counts, shared or own producer handles, random pauses on both sides, syncs, full rings. Every
 * trigger carries its producer and sequence number and a check word over all 63 bits of
 * {@code snd}; the consumer checks per-producer order, and that nothing is lost or duplicated.
 */
class FifoStressTest {

    private static final long SEED = 0x5EED_F1F0_2026L;
    private static final int[] CAPACITIES = {1, 2, 4, 8, 64, 512};
    private static final int ROUNDS = 18;
    private static final Duration STEP = Duration.ofSeconds(10);
    private static final int SEQ_BITS = 40;

    @TempDir
    Path dir;

    @Test
    void seededRandomRounds() throws Exception {
        SplittableRandom random = new SplittableRandom(SEED);
        try (HostBackend backend = HostBackend.open(dir)) {
            for (int round = 0; round < ROUNDS; round++) {
                int capacity = CAPACITIES[round % CAPACITIES.length];
                int producers = 1 + random.nextInt(5);
                // on small rings producers and the consumer hand over trigger by trigger, parking in
                // between (tens of microseconds each): fewer triggers keep those rounds short
                int total = capacity <= 2 ? 2_000 : capacity <= 8 ? 5_000 : 30_000;
                int each = total / producers + random.nextInt(200);
                round(backend, random.split(), "seed 0x" + Long.toHexString(SEED) + " round " + round + " (capacity "
                        + capacity + ", " + producers + " producers x " + each + ")", capacity, producers, each);
            }
        }
    }

    private static void round(HostBackend backend, SplittableRandom random, String where, int capacity, int producers,
                              int each) throws Exception {
        try (Fifo fifo = Fifo.create(backend, capacity); FifoTesting.Workers workers = new FifoTesting.Workers()) {
            FifoProducer shared = fifo.producer();
            CountDownLatch go = new CountDownLatch(1);
            for (int p = 0; p < producers; p++) {
                long id = p;
                SplittableRandom mine = random.split();
                FifoProducer producer = mine.nextBoolean() ? shared : fifo.producer();
                int pauseOneIn = 1 + mine.nextInt(64);
                workers.start("producer-" + p, () -> {
                    if (!go.await(30, TimeUnit.SECONDS)) {
                        throw new AssertionError(where + ": no start signal");
                    }
                    for (long seq = 0; seq < each; seq++) {
                        long fst = id << SEQ_BITS | seq;
                        long pos = producer.push(ProxyTrigger.decode(fst, check(fst)), STEP);
                        if (mine.nextInt(pauseOneIn) == 0) {
                            for (int s = mine.nextInt(2_000); s > 0; s--) {
                                Thread.onSpinWait();
                            }
                        }
                        if (mine.nextInt(512) == 0) {
                            producer.sync(pos, STEP);
                        }
                    }
                });
            }
            go.countDown();
            int consumerPauseOneIn = 1 + random.nextInt(128);
            long[] next = new long[producers];
            long[] out = new long[2];
            long total = (long) producers * each;
            for (long pos = 0; pos < total; pos++) {
                if (random.nextInt(consumerPauseOneIn) == 0) {
                    for (int s = random.nextInt(5_000); s > 0; s--) {
                        Thread.onSpinWait();
                    }
                }
                try {
                    assertEquals(pos, FifoTesting.take(fifo, out, STEP));
                } catch (AssertionError e) {
                    workers.check();
                    throw new AssertionError(where + ": " + e.getMessage(), e);
                }
                long id = out[0] >>> SEQ_BITS;
                if (id >= producers) {
                    throw new AssertionError(where + ": producer id " + id + " at position " + pos);
                }
                int p = (int) id;
                assertEquals(next[p]++, out[0] & ((1L << SEQ_BITS) - 1), () -> where + ": order of producer " + p
                        + " at position " + fifo.tail());
                assertEquals(check(out[0]), out[1], () -> where + ": check word at position " + fifo.tail());
            }
            workers.join(STEP);
            for (int p = 0; p < producers; p++) {
                assertEquals(each, next[p], where + ": triggers of producer " + p);
            }
            assertFalse(fifo.poll(out), where + ": a trigger after the last");
        }
    }

    /** A hash of {@code fst} over 63 bits, so that every bit of {@code snd} but the commit bit is checked. */
    private static long check(long fst) {
        long z = fst * 0x9E37_79B9_7F4A_7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58_476D_1CE4_E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D0_49BB_1331_11EBL;
        return (z ^ (z >>> 31)) & Long.MAX_VALUE;
    }
}
