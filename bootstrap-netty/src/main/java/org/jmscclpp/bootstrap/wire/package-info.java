/**
 * What the bootstrap puts on its TCP connections, as Netty handlers: the 64-byte
 * {@link org.jmscclpp.bootstrap.wire.Preamble} that opens every connection (checked by the
 * {@link org.jmscclpp.bootstrap.wire.PreambleHandler}), then length-prefixed
 * {@link org.jmscclpp.bootstrap.wire.Frame}s, written by the {@link org.jmscclpp.bootstrap.wire.FrameEncoder}
 * and read by the {@link org.jmscclpp.bootstrap.wire.FrameDecoder}. Each layout is described once, with a
 * byte diagram, in the Javadoc of {@code Preamble} and {@code Frame}. Used by the bootstrap; not an
 * application API.
 */
@NullMarked
package org.jmscclpp.bootstrap.wire;

import org.jspecify.annotations.NullMarked;
