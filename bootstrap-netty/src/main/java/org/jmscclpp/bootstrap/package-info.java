/**
 * org.jmscclpp.bootstrap.
 */
@NullMarked
package org.jmscclpp.bootstrap;

import org.jspecify.annotations.NullMarked;
