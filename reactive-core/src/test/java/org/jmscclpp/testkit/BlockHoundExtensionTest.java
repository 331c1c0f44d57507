package org.jmscclpp.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * BlockHound is active in this JVM (installed by the auto-detected {@link BlockHoundExtension}): a
 * blocking call on a Reactor parallel thread is caught and recorded.
 */
class BlockHoundExtensionTest {

    /**
     * {@code Mono.never().block()} on a parallel thread: Reactor refuses it itself, before it could
     * block (so BlockHound never sees a blocking call); blocking that Reactor cannot see, a latch
     * wait, is BlockHound's catch.
     */
    @Test
    void aBlockingCallOnAParallelThreadIsCaught() {
        // no explicit install: this passes only if the auto-detected extension installed BlockHound
        // (off only when a build turns it off: -Dtest.blockhound.argLine= on the Maven command line)
        assumeTrue(Boolean.getBoolean("junit.jupiter.extensions.autodetection.enabled"), "BlockHound turned off");
        Throwable refused = Mono.fromRunnable(() -> Mono.never().block())
                .subscribeOn(Schedulers.parallel()).then(Mono.<Throwable>empty())
                .onErrorResume(Mono::just).block(Duration.ofSeconds(10));
        assertInstanceOf(IllegalStateException.class, refused, String.valueOf(refused));
        assertTrue(refused.getMessage().contains("block()/blockFirst()/blockLast() are blocking"), refused.getMessage());

        Throwable caught = Mono.fromCallable(() -> new CountDownLatch(1).await(5, TimeUnit.SECONDS))
                .subscribeOn(Schedulers.parallel()).then(Mono.<Throwable>empty())
                .onErrorResume(Mono::just).block(Duration.ofSeconds(10));
        assertInstanceOf(BlockingOperationError.class, caught, String.valueOf(caught));
        List<String> detected = BlockHoundExtension.takeDetected();
        assertEquals(1, detected.size(), detected.toString());
        assertTrue(detected.getFirst().contains("parallel-"), detected.getFirst());
    }

    /** The same wait on a virtual thread, where the design puts blocking work, is allowed. */
    @Test
    void aBlockingCallOnAVirtualThreadIsAllowed() throws Exception {
        assumeTrue(Boolean.getBoolean("junit.jupiter.extensions.autodetection.enabled"), "BlockHound turned off");
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                new CountDownLatch(1).await(10, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        t.join(10_000);
        assertEquals(List.of(), BlockHoundExtension.takeDetected());
    }
}
