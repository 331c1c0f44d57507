/**
 * The measuring side of {@link org.jmscclpp.core.metrics}: the counters that connections, proxy
 * loops and collective communicators feed, and the JFR event classes. Not exported: the core's own
 * packages call it; applications read {@link org.jmscclpp.core.metrics.JmscclppMetrics}.
 */
@NullMarked
package org.jmscclpp.core.metrics.probe;

import org.jspecify.annotations.NullMarked;
