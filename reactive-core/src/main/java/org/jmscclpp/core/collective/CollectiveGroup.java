package org.jmscclpp.core.collective;

import org.jmscclpp.core.DeviceBuffer;
import org.jspecify.annotations.Nullable;

/**
 * The calls of one {@link CollectiveComm#group}: each method records a call (checking its
 * arguments at once: INVALID_USAGE) and returns this group; nothing moves before the group's Mono
 * is subscribed and the recording function has returned.
 */
public interface CollectiveGroup {

    CollectiveGroup allReduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type, ReduceOp op);

    CollectiveGroup allGather(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long sendCount, DataType type);

    CollectiveGroup reduceScatter(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long recvCount, DataType type, ReduceOp op);

    CollectiveGroup broadcast(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type, int root);

    CollectiveGroup reduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type, ReduceOp op,
                           int root);

    CollectiveGroup allToAll(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type);

    CollectiveGroup send(@Nullable DeviceBuffer send, long count, DataType type, int peer);

    CollectiveGroup recv(@Nullable DeviceBuffer recv, long count, DataType type, int peer);

    /** Records {@code call}. */
    CollectiveGroup add(CollectiveCall call);
}
