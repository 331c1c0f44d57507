package org.jmscclpp.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * {@link TcpBootstrap#shrink} in one JVM: the survivors of a job get a working, smaller job with
 * ranks renumbered in their old order; wrong calls are INVALID_USAGE; survivors that disagree on
 * the excluded set do not join each other. (The multi-process case, after a SIGKILL, is in
 * {@link CollectivesOverTcpTest}.)
 */
class ShrinkTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void theSurvivorsGetASmallerJobRenumberedInTheirOldOrder() {
        try (LocalJob job = LocalJob.withId(5, BootstrapOptions.builder().build(), WAIT)) {
            List<TcpBootstrap> survivors = new ArrayList<>();
            for (int r : new int[] {0, 2, 4}) {
                survivors.add(job.rank(r));
            }
            List<TcpBootstrap> smaller = Flux.fromIterable(survivors)
                    .flatMapSequential(b -> b.shrink(Set.of(1, 3), WAIT)).collectList().block(WAIT);
            try {
                for (int i = 0; i < 3; i++) {
                    assertEquals(i, smaller.get(i).rank());
                    assertEquals(3, smaller.get(i).size());
                }
                List<byte[]> gathered = Flux.fromIterable(smaller)
                        .flatMapSequential(b -> b.allGather(new byte[] {(byte) (10 + b.rank())}))
                        .collectList().block(WAIT);
                for (byte[] g : gathered) {
                    assertArrayEquals(new byte[] {10, 11, 12}, g);
                }
                // the old bootstraps shrink once
                JmscclppException twice = assertThrows(JmscclppException.class,
                        () -> job.rank(0).shrink(Set.of(1, 3), WAIT).block(WAIT));
                assertEquals(ErrorCode.INVALID_USAGE, twice.code());
            } finally {
                smaller.forEach(TcpBootstrap::close);
            }
        }
    }

    @Test
    void wrongCallsAreInvalidUsage() {
        try (LocalJob job = LocalJob.withId(2, BootstrapOptions.builder().build(), WAIT)) {
            JmscclppException self = assertThrows(JmscclppException.class,
                    () -> job.rank(0).shrink(Set.of(0), WAIT).block(WAIT));
            assertEquals(ErrorCode.INVALID_USAGE, self.code());
            assertTrue(self.detail().contains("excluded"), self.detail());
            JmscclppException range = assertThrows(JmscclppException.class,
                    () -> job.rank(1).shrink(Set.of(7), WAIT).block(WAIT));
            assertEquals(ErrorCode.INVALID_USAGE, range.code());
        }
        TcpBootstrap fresh = TcpBootstrap.create(0, 2);
        try {
            JmscclppException early = assertThrows(JmscclppException.class,
                    () -> fresh.shrink(Set.of(1), WAIT).block(WAIT));
            assertEquals(ErrorCode.INVALID_USAGE, early.code());
        } finally {
            fresh.close();
        }
    }

    /** A shrink refused for its timeout is INVALID_USAGE naming the rank, and leaves the bootstrap its one shrink. */
    @Test
    void aBadTimeoutIsInvalidUsageAndLeavesTheShrinkToCome() {
        try (LocalJob job = LocalJob.withId(3, BootstrapOptions.builder().build(), WAIT)) {
            for (Duration bad : List.of(Duration.ZERO, Duration.ofSeconds(-1))) {
                JmscclppException e = assertThrows(JmscclppException.class,
                        () -> job.rank(0).shrink(Set.of(2), bad).block(WAIT));
                assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
                assertEquals(0, e.rank(), e.getMessage());
                assertEquals("shrink", e.phase(), e.getMessage());
            }
            List<TcpBootstrap> smaller = Flux.merge(job.rank(0).shrink(Set.of(2), WAIT),
                    job.rank(1).shrink(Set.of(2), WAIT)).collectList().block(WAIT);
            try {
                assertEquals(2, smaller.size());
                smaller.forEach(b -> assertEquals(2, b.size()));
            } finally {
                smaller.forEach(TcpBootstrap::close);
            }
        }
    }

    @Test
    void survivorsThatDisagreeOnTheExcludedSetTimeOutInsteadOfJoiningEachOther() {
        try (LocalJob job = LocalJob.withId(4, BootstrapOptions.builder().build(), WAIT)) {
            Duration shortWait = Duration.ofSeconds(2);
            // rank 0 leads both would-be jobs; ranks 1 and 2 each think a different rank died
            JmscclppException e = assertThrows(JmscclppException.class, () -> Flux.merge(
                    job.rank(0).shrink(Set.of(3), shortWait),
                    job.rank(1).shrink(Set.of(3), shortWait),
                    job.rank(2).shrink(Set.of(1), shortWait)).then().block(WAIT));
            assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
        }
    }
}
