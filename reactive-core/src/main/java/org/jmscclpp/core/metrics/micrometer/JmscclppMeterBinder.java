package org.jmscclpp.core.metrics.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;
import org.jmscclpp.core.metrics.CollectiveMetrics;
import org.jmscclpp.core.metrics.ConnectionMetrics;
import org.jmscclpp.core.metrics.JmscclppMetrics;
import org.jmscclpp.core.metrics.ProxyMetrics;
import org.jspecify.annotations.Nullable;

/**
 * Publishes {@link JmscclppMetrics} to a Micrometer {@link MeterRegistry}, as reactor-core-micrometer
 * does for Reactor: {@code new JmscclppMeterBinder().bindTo(registry)} (a Spring Boot application
 * only declares it as a bean). Micrometer is an optional dependency of jmscclpp-core: this package
 * is loaded only when an application uses it.
 *
 * <p>The meters read jmscclpp's own counters when the registry is scraped (function counters,
 * function timers, gauges), so binding adds nothing to the hot paths. Connections, proxies and
 * collectives that appear after binding get their meters as they appear; a closed proxy's meters
 * are removed. {@link #close()} stops following and removes every meter this binder registered.
 * Names and tags (see the README's "Metrics" section):
 * <ul>
 *   <li>{@code jmscclpp.connection.bytes} (counter, bytes), {@code jmscclpp.connection.operations}
 *       (counter, tag {@code op}: write, signal), {@code jmscclpp.connection.flush} (timer),
 *       {@code jmscclpp.connection.flush.errors} (counter); tags {@code rank}, {@code peer},
 *       {@code transport}</li>
 *   <li>{@code jmscclpp.proxy.fifo.occupancy} and {@code jmscclpp.proxy.fifo.capacity} (gauges),
 *       {@code jmscclpp.proxy.triggers} (counter, tag {@code type}: data, flag, sync, all); tag
 *       {@code proxy}</li>
 *   <li>{@code jmscclpp.collective.calls} (counter), {@code jmscclpp.collective.bytes} (counter,
 *       bytes), {@code jmscclpp.collective} (timer of completed calls),
 *       {@code jmscclpp.collective.errors} (counter); tags {@code rank}, {@code op}, {@code type},
 *       {@code size}</li>
 * </ul>
 */
public final class JmscclppMeterBinder implements MeterBinder, AutoCloseable {

    private final Tags extraTags;
    private final Object lock = new Object();
    private final List<Bound> bound = new ArrayList<>();
    private boolean closed;

    /** A binder whose meters carry only jmscclpp's tags. */
    public JmscclppMeterBinder() {
        this(Tags.empty());
    }

    /** A binder whose meters also carry {@code tags} (a job or host name, say). */
    public JmscclppMeterBinder(Iterable<io.micrometer.core.instrument.Tag> tags) {
        this.extraTags = Tags.of(tags);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Bound b = new Bound(registry);
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException("this JmscclppMeterBinder was closed");
            }
            bound.add(b);
        }
        b.handle = JmscclppMetrics.listen(b);
    }

    /** Stops following new sources and removes the meters this binder registered, from every registry. */
    @Override
    public void close() {
        List<Bound> all;
        synchronized (lock) {
            closed = true;
            all = List.copyOf(bound);
            bound.clear();
        }
        for (Bound b : all) {
            b.close();
        }
    }

    /** The meters of one registry. */
    private final class Bound implements JmscclppMetrics.Listener {
        private final MeterRegistry registry;
        private final List<Meter> meters = new ArrayList<>();
        private final Map<ProxyMetrics, List<Meter>> proxyMeters = new HashMap<>();
        private AutoCloseable handle = () -> { };

        Bound(MeterRegistry registry) {
            this.registry = registry;
        }

        @Override
        public synchronized void connectionAdded(ConnectionMetrics c) {
            Tags tags = extraTags.and("rank", Integer.toString(c.rank()), "peer", Integer.toString(c.peer()),
                    "transport", c.transport().name());
            meters.add(counter("jmscclpp.connection.bytes", c, ConnectionMetrics::bytesWritten, tags, "bytes",
                    "Bytes written by the connections of a rank to a peer over a transport"));
            meters.add(counter("jmscclpp.connection.operations", c, ConnectionMetrics::writes, tags.and("op", "write"),
                    null, "Operations started on the connections of a rank to a peer over a transport"));
            meters.add(counter("jmscclpp.connection.operations", c, ConnectionMetrics::signals,
                    tags.and("op", "signal"), null,
                    "Operations started on the connections of a rank to a peer over a transport"));
            meters.add(FunctionTimer.builder("jmscclpp.connection.flush", c, ConnectionMetrics::flushes,
                            ConnectionMetrics::flushNanos, TimeUnit.NANOSECONDS).tags(tags)
                    .description("Completed flushes of the connections of a rank to a peer over a transport")
                    .register(registry));
            meters.add(counter("jmscclpp.connection.flush.errors", c, ConnectionMetrics::flushErrors, tags, null,
                    "Flushes that failed"));
        }

        @Override
        public synchronized void proxyAdded(ProxyMetrics p) {
            Tags tags = extraTags.and("proxy", p.name());
            List<Meter> list = new ArrayList<>();
            list.add(gauge("jmscclpp.proxy.fifo.occupancy", p, x -> {
                long o = x.fifoOccupancy();
                return o < 0 ? Double.NaN : o;
            }, tags, "Triggers pushed into the proxy's fifo and not yet handled (NaN where the head is in device"
                    + " memory)"));
            list.add(gauge("jmscclpp.proxy.fifo.capacity", p, ProxyMetrics::fifoCapacity, tags,
                    "Triggers the proxy's fifo holds"));
            String help = "Triggers the proxy's loop handled, by type bit (all: every trigger)";
            list.add(counter("jmscclpp.proxy.triggers", p, ProxyMetrics::dataTriggers, tags.and("type", "data"), null,
                    help));
            list.add(counter("jmscclpp.proxy.triggers", p, ProxyMetrics::flagTriggers, tags.and("type", "flag"), null,
                    help));
            list.add(counter("jmscclpp.proxy.triggers", p, ProxyMetrics::syncTriggers, tags.and("type", "sync"), null,
                    help));
            list.add(counter("jmscclpp.proxy.triggers", p, ProxyMetrics::triggers, tags.and("type", "all"), null,
                    help));
            list.add(FunctionTimer.builder("jmscclpp.proxy.handle", p, ProxyMetrics::triggers,
                            ProxyMetrics::handleNanos, TimeUnit.NANOSECONDS).tags(tags)
                    .description("Triggers the proxy's loop handled and the time it took, the transports' calls"
                            + " included").register(registry));
            proxyMeters.put(p, list);
        }

        @Override
        public synchronized void proxyRemoved(ProxyMetrics p) {
            List<Meter> list = proxyMeters.remove(p);
            if (list != null) {
                list.forEach(registry::remove);
            }
        }

        @Override
        public synchronized void collectiveAdded(CollectiveMetrics c) {
            Tags tags = extraTags.and("rank", Integer.toString(c.rank()), "op", c.op().label(), "type",
                    c.type().label(), "size", c.size());
            meters.add(counter("jmscclpp.collective.calls", c, CollectiveMetrics::calls, tags, null,
                    "Collective calls issued"));
            meters.add(counter("jmscclpp.collective.bytes", c, CollectiveMetrics::bytes, tags, "bytes",
                    "Bytes of the collective calls issued (each call's size)"));
            meters.add(FunctionTimer.builder("jmscclpp.collective", c, CollectiveMetrics::completed,
                            CollectiveMetrics::nanos, TimeUnit.NANOSECONDS).tags(tags)
                    .description("Completed collective calls, from subscription to completion").register(registry));
            meters.add(counter("jmscclpp.collective.errors", c, CollectiveMetrics::errors, tags, null,
                    "Collective calls that failed"));
        }

        private <T> Meter counter(String name, T source, ToLongFunction<T> value, Tags tags, @Nullable String unit,
                                  String description) {
            return FunctionCounter.builder(name, source, x -> value.applyAsLong(x)).tags(tags).baseUnit(unit)
                    .description(description).register(registry);
        }

        private <T> Meter gauge(String name, T source, ToDoubleFunction<T> value, Tags tags, String description) {
            return Gauge.builder(name, source, value).tags(tags).description(description).strongReference(true)
                    .register(registry);
        }

        void close() {
            try {
                handle.close();
            } catch (Exception e) {
                // removing a listener does not fail
            }
            synchronized (this) {
                meters.forEach(registry::remove);
                meters.clear();
                proxyMeters.values().forEach(list -> list.forEach(registry::remove));
                proxyMeters.clear();
            }
        }
    }
}
