/**
 * Small programs that show the API ({@code BootstrapDemo}, {@code MeshDemo},
 * {@code PortChannelDemo}, {@code OverlapSample}, and the collective samples
 * {@link org.jmscclpp.samples.CollectiveSample} on the library's
 * {@link org.jmscclpp.core.collective.CollectiveComm}), and the base every runnable of the
 * {@code jmscclpp} command shares: {@link org.jmscclpp.samples.Sample} (one rank, given its
 * {@link org.jmscclpp.bootstrap.RankEnvironment}), {@link org.jmscclpp.samples.ExitCodes},
 * {@link org.jmscclpp.samples.Blocking} waits with deadlines, {@link org.jmscclpp.samples.ByteSizes},
 * {@link org.jmscclpp.samples.SampleArgs} (options through picocli), {@link org.jmscclpp.samples.Version},
 * {@link org.jmscclpp.samples.MarkdownTable}, the
 * {@link org.jmscclpp.samples.Launcher}, which starts a job's ranks as processes of this host, and
 * what checks a collective's every output element ({@link org.jmscclpp.samples.CollectiveRun},
 * {@link org.jmscclpp.samples.CollectiveBuffers}, {@link org.jmscclpp.samples.CollectiveData},
 * {@link org.jmscclpp.samples.CollectiveJob}), which {@code jmscclpp bench coll} uses too. This
 * package uses neither {@code org.jmscclpp.bench} nor {@code org.jmscclpp.cli}.
 */
@NullMarked
package org.jmscclpp.samples;

import org.jspecify.annotations.NullMarked;
