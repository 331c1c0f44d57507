/**
 * org.jmscclpp.core.
 */
@NullMarked
package org.jmscclpp.core;

import org.jspecify.annotations.NullMarked;
