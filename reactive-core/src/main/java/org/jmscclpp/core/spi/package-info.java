/**
 * What backends and transports implement, and the small machinery they share with the core: providers found
 * through {@link java.util.ServiceLoader}, endpoints, connection checks, deadlines ({@link org.jmscclpp.core.spi.Waiting}),
 * the host identity and the device-handle layouts. Not an application API: on the module path this package is
 * exported to the jmscclpp modules only.
 */
@NullMarked
package org.jmscclpp.core.spi;

import org.jspecify.annotations.NullMarked;
