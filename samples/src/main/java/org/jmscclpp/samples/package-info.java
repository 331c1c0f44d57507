/**
 * org.jmscclpp.samples.
 */
@NullMarked
package org.jmscclpp.samples;

import org.jspecify.annotations.NullMarked;
