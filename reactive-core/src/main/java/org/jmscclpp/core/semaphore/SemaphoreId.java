package org.jmscclpp.core.semaphore;

import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.proxy.ProxyTrigger;

/**
 * A semaphore added to a {@link ProxyService}: its index there, the value triggers carry in their
 * 10-bit {@code semaphoreId} field. Ids belong to the service that issued them.
 *
 * @param value 0 to {@value ProxyTrigger#MAX_SEMAPHORE_ID}
 */
public record SemaphoreId(int value) {

    public SemaphoreId {
        if (value < 0 || value > ProxyTrigger.MAX_SEMAPHORE_ID) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a semaphore id is 0 to "
                    + ProxyTrigger.MAX_SEMAPHORE_ID + ", got " + value).phase("proxy service").build();
        }
    }
}
