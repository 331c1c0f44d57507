/**
 * The optional Micrometer binding of {@link org.jmscclpp.core.metrics.JmscclppMetrics}:
 * {@link org.jmscclpp.core.metrics.micrometer.JmscclppMeterBinder}. Needs {@code io.micrometer:micrometer-core}
 * on the class or module path; nothing else in jmscclpp loads this package.
 */
@NullMarked
package org.jmscclpp.core.metrics.micrometer;

import org.jspecify.annotations.NullMarked;
