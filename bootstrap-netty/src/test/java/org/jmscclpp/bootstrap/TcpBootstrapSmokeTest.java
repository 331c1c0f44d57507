package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jmscclpp.core.UniqueId;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

class TcpBootstrapSmokeTest {

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 5, 8})
    void initAllGatherBarrierBroadcastSendRecv(int n) {
        List<TcpBootstrap> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ranks.add(TcpBootstrap.create(r, n));
        }
        try {
            UniqueId id = ranks.get(0).createUniqueId();
            Flux.fromIterable(ranks).flatMap(b -> b.initialize(id)).then().block(Duration.ofSeconds(20));
            List<byte[]> gathered = Flux.fromIterable(ranks)
                    .flatMapSequential(b -> b.allGather(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN)
                            .putInt(b.rank() + 1).array()))
                    .collectList().block(Duration.ofSeconds(20));
            for (byte[] g : gathered) {
                ByteBuffer bb = ByteBuffer.wrap(g).order(ByteOrder.LITTLE_ENDIAN);
                for (int i = 0; i < n; i++) {
                    assertEquals(i + 1, bb.getInt());
                }
            }
            Flux.fromIterable(ranks).flatMap(b -> b.barrier()).then().block(Duration.ofSeconds(20));
            byte[] payload = new byte[3 << 20];
            for (int i = 0; i < payload.length; i++) {
                payload[i] = (byte) (i * 31);
            }
            List<byte[]> got = Flux.fromIterable(ranks)
                    .flatMapSequential(b -> b.broadcast(n - 1, b.rank() == n - 1 ? payload : new byte[0]))
                    .collectList().block(Duration.ofSeconds(20));
            for (byte[] g : got) {
                assertArrayEquals(payload, g);
            }
            if (n > 1) {
                Mono.when(ranks.get(0).send(1, 7, new byte[] {1, 2, 3}),
                                ranks.get(1).recv(0, 7).doOnNext(b -> assertArrayEquals(new byte[] {1, 2, 3}, b)))
                        .block(Duration.ofSeconds(10));
            }
            for (TcpBootstrap b : ranks) {
                assertEquals(n, b.nRanksPerNode());
                assertEquals(0, b.mailboxCount(), "rank " + b.rank() + ": every message was consumed");
            }
        } finally {
            ranks.forEach(TcpBootstrap::close);
        }
        assertEquals(0, TcpBootstrap.eventLoopUsers());
    }

    /**
     * README's pattern: one bootstrap only creates the id, and the ranks join with the static
     * {@code initialize}. Once they are wired the root has stopped, and the event loops go when the
     * ranks close, without closing the bootstrap that created the id (the README never does).
     */
    @org.junit.jupiter.api.Test
    void theRootOfAnIdReleasesTheEventLoopsOnceTheRanksAreWired() throws InterruptedException {
        TcpBootstrap idMaker = TcpBootstrap.create(0, 2);
        try {
            UniqueId id = idMaker.createUniqueId();
            List<TcpBootstrap> ranks = Flux.merge(TcpBootstrap.initialize(0, 2, id, Duration.ofSeconds(20)),
                    TcpBootstrap.initialize(1, 2, id, Duration.ofSeconds(20))).collectList().block(Duration.ofSeconds(20));
            Flux.fromIterable(ranks).flatMap(b -> b.barrier()).then().block(Duration.ofSeconds(20));
            ranks.forEach(TcpBootstrap::close);
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (TcpBootstrap.eventLoopUsers() != 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(0, TcpBootstrap.eventLoopUsers(), "the wired root still holds the event loops");
        } finally {
            idMaker.close();
        }
        assertEquals(0, TcpBootstrap.eventLoopUsers());
    }
}
