/**
 * org.jmscclpp.nativebridge.
 */
@NullMarked
package org.jmscclpp.nativebridge;

import org.jspecify.annotations.NullMarked;
