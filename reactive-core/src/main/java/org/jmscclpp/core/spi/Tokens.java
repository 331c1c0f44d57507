package org.jmscclpp.core.spi;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Atomic access to the 64-bit words that live in shared or host-visible memory: semaphore tokens,
 * the fifo's head, tail, state and trigger words, flushed positions. The words are 8-byte aligned
 * (every buffer a backend hands out is page aligned), so the access modes below are real atomics,
 * also between processes that map the same file.
 */
public final class Tokens {

    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private Tokens() {
    }

    public static long acquire(MemorySegment segment, long offset) {
        return (long) WORD.getAcquire(segment, offset);
    }

    public static long opaque(MemorySegment segment, long offset) {
        return (long) WORD.getOpaque(segment, offset);
    }

    public static void release(MemorySegment segment, long offset, long value) {
        WORD.setRelease(segment, offset, value);
    }

    public static long addRelease(MemorySegment segment, long offset, long delta) {
        return (long) WORD.getAndAddRelease(segment, offset, delta);
    }

    /** Atomic add with volatile semantics; returns the value before. */
    public static long getAndAdd(MemorySegment segment, long offset, long delta) {
        return (long) WORD.getAndAdd(segment, offset, delta);
    }

    /**
     * Atomic compare-and-set with volatile semantics: stores {@code value} when the word holds
     * {@code expected}; returns the value the word held (equal to {@code expected} exactly when it
     * stored).
     */
    public static long compareAndExchange(MemorySegment segment, long offset, long expected, long value) {
        return (long) WORD.compareAndExchange(segment, offset, expected, value);
    }

    public static long plain(MemorySegment segment, long offset) {
        return (long) WORD.get(segment, offset);
    }

    public static void setPlain(MemorySegment segment, long offset, long value) {
        WORD.set(segment, offset, value);
    }
}
