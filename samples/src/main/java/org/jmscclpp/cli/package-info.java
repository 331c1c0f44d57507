/**
 * The {@code jmscclpp} command, which {@code bin/jmscclpp} runs ({@link org.jmscclpp.cli.Main}):
 * {@code run -n N SAMPLE} starts N ranks of a sample on this host through the
 * {@link org.jmscclpp.samples.Launcher}; {@code SAMPLE} alone runs one rank, whose identity comes
 * from the environment ({@link org.jmscclpp.bootstrap.RankEnvironment}); {@code bench ...} runs a
 * benchmark of {@code org.jmscclpp.bench} ({@link org.jmscclpp.bench.BenchCommands}). Options are
 * read with picocli from each command's annotated class, which also gives every command, benchmark
 * and sample its {@code --help}; {@code --version} comes from {@link org.jmscclpp.samples.Version}.
 * The registry of samples binds each name to its implementation in one place. This package sits on
 * top: it uses {@code org.jmscclpp.bench} and
 * {@code org.jmscclpp.samples}, and the rank processes the launcher starts reach it by class name.
 */
@NullMarked
package org.jmscclpp.cli;

import org.jspecify.annotations.NullMarked;
