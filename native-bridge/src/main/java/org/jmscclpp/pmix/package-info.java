/**
 * The PMIx key-value store as a launcher's rendezvous ({@link org.jmscclpp.pmix.PmixStoreProvider}, found through
 * {@code META-INF/services}): {@code mpirun} (Open MPI 4 and later) and Slurm's {@code srun --mpi=pmix} run a PMIx
 * server for their ranks, and rank 0 shares the job's unique id through it, so a job needs no address from the user.
 */
@NullMarked
package org.jmscclpp.pmix;

import org.jspecify.annotations.NullMarked;
