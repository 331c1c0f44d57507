package org.jmscclpp.core.metrics;

import java.nio.file.Path;
import org.jmscclpp.core.spi.TransportProviders;

/**
 * A JVM started by {@link MetricsSwitchTest} (metrics off, or no {@code jdk.jfr}): runs the whole
 * {@link MetricsJob} in the directory of {@code args[0]} and prints what the metrics saw, one
 * {@code key value} line each.
 */
public final class MetricsChild {

    private MetricsChild() {
    }

    public static void main(String[] args) {
        try (MetricsJob job = new MetricsJob(Path.of(args[0]))) {
            job.writeAndFlush();
            job.triggers();
            job.allReduces();
            System.out.println("enabled " + JmscclppMetrics.enabled());
            System.out.println("wrapped " + (TransportProviders.unwrap(job.connection0()) != job.connection0()));
            System.out.println("connections " + JmscclppMetrics.connections().size());
            System.out.println("proxies " + JmscclppMetrics.proxies().size());
            System.out.println("collectives " + JmscclppMetrics.collectives().size());
            System.out.println("jfr " + ModuleLayer.boot().findModule("jdk.jfr").isPresent());
            System.out.println("bytes " + JmscclppMetrics.connections().stream()
                    .filter(c -> c.rank() == 0 && c.peer() == 1).mapToLong(ConnectionMetrics::bytesWritten).sum());
            System.out.println("flushes " + JmscclppMetrics.connections().stream()
                    .filter(c -> c.rank() == 0 && c.peer() == 1).mapToLong(ConnectionMetrics::flushes).sum());
        }
        System.exit(0);
    }
}
