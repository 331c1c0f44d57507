package org.jmscclpp.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ShuffleSampleTest {

    private static final Duration DEADLINE = Duration.ofSeconds(120);
    private static final String NUMBER = "\\d+\\.\\d{2}";

    @TempDir
    Path shm;

    /**
     * Real rank processes on the host backend shuffle, check every record, and rank 0 prints the
     * table; with one record per rank most runs are empty (sends and receives of count 0).
     */
    @ParameterizedTest(name = "{0} ranks, {1} records each")
    @CsvSource({"3, 50000", "4, 50000", "4, 1"})
    @Timeout(180)
    void ranksShuffleAndEveryRankGetsExactlyItsKeys(int ranks, long records) throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(ranks).sample(ShuffleSample.NAME, List.of("--records",
                        Long.toString(records), "--seed", "7"))
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString())).output(lines::add).start()) {
            assertTrue(job.waitFor(DEADLINE), "ranks still running after " + DEADLINE);
            assertTrue(job.firstFailure().isEmpty(), () -> "failed: " + job.firstFailure() + "\n" + text(lines));
        }
        List<String> out = stdout(lines, 0);
        String all = text(lines);
        assertEquals(ranks + 5, out.size(), all);
        assertEquals("shuffle: " + ranks + " ranks, " + records + " records of 16 B per rank (seed 7), host backend, "
                + "registered buffers", out.get(0), all);
        assertTrue(out.get(1).matches("rank +records +kept +sent +received +MB moved +exchange ms +GB/s +check"), all);
        long received = 0;
        for (int r = 0; r < ranks; r++) {
            String[] cells = out.get(2 + r).trim().split(" +");
            assertEquals(9, cells.length, out.get(2 + r));
            assertEquals(List.of(Integer.toString(r), Long.toString(records)), List.of(cells[0], cells[1]), all);
            assertEquals(records, Long.parseLong(cells[2]) + Long.parseLong(cells[3]), "kept + sent: " + out.get(2 + r));
            received += Long.parseLong(cells[4]);
            assertTrue(cells[5].matches(NUMBER) && cells[6].matches(NUMBER) && cells[7].matches(NUMBER), all);
            assertEquals("OK", cells[8], all);
        }
        assertEquals(ranks * records, received, "every record arrived somewhere");
        assertTrue(out.get(2 + ranks).matches("all +" + ranks * records + " .* OK"), all);
        assertTrue(out.get(3 + ranks).matches("shuffle: counts allToAll \\d+\\.\\d µs, exchange " + NUMBER
                + " ms \\(slowest rank\\)"), all);
        assertEquals("shuffle: every rank received exactly its keys (" + ranks * records + " records checked): OK",
                out.get(4 + ranks), all);
        assertTrue(lines.stream().noneMatch(l -> l.rank() != 0 && !l.stderr()), all);
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList(), "every rank closed its shared memory");
        }
    }

    /**
     * Rank 1 misroutes one record: the exchange completes, the rank that got it and the rank that
     * lost it both report it, rank 0's verdict says so, and every rank exits 1.
     */
    @Test
    @Timeout(180)
    void aMisroutedRecordIsCaughtByBothRanksItConcerns() throws Exception {
        ConcurrentLinkedQueue<Launcher.OutputLine> lines = new ConcurrentLinkedQueue<>();
        try (Launcher.Job job = Launcher.builder(3).sample(ShuffleSample.NAME, List.of("--records", "3000",
                        "--corrupt", "1"))
                .env(Map.of("JMSCCLPP_SHM_DIR", shm.toString())).output(lines::add).failFast(false).start()) {
            assertTrue(job.waitFor(DEADLINE), "ranks still running after " + DEADLINE);
            for (int r = 0; r < 3; r++) {
                assertEquals(ExitCodes.FAILURE, job.exitCode(r).orElseThrow(), "rank " + r + "\n" + text(lines));
            }
        }
        String all = text(lines);
        ShuffleDataSet data = new ShuffleDataSet(ShuffleSample.DEFAULT_SEED, 3, 3000);
        long key = data.key(1, 0);
        int owner = data.partition(key);
        int wrongRank = (owner + 1) % 3;
        String hex = String.format("0x%016x", key);
        assertTrue(lines.stream().anyMatch(l -> l.rank() == wrongRank && l.stderr() && l.text().matches(
                "shuffle: rank " + wrongRank + ": received record \\d+: key " + hex + " \\(rank 1's record 0\\) "
                        + "belongs to rank " + owner)), all);
        assertTrue(lines.stream().anyMatch(l -> l.rank() == owner && l.stderr() && l.text().equals(
                "shuffle: rank " + owner + ": rank 1's record 0 (key " + hex + ") is missing")), all);
        List<String> out = stdout(lines, 0);
        List<Integer> failed = new ArrayList<>(List.of(owner, wrongRank));
        Collections.sort(failed);
        assertEquals("shuffle: FAILED: 2 wrong records on ranks " + failed, out.getLast(), all);
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList(), "every rank closed its shared memory, failing or not");
        }
    }

    @Test
    void theCheckPassesExactlyTheRecordsOfTheRankInAnyOrder() {
        ShuffleDataSet data = new ShuffleDataSet(11, 3, 5000);
        try (Arena arena = Arena.ofConfined()) {
            for (int rank = 0; rank < 3; rank++) {
                List<long[]> mine = recordsOf(data, rank);
                Collections.shuffle(mine, new Random(rank));
                MemorySegment received = segment(arena, mine);
                ShuffleDataSet.Verdict v = data.check(received, mine.size(), rank);
                assertEquals(new ShuffleDataSet.Verdict(mine.size(), mine.size(), 0, List.of()), v);
                assertTrue(v.ok());
            }
            long total = 0;
            for (int rank = 0; rank < 3; rank++) {
                total += recordsOf(data, rank).size();
            }
            assertEquals(3 * 5000, total, "the partitions cover the data set");
        }
    }

    @Test
    void theCheckCountsAndNamesEveryKindOfWrongRecord() {
        ShuffleDataSet data = new ShuffleDataSet(11, 3, 5000);
        int rank = 2;
        try (Arena arena = Arena.ofConfined()) {
            List<long[]> good = recordsOf(data, rank);
            long[] someoneElses = recordsOf(data, 0).getFirst();

            List<long[]> missing = new ArrayList<>(good);
            long[] dropped = missing.remove(10);
            ShuffleDataSet.Verdict v = data.check(segment(arena, missing), missing.size(), rank);
            assertEquals(1, v.wrong());
            assertFalse(v.ok());
            assertEquals(List.of("rank " + origin(dropped) + "'s record " + index(dropped) + " (key "
                    + hex(dropped[0]) + ") is missing"), v.problems());

            List<long[]> twice = new ArrayList<>(good);
            twice.set(3, good.get(4));
            v = data.check(segment(arena, twice), twice.size(), rank);
            assertEquals(2, v.wrong(), "one repeated, one missing");
            assertEquals("received record 4: rank " + origin(good.get(4)) + "'s record " + index(good.get(4))
                    + " came again", v.problems().get(0));

            List<long[]> foreign = new ArrayList<>(good);
            foreign.add(someoneElses);
            v = data.check(segment(arena, foreign), foreign.size(), rank);
            assertEquals(1, v.wrong());
            assertEquals("received record " + good.size() + ": key " + hex(someoneElses[0]) + " (rank "
                    + origin(someoneElses) + "'s record " + index(someoneElses) + ") belongs to rank 0",
                    v.problems().get(0));

            List<long[]> flipped = new ArrayList<>(good);
            long[] r = good.get(0);
            flipped.set(0, new long[] {r[0] ^ 1, r[1]});
            v = data.check(segment(arena, flipped), flipped.size(), rank);
            assertEquals(2, v.wrong(), "a corrupted key, and so a missing record");
            assertEquals("received record 0: key " + hex(r[0] ^ 1) + " is not the key of rank " + origin(r)
                    + "'s record " + index(r) + " (" + hex(r[0]) + ")", v.problems().get(0));

            List<long[]> badValue = new ArrayList<>(good);
            badValue.set(0, new long[] {r[0], ShuffleDataSet.value(3, 0)});
            v = data.check(segment(arena, badValue), badValue.size(), rank);
            assertEquals(2, v.wrong());
            assertTrue(v.problems().get(0).endsWith("names no record of the data set"), v.problems().toString());

            // many problems: all counted, the first few described
            v = data.check(segment(arena, List.of()), 0, rank);
            assertEquals(good.size(), v.wrong());
            assertEquals(ShuffleDataSet.MAX_PROBLEMS, v.problems().size());
        }
    }

    @Test
    void theDataSetIsReproducibleBalancedAndDistinct() {
        ShuffleDataSet data = new ShuffleDataSet(42, 4, 100_000);
        assertEquals(data.key(3, 99_999), new ShuffleDataSet(42, 4, 100_000).key(3, 99_999));
        assertNotEquals(data.key(0, 5), data.key(1, 5), "each rank has a stream of its own");
        assertNotEquals(data.key(0, 5), new ShuffleDataSet(43, 4, 100_000).key(0, 5), "the seed matters");
        long[] perRank = new long[4];
        Set<Long> keys = new HashSet<>();
        for (int q = 0; q < 4; q++) {
            for (long i = 0; i < 100_000; i++) {
                long k = data.key(q, i);
                keys.add(k);
                perRank[data.partition(k)]++;
            }
        }
        assertEquals(400_000, keys.size(), "no two records share a key at this size");
        for (long c : perRank) {
            assertTrue(Math.abs(c - 100_000) < 2_000, "balanced partitions: " + java.util.Arrays.toString(perRank));
        }
    }

    @Test
    void optionsParseAndBadOnesAreInvalidUsage() {
        assertEquals(new ShuffleSample.Options("host", 1_000_000, 42, -1), ShuffleSample.parse(List.of()));
        assertEquals(new ShuffleSample.Options("cuda", 2 << 20, -5, 2), ShuffleSample.parse(List.of("--backend",
                "cuda", "--records", "2M", "--seed", "-5", "--corrupt", "2")));
        assertEquals(0xFFL, ShuffleSample.parse(List.of("--seed", "0xff")).seed());
        for (List<String> bad : List.of(List.of("--records"), List.of("--records", "0"), List.of("--records", "1G"),
                List.of("--records", "many"), List.of("--backend", "gpu"), List.of("--seed", "1.5"),
                List.of("--corrupt", "-1"), List.of("--what", "1"))) {
            JmscclppException e = assertThrows(JmscclppException.class, () -> ShuffleSample.parse(bad), bad::toString);
            assertEquals(ErrorCode.INVALID_USAGE, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("shuffle: "), e.getMessage());
        }
    }

    /** Every record of {@code data} that hashes to {@code rank}, as (key, value) pairs in data-set order. */
    private static List<long[]> recordsOf(ShuffleDataSet data, int rank) {
        List<long[]> out = new ArrayList<>();
        for (int q = 0; q < data.ranks(); q++) {
            for (long i = 0; i < data.records(); i++) {
                long k = data.key(q, i);
                if (data.partition(k) == rank) {
                    out.add(new long[] {k, ShuffleDataSet.value(q, i)});
                }
            }
        }
        return out;
    }

    private static MemorySegment segment(Arena arena, List<long[]> records) {
        MemorySegment s = arena.allocate(Math.max(1, records.size()) * 16L, 8);
        for (int j = 0; j < records.size(); j++) {
            s.set(ShuffleDataSet.WORD, j * 16L, records.get(j)[0]);
            s.set(ShuffleDataSet.WORD, j * 16L + 8, records.get(j)[1]);
        }
        return s;
    }

    private static long origin(long[] record) {
        return record[1] >>> ShuffleDataSet.INDEX_BITS;
    }

    private static long index(long[] record) {
        return record[1] & ((1L << ShuffleDataSet.INDEX_BITS) - 1);
    }

    private static String hex(long v) {
        return String.format("0x%016x", v);
    }

    private static List<String> stdout(ConcurrentLinkedQueue<Launcher.OutputLine> lines, int rank) {
        return lines.stream().filter(l -> l.rank() == rank && !l.stderr()).map(Launcher.OutputLine::text).toList();
    }

    private static String text(ConcurrentLinkedQueue<Launcher.OutputLine> lines) {
        return lines.stream().map(l -> "[rank " + l.rank() + (l.stderr() ? " err" : "") + "] " + l.text())
                .collect(Collectors.joining("\n"));
    }
}
