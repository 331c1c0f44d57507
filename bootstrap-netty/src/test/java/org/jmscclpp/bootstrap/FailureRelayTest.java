package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A rank's failure goes out to its peers before anything on that rank can see it: a caller who
 * sees the failure and closes at once sends its goodbyes after the failure report, so the peers
 * learn which rank failed and why, not merely that it left.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FailureRelayTest {

    private static final Duration STEP = Duration.ofSeconds(30);

    /**
     * Ranks 0 and 1 wait for a message from rank 2; rank 2 aborts while a thread of its own
     * spins on operations and closes rank 2 the moment one fails. The abort's warning is held
     * (a slow log handler) until that thread has closed, so the close comes as early as it can.
     * Both waits must end with rank 2's ABORTED and its reason.
     */
    @Test
    void aRankThatClosesTheMomentItSeesItsOwnFailureStillTellsItsPeersWhy() throws Exception {
        try (LocalJob job = LocalJob.withId(3, BootstrapOptions.builder().build(), STEP)) {
            List<CompletableFuture<byte[]>> waits = List.of(
                    job.rank(0).recv(2, 5, STEP).toFuture(), job.rank(1).recv(2, 5, STEP).toFuture());
            TcpBootstrap culprit = job.rank(2);
            CountDownLatch closed = new CountDownLatch(1);
            Thread closer = Thread.ofPlatform().name("closes-on-failure").start(() -> {
                try {
                    while (true) {
                        culprit.send(2, 9, new byte[0]).block(STEP);
                        culprit.recv(2, 9).block(STEP);
                    }
                } catch (JmscclppException seen) {
                    culprit.close();
                } finally {
                    closed.countDown();
                }
            });
            Thread aborting = Thread.currentThread();
            Handler slow = new Handler() {
                @Override
                public void publish(LogRecord r) {
                    if (Thread.currentThread() == aborting && r.getLevel() == Level.WARNING) {
                        try {
                            closed.await(10, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                }

                @Override
                public void flush() {
                }

                @Override
                public void close() {
                }
            };
            Logger logger = Logger.getLogger(TcpBootstrap.class.getName());
            logger.addHandler(slow);
            try {
                culprit.abort("the test aborts rank 2");
            } finally {
                logger.removeHandler(slow);
            }
            closer.join(STEP.toMillis());
            for (CompletableFuture<byte[]> wait : waits) {
                JmscclppException e = assertInstanceOf(JmscclppException.class,
                        assertThrows(ExecutionException.class, () -> wait.get(20, TimeUnit.SECONDS)).getCause());
                assertEquals(ErrorCode.ABORTED, e.code(), e.getMessage());
                assertEquals(2, e.peer(), e.getMessage());
                assertTrue(e.getMessage().contains("the test aborts rank 2"), e.getMessage());
            }
        }
    }

    /**
     * From {@link Collectives#TREE_MIN_RANKS} ranks no ring connects the job at start, so a rank can
     * leave without anyone hearing (here the last rank closes while connected to nobody; a killed
     * process is the same). Rank 0 then sends to it and its dial is refused; rank 1, which never
     * dials it, waits for a message rank 0 would send next. The refused dial fails the job once the
     * drain window passes without other news, and the failure reaches rank 1 over its connection
     * with rank 0: both end naming the unreachable rank, long before the 30 s deadline.
     */
    @Test
    void aRankNobodyCanReachFailsTheJobAndTheNewsReachesRanksThatNeverDialledIt() throws Exception {
        int n = Collectives.TREE_MIN_RANKS;
        int gone = n - 1;
        try (LocalJob job = LocalJob.withId(n, BootstrapOptions.builder().build(), STEP)) {
            job.rank(gone).close();
            byte[] hello = {1};
            CompletableFuture<Void> connected = job.rank(1).send(0, 1, hello, STEP).toFuture();
            job.rank(0).recv(1, 1, STEP).block(STEP);
            connected.get(STEP.toMillis(), TimeUnit.MILLISECONDS);

            long start = System.nanoTime();
            CompletableFuture<byte[]> wait = job.rank(1).recv(0, 2, STEP).toFuture();
            CompletableFuture<Void> send = job.rank(0).send(gone, 3, hello, STEP).toFuture();
            for (CompletableFuture<?> f : List.of(send, wait)) {
                JmscclppException e = assertInstanceOf(JmscclppException.class,
                        assertThrows(ExecutionException.class, () -> f.get(20, TimeUnit.SECONDS)).getCause());
                assertEquals(ErrorCode.REMOTE_ERROR, e.code(), e.getMessage());
                assertEquals(gone, e.peer(), e.getMessage());
                assertTrue(e.getMessage().contains("rank " + gone + " is unreachable"), e.getMessage());
            }
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(ms < STEP.toMillis() / 3, "the news took " + ms + " ms");
        }
    }
}
