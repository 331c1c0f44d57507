package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.jmscclpp.cli.MainRun;
import org.jmscclpp.samples.ByteSizes;
import org.jmscclpp.samples.ExitCodes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class WriteBenchTest {

    /** Two real rank processes, tiny sizes: every size checked by rank 1, one row each, the target line. */
    @Test
    @Timeout(180)
    void benchWriteWithTinySizesPrintsOneCheckedRowPerSize() {
        MainRun r = MainRun.of("bench", "write", "--max", "64K", "--iters", "3");
        assertEquals(ExitCodes.OK, r.code(), () -> r.out() + "\n" + r.err());
        List<String> lines = r.out().lines().toList();
        assertTrue(lines.getFirst().startsWith("machine: "), r.out());
        int header = lines.indexOf(lines.stream().filter(l -> l.startsWith("|")).findFirst().orElseThrow());
        // columns are as wide as their widest cell: a ratio of 100 or more (an in-process copy that a busy
        // 2-core host slowed to 0.04 GB/s) widens the ratio column, so its header may carry more padding
        assertTrue(lines.get(header).matches("\\|\\s+size \\|\\s+iters \\|\\s+HOST_IPC GB/s \\|\\s+in-process copy GB/s"
                + " \\|\\s+ratio \\| target \\(>= 0\\.8 from 1 MiB\\) \\|"), r.out());
        assertTrue(lines.get(header + 1).matches("\\|( -+: \\|){5} -+ \\|"), r.out());
        List<String> sizes = List.of("4 KiB", "16 KiB", "64 KiB");
        for (int i = 0; i < sizes.size(); i++) {
            String row = lines.get(header + 2 + i);
            assertTrue(row.matches("\\|\\s+" + sizes.get(i) + " \\|\\s+3 \\|\\s+\\d+\\.\\d\\d \\|\\s+\\d+\\.\\d\\d \\|"
                    + "\\s+\\d+\\.\\d\\d \\| -\\s+\\|"), row);
        }
        assertEquals("target: ratio >= 0.8 from 1 MiB up: no size measured from 1 MiB up", lines.get(header + 5),
                r.out());
        assertEquals(header + 6, lines.size(), r.out());
    }

    @Test
    void usageErrorsStartNothing() {
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "write", "--min", "4").code());
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "write", "--min", "64K", "--max", "4K").code());
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "write", "--iters", "0").code());
        assertEquals(ExitCodes.USAGE, MainRun.of("bench", "write", "--max", "big").code());
        MainRun r = MainRun.of("bench", "write", "--bogus", "1");
        assertEquals(ExitCodes.USAGE, r.code());
        assertTrue(r.err().contains("Unknown options: '--bogus', '1'")
                && r.err().contains("Usage: jmscclpp bench write"),
                r.err());
    }

    @Test
    void sizesGrowByFourAndIterationsShrinkWithSize() {
        WriteBenchRankSample.Options o = WriteBenchRankSample.parse(List.of());
        assertEquals(new WriteBenchRankSample.Options(4 << 10, 256 << 20, 2000, 1000), o);
        assertEquals(List.of(4L << 10, 16L << 10, 64L << 10, 256L << 10, 1L << 20, 4L << 20, 16L << 20, 64L << 20,
                256L << 20), o.sizes());
        assertEquals(List.of(100L, 400L), WriteBenchRankSample.parse(List.of("--min", "100", "--max", "1000")).sizes());
        assertEquals(List.of(8L), WriteBenchRankSample.parse(List.of("--min", "8", "--max", "8")).sizes());
        assertEquals(2000, WriteBenchRankSample.itersFor(4 << 10, 2000));
        assertEquals(1024, WriteBenchRankSample.itersFor(1 << 20, 2000));
        assertEquals(WriteBenchRankSample.MIN_ITERS, WriteBenchRankSample.itersFor(1L << 30, 2000));
        assertEquals(1000, WriteBenchRankSample.warmupFor(4 << 10, 1000));
        assertEquals(1, WriteBenchRankSample.warmupFor(256 << 20, 1000));
        assertEquals(0, WriteBenchRankSample.warmupFor(4 << 10, 0));
    }

    /** Rank 1's check passes on the last iteration's bytes and fails on a stale or a corrupted copy. */
    @Test
    void theCheckFailsOnStaleOrCorruptedData() {
        long size = 64 << 10;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(size);
            MemorySegment dst = arena.allocate(size);
            SplittableRandom random = new SplittableRandom(1);
            for (long i = 0; i < size; i += 8) {
                src.set(ValueLayout.JAVA_LONG, i, random.nextLong());
            }
            int last = 9;
            for (int i = 0; i <= last; i++) {
                WriteBenchRankSample.stamp(src, size, i);
                if (i < last) {
                    dst.copyFrom(src);   // the copy of iteration i; the last one is missing
                }
            }
            long sum = WriteBenchRankSample.checksum(src, size);
            String stale = WriteBenchRankSample.verify(dst, size, last, sum);
            assertNotNull(stale, "a copy of iteration " + (last - 1) + " passed as iteration " + last);
            assertTrue(stale.contains("not iteration 9's stamp"), stale);

            dst.copyFrom(src);
            assertNull(WriteBenchRankSample.verify(dst, size, last, sum));

            long middle = size / 2 + 3;
            dst.set(ValueLayout.JAVA_BYTE, middle, (byte) ~dst.get(ValueLayout.JAVA_BYTE, middle));
            String corrupt = WriteBenchRankSample.verify(dst, size, last, sum);
            assertNotNull(corrupt, "one flipped byte passed");
            assertTrue(corrupt.contains("checksum"), corrupt);
        }
    }

    /**
     * A random stamp word that lands within 8 bytes of the first or last one overwrites part of it
     * (bench ethernet's 1 KiB check failed on a correct copy this way: the random word at offset 5
     * of iteration 1299): a correct copy passes whatever the offsets, a stale one still fails.
     */
    @Test
    void overlappingStampWordsStillCheck() {
        long size = 1024;
        int overlapping = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(size);
            MemorySegment dst = arena.allocate(size);
            for (int i = 0; i < 5000; i++) {
                long[] at = WriteBenchRankSample.stampOffsets(size, i);
                if (!WriteBenchRankSample.overwrittenLater(at, 0) && !WriteBenchRankSample.overwrittenLater(at, 1)) {
                    continue;
                }
                overlapping++;
                dst.copyFrom(src);   // the copy of the iteration before
                WriteBenchRankSample.stamp(src, size, i);
                long sum = WriteBenchRankSample.checksum(src, size);
                assertNotNull(WriteBenchRankSample.verify(dst, size, i, sum), "iteration " + i + ": stale copy passed");
                dst.copyFrom(src);
                assertNull(WriteBenchRankSample.verify(dst, size, i, sum), "iteration " + i + ", offsets "
                        + Arrays.toString(at));
            }
        }
        assertTrue(overlapping > 10, overlapping + " iterations of 5000 with overlapping stamp words");
    }

    @Test
    void stampsDifferPerIterationAndStayInside() {
        for (long size : new long[] {8, 9, 4096, 1 << 20}) {
            for (int i = 0; i < 50; i++) {
                assertTrue(WriteBenchRankSample.stampValue(size, i) != WriteBenchRankSample.stampValue(size, i + 1));
                for (long at : WriteBenchRankSample.stampOffsets(size, i)) {
                    assertTrue(at >= 0 && at + 8 <= size, size + " B, offset " + at);
                }
            }
        }
    }

    @Test
    void tableAndTargetLineSayMetNotMetAndFailedChecks() {
        List<WriteBench.Row> rows = List.of(
                new WriteBench.Row(4 << 10, 2000, 1000, 1.0, 10.0, "ok"),
                new WriteBench.Row(1 << 20, 1024, 256, 9.0, 10.0, "ok"),
                new WriteBench.Row(4 << 20, 256, 64, 7.0, 10.0, "ok"),
                new WriteBench.Row(16 << 20, 64, 16, 10.0, 10.0, "16777216 B: checksum 0x1, the source's is 0x2"));
        List<String> lines = WriteBench.table(rows).lines().toList();
        assertEquals(6, lines.size());
        assertTrue(lines.get(2).matches("\\|\\s+4 KiB \\|\\s+2000 \\|\\s+1\\.00 \\|\\s+10\\.00 \\|\\s+0\\.10 \\| -\\s+\\|"),
                lines.get(2));
        assertTrue(lines.get(3).matches(".*\\|\\s+0\\.90 \\| met\\s+\\|"), lines.get(3));
        assertTrue(lines.get(4).matches(".*\\|\\s+0\\.70 \\| not met\\s+\\|"), lines.get(4));
        assertTrue(lines.get(5).matches(".*\\| check failed\\s+\\|"), lines.get(5));
        assertEquals("target: ratio >= 0.8 from 1 MiB up: not met on 1 of 3 sizes (4 MiB)", WriteBench.targetLine(rows));
        assertEquals("target: ratio >= 0.8 from 1 MiB up: met on 1 of 1 sizes",
                WriteBench.targetLine(List.of(rows.get(1))));
        WriteBench.Row parsed = WriteBench.Row.parse(
                "WRITE size=1048576 iters=1024 warmup=256 ipc_gbps=9.8765 copy_gbps=10.1234 check=1048576 B: bad");
        assertEquals(new WriteBench.Row(1 << 20, 1024, 256, 9.8765, 10.1234, "1048576 B: bad"), parsed);
        assertNull(WriteBench.Row.parse("[rank 0] something else"));
    }

    @Test
    void byteSizesParseSuffixesAndLabelExactMultiples() {
        assertEquals(4096, ByteSizes.parse("--x", "4K"));
        assertEquals(4096, ByteSizes.parse("--x", "4kib"));
        assertEquals(256L << 20, ByteSizes.parse("--x", "256M"));
        assertEquals(1L << 30, ByteSizes.parse("--x", "1GB"));
        assertEquals(3000, ByteSizes.parse("--x", "3000"));
        assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse("--x", "-1"));
        assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse("--x", "K"));
        assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse("--x", "9999999999999G"));
        assertEquals("4 KiB", ByteSizes.label(4096));
        assertEquals("256 MiB", ByteSizes.label(256L << 20));
        assertEquals("2 GiB", ByteSizes.label(2L << 30));
        assertEquals("3000 B", ByteSizes.label(3000));
    }
}
