package org.jmscclpp.it.consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.time.Duration;
import java.util.List;
import org.jmscclpp.testkit.InMemoryBootstrap;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/** A user's test on the test kit, which the BOM manages: named without a version in this project's pom. */
class TestKitTest {

    @Test
    void inMemoryRanksGatherTheirBytes() {
        List<InMemoryBootstrap> group = InMemoryBootstrap.group(2);
        try {
            List<byte[]> gathered = Flux.fromIterable(group)
                    .flatMapSequential(b -> b.allGather(new byte[] {(byte) b.rank()}))
                    .collectList()
                    .block(Duration.ofSeconds(30));
            for (byte[] all : gathered) {
                assertArrayEquals(new byte[] {0, 1}, all);
            }
        } finally {
            group.forEach(InMemoryBootstrap::close);
        }
    }
}
