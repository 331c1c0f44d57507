package org.jmscclpp.core.proxy;

import java.time.Duration;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.semaphore.SemaphoreId;

/**
 * One completed flush of a {@link ProxyService}: the connection finished every write issued before
 * the {@link ProxyTrigger#SYNC} trigger at {@code fifoPosition}. Emitted by
 * {@link ProxyService#flushes()}.
 *
 * @param connection   the connection that was flushed (this rank, the peer, the tag)
 * @param semaphoreId  the semaphore whose trigger asked for the flush
 * @param fifoPosition the position of that trigger in the service's fifo
 * @param bytes        bytes the DATA triggers of that semaphore moved since its previous flush
 *                     (that is, since its previous SYNC trigger)
 * @param latency      from the proxy taking the SYNC trigger to the connection reporting the flush done
 */
public record FlushCompletion(ConnectionContext connection, SemaphoreId semaphoreId, long fifoPosition, long bytes,
                              Duration latency) {
}
