package org.jmscclpp.samples;

import java.util.List;
import org.jmscclpp.bootstrap.RankEnvironment;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/**
 * One rank of a program that {@code jmscclpp} can start: {@code jmscclpp run -n N NAME args} starts N
 * processes, each of which calls {@link #run} once with its own {@link RankEnvironment}; so do the ranks that
 * {@code mpirun}, {@code torchrun --no-python} or {@code srun} start with {@code jmscclpp NAME args}. A sample
 * joins its job with {@link RankEnvironment#join(org.jmscclpp.bootstrap.TcpBootstrap)}, which takes the
 * launcher's own rendezvous.
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

    /**
     * A fresh object of this sample's options, annotated for picocli ({@link SampleArgs}): the command
     * line checks a sample's arguments against it before it starts any rank and prints its
     * {@code --help} from it. The default declares no option.
     */
    default Object options() {
        return new SampleArgs.None();
    }

    /** Refuses any argument for the sample {@code name}: {@link ErrorCode#INVALID_USAGE} listing them. */
    static void requireNoArguments(String name, List<String> args) {
        if (!args.isEmpty()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, name + " takes no arguments, got " + args)
                    .phase("sample arguments").build();
        }
    }
}
