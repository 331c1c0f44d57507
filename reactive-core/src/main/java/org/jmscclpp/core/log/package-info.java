/**
 * The one logging facade of every jmscclpp module: {@link java.lang.System.Logger}, obtained through
 * {@link org.jmscclpp.core.log.Log#logger}, which also files each logger under an MSCCL++ debug
 * {@linkplain org.jmscclpp.core.log.Subsystem subsystem} and applies {@code MSCCLPP_DEBUG},
 * {@code MSCCLPP_DEBUG_SUBSYS} and {@code MSCCLPP_DEBUG_FILE} when the JDK's own backend
 * ({@code java.util.logging}) serves {@code System.Logger}. Internal: exported to the jmscclpp modules only.
 */
@NullMarked
package org.jmscclpp.core.log;

import org.jspecify.annotations.NullMarked;
