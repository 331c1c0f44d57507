package org.jmscclpp.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import org.junit.jupiter.api.Test;

/** Which round of the Mono-overhead measurement the bench reports. */
class CallOverheadTest {

    @Test
    void theRoundWithTheMedianOverheadIsReportedWhole() {
        // columns: Mono blocking, Mono pipelined, stream, stream synchronized; overheads 3, -3, 2.5, 9, 1
        double[][] rounds = {
                {40, 15, 12, 30},
                {41, 14.5, 17.5, 31},
                {42, 12, 9.5, 32},
                {43, 20, 11, 33},
                {44, 11, 10, 34}};
        // sorted overheads -3, 1, 2.5, 3, 9: the median is round 2's, whose other columns come with it
        assertArrayEquals(new double[] {42, 12, 9.5, 32}, CallOverhead.medianRound(rounds));
    }

    @Test
    void withoutAStreamFormTheMedianIsTheMonoFormsTime() {
        double[][] rounds = {{30, 20, -1, -1}, {31, 25, -1, -1}, {32, 18, -1, -1}};
        assertArrayEquals(new double[] {30, 20, -1, -1}, CallOverhead.medianRound(rounds));
    }

    @Test
    void anEvenCountTakesTheLowerMiddleRound() {
        double[][] rounds = {{1, 5, 1, 1}, {2, 3, 1, 1}, {3, 9, 1, 1}, {4, 7, 1, 1}};
        assertArrayEquals(new double[] {1, 5, 1, 1}, CallOverhead.medianRound(rounds));
    }
}
