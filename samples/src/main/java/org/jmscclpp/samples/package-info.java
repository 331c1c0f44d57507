/**
 * Small programs that show the API ({@code BootstrapDemo}, {@code MeshDemo},
 * {@code PortChannelDemo}), and the base every runnable of the {@code jmscclpp} command shares:
 * {@link org.jmscclpp.samples.Sample} (one rank, given its
 * {@link org.jmscclpp.bootstrap.RankEnvironment}), {@link org.jmscclpp.samples.ExitCodes},
 * {@link org.jmscclpp.samples.Blocking} waits with deadlines, {@link org.jmscclpp.samples.ByteSizes},
 * and the {@link org.jmscclpp.samples.Launcher}, which starts a job's ranks as processes of this
 * host. This package uses neither {@code org.jmscclpp.bench} nor {@code org.jmscclpp.cli}, except
 * for the collective samples and {@code bench coll}, which stay here until they move onto the
 * library's collective API.
 */
@NullMarked
package org.jmscclpp.samples;

import org.jspecify.annotations.NullMarked;
