package org.jmscclpp.core.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.host.HostBackend;
import org.jmscclpp.core.spi.Waiting;
import org.jmscclpp.testkit.ChildJvm;
import org.jmscclpp.testkit.FifoTesting;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A producer in another process pushes into this process's fifo through a HOST_IPC mapping of its buffer. */
class FifoProcessTest {

    private static final Duration DEADLINE = Duration.ofSeconds(60);

    @TempDir
    Path dir;
    @TempDir
    Path logs;

    @Test
    void childProcessAndLocalThreadPushWhileThisProcessConsumes() throws Exception {
        int childCount = 10_000;
        int localCount = 10_000;
        int capacity = 64;   // small, so that both producers find the ring full now and then
        SplittableRandom random = new SplittableRandom(0xC41D_F1F0L);
        try (HostBackend backend = HostBackend.open(dir);
             Fifo fifo = Fifo.create(backend, capacity);
             FifoTesting.Workers workers = new FifoTesting.Workers()) {
            String handle = HexFormat.of().formatHex(backend.exportMemory(fifo.buffer(), Transport.HOST_IPC));
            try (ChildJvm child = ChildJvm.start(logs.resolve("child.log"), FifoChild.class, dir.toString(), handle,
                    Long.toString(fifo.buffer().size()), Integer.toString(capacity), Integer.toString(childCount))) {
                FifoProducer local = fifo.producer();
                // local triggers have type 0 (snd below 2^50), the child's never do
                workers.start("local-producer", () -> {
                    for (long i = 0; i < localCount; i++) {
                        local.push(ProxyTrigger.decode(~i, i), DEADLINE);
                    }
                });
                long deadline = System.nanoTime() + DEADLINE.toNanos();
                long nextChild = 0;
                long nextLocal = 0;
                long[] out = new long[2];
                for (long pos = 0; pos < childCount + localCount; pos++) {
                    while (!Waiting.await(() -> fifo.poll(out), Math.min(deadline, System.nanoTime() + 100_000_000L))) {
                        workers.check();
                        boolean gone = !child.process().isAlive();
                        if (fifo.poll(out)) {
                            break;
                        }
                        if (gone || System.nanoTime() - deadline > 0) {
                            throw new AssertionError("no trigger at position " + pos + " (" + nextChild + " of the "
                                    + "child's, " + nextLocal + " local)" + (gone ? " and the child exited" : "")
                                    + "; child output:\n" + child.output());
                        }
                    }
                    ProxyTrigger t = ProxyTrigger.decode(out[0], out[1]);
                    if (t.type() == 0) {
                        assertEquals(~nextLocal, t.fst(), "local trigger at position " + pos);
                        assertEquals(nextLocal++, t.snd(), "local trigger at position " + pos);
                    } else {
                        assertEquals(FifoChild.trigger(nextChild++), t, "child trigger at position " + pos);
                    }
                    fifo.pop();
                    if (random.nextInt(256) == 0) {
                        // a slow proxy now and then: the producers find the ring full and wait
                        for (int s = random.nextInt(200_000); s > 0; s--) {
                            Thread.onSpinWait();
                        }
                    }
                }
                assertEquals(childCount, nextChild);
                assertEquals(localCount, nextLocal);
                assertFalse(fifo.poll(out));
                assertEquals(0, child.waitFor(DEADLINE), child::output);
                assertTrue(child.output().contains("pushed " + childCount), child::output);
                workers.join(DEADLINE);
            }
        }
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(0, left.count(), "the fifo's file is gone");
        }
    }

    /**
     * A child process fills a ring nobody consumes, gives up on its next push and exits: the
     * parent then finds the child's triggers, nothing after them, and its own next push at the
     * position the child did not take.
     */
    @Test
    void aProducerProcessThatGaveUpOnAFullRingLeavesItUsable() throws Exception {
        int capacity = 8;
        try (HostBackend backend = HostBackend.open(dir); Fifo fifo = Fifo.create(backend, capacity)) {
            String handle = HexFormat.of().formatHex(backend.exportMemory(fifo.buffer(), Transport.HOST_IPC));
            try (ChildJvm child = ChildJvm.start(logs.resolve("child.log"), FifoChild.class, dir.toString(), handle,
                    Long.toString(fifo.buffer().size()), Integer.toString(capacity), "12", "300")) {
                assertEquals(4, child.waitFor(DEADLINE), child::output);
                assertTrue(child.output().contains("gave up after " + capacity + " pushed")
                        && child.output().contains("TIMEOUT"), child::output);
            }
            long[] out = new long[2];
            for (long i = 0; i < capacity; i++) {
                assertEquals(i, FifoTesting.take(fifo, out, DEADLINE));
                assertEquals(FifoChild.trigger(i), ProxyTrigger.decode(out[0], out[1]), "the child's trigger " + i);
            }
            assertFalse(fifo.poll(out), "nothing at position " + capacity + ": the push that gave up claimed nothing");
            FifoProducer local = fifo.producer();
            assertEquals(capacity, local.push(ProxyTrigger.decode(7, 7), DEADLINE));
            assertEquals(capacity, FifoTesting.take(fifo, out, DEADLINE));
            assertEquals(7, out[0]);
            local.sync(capacity, DEADLINE);
        }
    }
}
