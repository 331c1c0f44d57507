/**
 * Measurements of connections, proxies and collectives without any dependency ({@link
 * org.jmscclpp.core.metrics.JmscclppMetrics}), also emitted as Java Flight Recorder events; the
 * optional Micrometer binder is in {@code org.jmscclpp.core.metrics.micrometer}.
 */
@NullMarked
package org.jmscclpp.core.metrics;

import org.jspecify.annotations.NullMarked;
