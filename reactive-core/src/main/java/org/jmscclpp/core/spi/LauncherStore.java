package org.jmscclpp.core.spi;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * A launcher's own key-value store, through which the ranks of a job it started agree on one value (the job's
 * unique id) without any address chosen by the user: PMIx, which {@code mpirun} (Open MPI) and Slurm's
 * {@code srun --mpi=pmix} run for their ranks. A module implements it (native-bridge binds {@code libpmix}
 * through JNA) and lists its {@link Provider} in {@code META-INF/services} or a module's {@code provides};
 * {@link LauncherStores} finds it. The bootstrap uses it; an application never needs it.
 */
public interface LauncherStore extends AutoCloseable {

    /** The store's name in messages, e.g. {@code "PMIx"}. */
    String name();

    /**
     * Every rank of the job calls this once with the same {@code key}: rank 0 passes its {@code value}, the
     * others {@code null}; each returns rank 0's value. Blocks the calling thread (call it from a platform
     * thread: native waits pin a virtual thread's carrier) for at most about {@code timeout}.
     *
     * @throws org.jmscclpp.core.JmscclppException TIMEOUT when the job's ranks did not all arrive in time,
     *                                             REMOTE_ERROR or SYSTEM_ERROR naming the store's failure
     */
    byte[] shareFromRankZero(String key, byte @Nullable [] value, Duration timeout);

    /** Leaves the store (PMIx_Finalize); idempotent. */
    @Override
    void close();

    /** Opens a {@link LauncherStore} where the process's environment shows its launcher. */
    interface Provider {

        /** The store's name, as {@link LauncherStore#name()}. */
        String name();

        /**
         * Whether {@code env} shows that this process was started under this store's server (e.g.
         * {@code PMIX_RANK} and {@code PMIX_NAMESPACE} set); says nothing about whether it can be reached.
         */
        boolean detects(Map<String, String> env);

        /**
         * Connects to the store as rank {@code rank} of the job.
         *
         * @return the store, or empty with nothing opened when this process has no such store after all
         * @throws org.jmscclpp.core.JmscclppException SYSTEM_ERROR naming what is missing (the library, the
         *                                             server) when the environment shows the store but it cannot
         *                                             be joined
         */
        Optional<LauncherStore> open(Map<String, String> env, int rank);
    }
}
