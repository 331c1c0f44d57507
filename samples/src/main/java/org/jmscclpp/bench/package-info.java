/**
 * The benchmarks of {@code jmscclpp bench}: each command starts its rank processes (a
 * {@code *RankSample} each) through the {@link org.jmscclpp.samples.Launcher}, reads the result
 * lines rank 0 prints and prints a table beside a baseline measured in the same run: NCCL
 * ({@code NcclCollective}, for {@code bench coll}), Open MPI ({@code MpiBaseline}), a raw TCP
 * socket pair ({@code RawTcpLink}), a C shared-memory floor ({@code ShmPingPongFloor}), an
 * in-process copy, or MSCCL++'s published figures. {@code bench coll} measures the library's
 * {@link org.jmscclpp.core.collective.CollectiveComm} in nccl-tests' style and checks every output
 * element with the samples' {@link org.jmscclpp.samples.CollectiveData}. The C programs lie beside
 * this package as class-path resources and are compiled at run time. Built on
 * {@code org.jmscclpp.samples}; the command line ({@code org.jmscclpp.cli}) sits above it.
 */
@NullMarked
package org.jmscclpp.bench;

import org.jspecify.annotations.NullMarked;
