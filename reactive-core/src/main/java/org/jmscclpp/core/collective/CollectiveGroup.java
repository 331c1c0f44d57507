package org.jmscclpp.core.collective;

import org.jmscclpp.core.DeviceBuffer;
import org.jspecify.annotations.Nullable;

/**
 * The calls of one {@link CollectiveComm#group}: each method records a call (checking its
 * arguments at once: INVALID_USAGE) and returns this group; nothing moves before the group's Mono
 * is subscribed and the recording function has returned.
 */
public interface CollectiveGroup {

    default CollectiveGroup allReduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type,
                                      ReduceOp op) {
        return add(CollectiveCall.allReduce(send, recv, count, type, op));
    }

    default CollectiveGroup allGather(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long sendCount,
                                      DataType type) {
        return add(CollectiveCall.allGather(send, recv, sendCount, type));
    }

    default CollectiveGroup reduceScatter(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long recvCount,
                                          DataType type, ReduceOp op) {
        return add(CollectiveCall.reduceScatter(send, recv, recvCount, type, op));
    }

    default CollectiveGroup broadcast(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type,
                                      int root) {
        return add(CollectiveCall.broadcast(send, recv, count, type, root));
    }

    default CollectiveGroup reduce(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type,
                                   ReduceOp op, int root) {
        return add(CollectiveCall.reduce(send, recv, count, type, op, root));
    }

    default CollectiveGroup allToAll(@Nullable DeviceBuffer send, @Nullable DeviceBuffer recv, long count, DataType type) {
        return add(CollectiveCall.allToAll(send, recv, count, type));
    }

    default CollectiveGroup send(@Nullable DeviceBuffer send, long count, DataType type, int peer) {
        return add(CollectiveCall.send(send, count, type, peer));
    }

    default CollectiveGroup recv(@Nullable DeviceBuffer recv, long count, DataType type, int peer) {
        return add(CollectiveCall.recv(recv, count, type, peer));
    }

    /** Records {@code call}; every method of a kind above is this call of its {@link CollectiveCall}. */
    CollectiveGroup add(CollectiveCall call);
}
