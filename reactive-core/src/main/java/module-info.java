/**
 * jmscclpp's core: the API every rank uses (bootstrap, communicator, registered memory, connections), the proxy,
 * channels, semaphores, packets and collectives, and the host backend that runs CPU ranks end to end; their metrics
 * ({@code org.jmscclpp.core.metrics}: counters and JFR events, and an optional Micrometer binder).
 *
 * <p>{@code org.jmscclpp.core.spi} (what backends and transports implement) is exported to the jmscclpp modules
 * only; an application never needs it, nor {@code org.jmscclpp.core.log}, where every module gets its
 * {@link java.lang.System.Logger} and {@code MSCCLPP_DEBUG} is applied.
 */
module org.jmscclpp.core {
    // System.Logger's default backend, which MSCCLPP_DEBUG configures (org.jmscclpp.core.log)
    requires java.logging;
    requires transitive reactor.core;
    requires transitive org.reactivestreams;
    requires static transitive org.jspecify;
    // static: a runtime without Flight Recorder (a jlink image) runs without the JFR events (see metrics.probe.Jfr)
    requires static jdk.jfr;
    // only org.jmscclpp.core.metrics.micrometer uses it, and only an application that binds a registry loads that;
    // not transitive: modules that require this one compile without Micrometer (an application that binds a
    // registry requires micrometer.core itself)
    requires static micrometer.core;

    exports org.jmscclpp.core;
    exports org.jmscclpp.core.channel;
    exports org.jmscclpp.core.collective;
    exports org.jmscclpp.core.host;
    exports org.jmscclpp.core.metrics;
    exports org.jmscclpp.core.metrics.micrometer;
    exports org.jmscclpp.core.packet;
    exports org.jmscclpp.core.proxy;
    exports org.jmscclpp.core.semaphore;
    exports org.jmscclpp.core.spi to org.jmscclpp.bootstrap, org.jmscclpp.nativebridge;
    exports org.jmscclpp.core.hierarchy to org.jmscclpp.nativebridge;
    exports org.jmscclpp.core.log to org.jmscclpp.bootstrap, org.jmscclpp.nativebridge;

    uses org.jmscclpp.core.spi.BackendProvider;
    uses org.jmscclpp.core.spi.LauncherStore.Provider;
    uses org.jmscclpp.core.spi.TransportProvider;
    uses org.jmscclpp.core.collective.CollectiveEngine;

    provides org.jmscclpp.core.spi.BackendProvider with org.jmscclpp.core.host.HostBackendProvider;
    provides org.jmscclpp.core.collective.CollectiveEngine with org.jmscclpp.core.host.HostCollectiveEngine;
}
