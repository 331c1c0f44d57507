package org.jmscclpp.samples;

/**
 * The exit codes of the {@code jmscclpp} command, of its benchmarks and of every rank it starts
 * (what {@link Sample#run} returns).
 */
public final class ExitCodes {

    /** Success. */
    public static final int OK = 0;

    /** A failure: a rank failed, a check found wrong data, a deadline passed. */
    public static final int FAILURE = 1;

    /** Bad arguments or a missing rank identity; nothing was run. */
    public static final int USAGE = 2;

    private ExitCodes() {
    }
}
