package org.jmscclpp.cuda.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * How the completion thread reads the done words that a Mono call's last kernel writes, a word per
 * block ({@link CudaCollectiveComm#doneUpTo}): on plain memory, the blocks' stores played by hand.
 */
class DoneWordsTest {

    private static void write(MemorySegment words, int block, long number) {
        words.setAtIndex(ValueLayout.JAVA_LONG, block, number);
    }

    @Test
    void aBatchIsOverOnlyOnceEveryBlockOfItsKernelWroteItsNumber() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment words = arena.allocate(8 * 8, 8);
            for (int b = 0; b < 4; b++) {
                write(words, b, 6);
            }
            // batch 7 ran on 4 blocks: blocks 2, 0, 3 finished, block 1 not yet
            write(words, 2, 7);
            write(words, 0, 7);
            write(words, 3, 7);
            assertEquals(6, CudaCollectiveComm.doneUpTo(words, 4));
            write(words, 1, 7);
            assertEquals(7, CudaCollectiveComm.doneUpTo(words, 4));
        }
    }

    @Test
    void wordsPastTheGridDoNotCount() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment words = arena.allocate(8 * 8, 8);
            // batch 3 ran on 8 blocks; batch 4 on 2; batch 5 was told by a stream write into word 0
            for (int b = 0; b < 8; b++) {
                write(words, b, 3);
            }
            write(words, 0, 4);
            assertEquals(3, CudaCollectiveComm.doneUpTo(words, 2));
            write(words, 1, 4);
            assertEquals(4, CudaCollectiveComm.doneUpTo(words, 2));
            assertEquals(4, CudaCollectiveComm.doneUpTo(words, 1));
            write(words, 0, 5);
            assertEquals(5, CudaCollectiveComm.doneUpTo(words, 1));
            // the stale words of the wider grids are older than every later batch: they never complete one
            assertEquals(3, CudaCollectiveComm.doneUpTo(words, 8));
        }
    }
}
