package org.jmscclpp.samples;

import java.util.List;

/**
 * One rank of a program that {@code jmscclpp} can start: {@code jmscclpp run -n N NAME args} starts N
 * processes, each of which calls {@link #run} once with its own {@link RankEnvironment}.
 */
@FunctionalInterface
public interface Sample {

    /**
     * Runs this rank to completion on the calling thread.
     *
     * @param env  who this rank is and where the root is
     * @param args the arguments after the sample's name
     * @return the process exit code: 0 for success, 1 for failure, 2 for bad arguments
     * @throws Exception any failure; the command line prints it and exits with 1 (2 for
     *                   {@code INVALID_USAGE})
     */
    int run(RankEnvironment env, List<String> args) throws Exception;
}
