/**
 * The benchmarks of {@code jmscclpp bench}: each command starts its rank processes (a
 * {@code *RankSample} each) through the {@link org.jmscclpp.samples.Launcher}, reads the result
 * lines rank 0 prints and prints a markdown table beside a baseline measured in the same run: Open
 * MPI ({@code MpiBaseline}), a raw TCP socket pair ({@code RawTcpLink}), a C shared-memory floor
 * ({@code ShmPingPongFloor}), an in-process copy, or MSCCL++'s published figures. The C programs lie
 * beside this package as class-path resources and are compiled at run time. Built on
 * {@code org.jmscclpp.samples}; the command line ({@code org.jmscclpp.cli}) sits above it.
 */
@NullMarked
package org.jmscclpp.bench;

import org.jspecify.annotations.NullMarked;
