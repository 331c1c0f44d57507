package org.jmscclpp.core;

import org.jmscclpp.core.proxy.ProxyService;
import org.jmscclpp.core.proxy.ProxyTrigger;

/**
 * A memory added to a {@link ProxyService}: its index there, the value triggers carry in their
 * 9-bit {@code srcMemoryId} and {@code dstMemoryId} fields. Ids belong to the service that issued
 * them.
 *
 * @param value 0 to {@value ProxyTrigger#MAX_MEMORY_ID}
 */
public record MemoryId(int value) {

    public MemoryId {
        if (value < 0 || value > ProxyTrigger.MAX_MEMORY_ID) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a memory id is 0 to "
                    + ProxyTrigger.MAX_MEMORY_ID + ", got " + value).phase("proxy service").build();
        }
    }
}
