package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The threads a bootstrap runs on: a service's own Netty group and Reactor scheduler when it
 * supplies them (and the library leaves them running), and otherwise the library's shared event
 * loops, on which Reactor refuses to block.
 */
class ServiceThreadsTest {

    private static final Duration DEADLINE = Duration.ofSeconds(20);

    @Test
    void aSuppliedEventLoopGroupRunsTheRootAndEveryConnectionAndOutlivesTheJob() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, new DefaultThreadFactory("svc-io", true),
                NioIoHandler.newFactory());
        try {
            BootstrapOptions options = BootstrapOptions.builder().eventLoopGroup(group).build();
            AtomicReference<String> deliveredOn = new AtomicReference<>();
            try (LocalJob job = LocalJob.withId(3, options, DEADLINE)) {
                assertEquals(0, TcpBootstrap.eventLoopUsers(), "the shared event loops were never started");
                Mono.when(job.rank(0).recv(1, 9).doOnNext(b -> deliveredOn.set(Thread.currentThread().getName())),
                        job.rank(1).send(0, 9, new byte[] {1})).block(DEADLINE);
                job.rank(0).barrier().and(job.rank(1).barrier()).and(job.rank(2).barrier()).block(DEADLINE);
                for (int r = 0; r < 3; r++) {
                    List<Channel> connections = job.rank(r).connections();
                    assertFalse(connections.isEmpty(), "rank " + r + " has connections");
                    for (Channel ch : connections) {
                        assertSame(group, ch.eventLoop().parent(), "rank " + r + ": " + ch + " runs on the service's group");
                    }
                }
            }
            assertTrue(deliveredOn.get().startsWith("svc-io"), "the message came on " + deliveredOn.get());
            assertFalse(group.isShuttingDown(), "closing the job leaves the service's group running");
            assertEquals(0, TcpBootstrap.eventLoopUsers());
            assertEquals(42, group.submit(() -> 42).get(5, TimeUnit.SECONDS), "the group still runs tasks");
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void aSuppliedSchedulerRunsTheDeadlinesAndIsNotDisposed() {
        Scheduler scheduler = Schedulers.newSingle("svc-timers");
        try {
            BootstrapOptions options = BootstrapOptions.builder().scheduler(scheduler).build();
            AtomicReference<String> timedOutOn = new AtomicReference<>();
            try (LocalJob job = LocalJob.withId(2, options, DEADLINE)) {
                JmscclppException e = assertThrows(JmscclppException.class, () -> job.rank(0)
                        .recv(1, 3, Duration.ofMillis(100))
                        .doOnError(error -> timedOutOn.set(Thread.currentThread().getName()))
                        .block(DEADLINE));
                assertEquals(ErrorCode.TIMEOUT, e.code());
            }
            assertTrue(timedOutOn.get().startsWith("svc-timers"), "the deadline fired on " + timedOutOn.get());
            assertFalse(scheduler.isDisposed(), "closing the job leaves the service's scheduler alone");
        } finally {
            scheduler.dispose();
        }
        assertEquals(0, TcpBootstrap.eventLoopUsers());
    }

    @Test
    void blockingOnTheLibrarysEventLoopFailsAtOnce() throws Exception {
        try (LocalJob job = LocalJob.withId(2, BootstrapOptions.fromEnvironment(), DEADLINE)) {
            Channel ch = job.rank(0).connections().getFirst();
            long start = System.nanoTime();
            ExecutionException e = assertThrows(ExecutionException.class, () -> ch.eventLoop()
                    .submit(() -> Mono.just(1).delayElement(Duration.ofSeconds(5)).block())
                    .get(10, TimeUnit.SECONDS));
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            IllegalStateException refused = assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(refused.getMessage().startsWith(
                            "block()/blockFirst()/blockLast() are blocking, which is not supported in thread jmscclpp-io"),
                    refused.getMessage());
            assertTrue(tookMillis < 1_000, "refused after " + tookMillis + " ms");

            // and in an operator that runs on the event loop: the message's delivery
            Mono<Integer> blockingInOperator = job.rank(1).recv(0, 4)
                    .map(b -> Mono.just(1).delayElement(Duration.ofSeconds(5)).block());
            IllegalStateException inOperator = assertThrows(IllegalStateException.class, () ->
                    Mono.when(blockingInOperator, job.rank(0).send(1, 4, new byte[] {2})).block(DEADLINE));
            assertTrue(inOperator.getMessage().contains("are blocking, which is not supported in thread jmscclpp-io"),
                    inOperator.getMessage());
        }
    }
}
