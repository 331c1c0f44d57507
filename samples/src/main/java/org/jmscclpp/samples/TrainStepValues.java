package org.jmscclpp.samples;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Locale;
import org.jmscclpp.core.collective.ReduceOp;
import org.jspecify.annotations.Nullable;

/**
 * The values of the {@code train-step} sample ({@link TrainStepSample}), the Java twins of
 * {@code kernels/train_step.cu}'s {@code mixIndex}, {@code gradientValue} and {@code sgdValue}
 * (a test compiles those for the CPU and compares them bit for bit), and the exact weights after
 * any number of steps.
 *
 * <p>Every rank's gradient is a small integer ({@link #gradient}), so the sum over the ranks is
 * exact in fp32 whatever the order of the additions, AVG is that sum divided once (as
 * {@link ReduceOp#AVG} defines it, and as Java's float division rounds), and each update is one
 * fused multiply-add ({@link Math#fma(float, float, float)}, IEEE's, as CUDA's {@code fmaf}):
 * every weight after S steps is known to the bit.
 */
final class TrainStepValues {

    /** The SGD learning rate. */
    static final float LR = 0.0625f;
    static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Ranks for which the sums of gradients stay exact: n × (256 + n) < 2^24. */
    static final int MAX_RANKS = 2048;

    private TrainStepValues() {
    }

    /** murmur3's 32-bit finalizer of element {@code i} of {@code bucket} at {@code step} (train_step.cu's mixIndex). */
    static int mixIndex(long i, int bucket, int step) {
        int x = (int) i ^ ((int) (i >>> 32) * 0x85EBCA6B) ^ (bucket * 0x9E3779B9) ^ (step * 0xC2B2AE35);
        x ^= x >>> 16;
        x *= 0x85EBCA6B;
        x ^= x >>> 13;
        x *= 0xC2B2AE35;
        x ^= x >>> 16;
        return x;
    }

    /** Rank {@code rank}'s gradient of element {@code i} of {@code bucket} at {@code step}: an integer from 1 to 256 + rank. */
    static float gradient(int rank, int step, int bucket, long i) {
        return (mixIndex(i, bucket, step) & 255) + rank + 1;
    }

    /**
     * {@link #gradient} computed as the kernel computes it: {@code passes} passes of
     * {@code x = fma(x, 3, -2x)}, each 3x - 2x = x exactly, so the result is the same integer.
     */
    static float gradient(int rank, int step, int bucket, long i, int passes) {
        float x = gradient(rank, step, bucket, i);
        for (int p = 0; p < passes; p++) {
            x = Math.fma(x, 3.0f, -2.0f * x);
        }
        return x;
    }

    /** The reduction of every rank's gradient: the sum over {@code n} ranks (exact), or the sum divided by {@code n} (one rounding). */
    static float reducedGradient(int n, ReduceOp op, int step, int bucket, long i) {
        float base = mixIndex(i, bucket, step) & 255;
        // the sum of base + r + 1 over r < n, exact: every partial sum is an integer below 2^24
        float sum = n * base + n * (n + 1) / 2;
        return switch (op) {
            case SUM -> sum;
            case AVG -> sum / n;
            default -> throw new IllegalArgumentException("train-step reduces with sum or avg, not " + op);
        };
    }

    /** Element {@code i} of {@code bucket}'s weights before the first step: an integer from 0 to 1023. */
    static float initialWeight(int bucket, long i) {
        return mixIndex(i, bucket, -1) & 1023;
    }

    /** One SGD update, as train_step.cu's sgdValue: {@code fma(-lr, g, w)}, rounded once. */
    static float sgd(float weight, float gradient) {
        return Math.fma(-LR, gradient, weight);
    }

    /** The weight of element {@code i} of {@code bucket} after steps 0 to {@code steps - 1} on {@code n} ranks. */
    static float expectedWeight(int n, ReduceOp op, int steps, int bucket, long i) {
        float w = initialWeight(bucket, i);
        for (int s = 0; s < steps; s++) {
            w = sgd(w, reducedGradient(n, op, s, bucket, i));
        }
        return w;
    }

    /** The weights that differ from their expected values, bit for bit, and the first of them. */
    record Mismatch(long count, @Nullable String first) {
    }

    /**
     * Compares every weight in {@code weights} ({@code buckets} buckets of {@code floats}) with
     * {@link #expectedWeight}, bit for bit.
     */
    static Mismatch compare(MemorySegment weights, int buckets, long floats, int n, ReduceOp op, int steps) {
        long wrong = 0;
        String first = null;
        for (int b = 0; b < buckets; b++) {
            long base = (long) b * floats;
            for (long i = 0; i < floats; i++) {
                float got = weights.getAtIndex(FLOAT, base + i);
                float expected = expectedWeight(n, op, steps, b, i);
                if (Float.floatToRawIntBits(got) != Float.floatToRawIntBits(expected)) {
                    if (first == null) {
                        first = String.format(Locale.ROOT, "bucket %d element %d is %s (0x%08x), expected %s (0x%08x)",
                                b, i, got, Float.floatToRawIntBits(got), expected, Float.floatToRawIntBits(expected));
                    }
                    wrong++;
                }
            }
        }
        return new Mismatch(wrong, first);
    }
}
