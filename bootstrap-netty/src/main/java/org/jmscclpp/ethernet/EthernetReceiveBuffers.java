package org.jmscclpp.ethernet;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.util.UncheckedBooleanSupplier;

/**
 * The buffers an {@link EthernetReceiver}'s socket reads into. While a WRITE body bound for memory
 * the host can reach is being read, the read goes into the destination itself (see
 * {@link EthernetReceiver#lendDestination()}), so the kernel copies the socket's bytes straight
 * into place, as a plain blocking {@code read} into the buffer would; headers, tokens and bodies
 * for device memory go into Netty's pooled buffers as usual (at most {@value #MAX_POOLED} bytes per
 * read).
 */
final class EthernetReceiveBuffers implements RecvByteBufAllocator {

    static final int MAX_POOLED = 64 << 10;

    /**
     * Reads per wake-up of the event loop while the socket keeps filling the buffers it is given,
     * Netty's own figure for stream sockets. An allocator set on a channel keeps its own count, and
     * {@link AdaptiveRecvByteBufAllocator}'s is 1: a 1 MiB frame then took one epoll round per read
     * (traced on this project's 2-core machine: a pooled 64 KiB read of the header and the body's
     * start, then the rest, lent, in a second round 100 to 230 µs later).
     */
    static final int READS_PER_WAKE = 16;

    private final RecvByteBufAllocator pooled =
            new AdaptiveRecvByteBufAllocator(64, 2048, MAX_POOLED).maxMessagesPerRead(READS_PER_WAKE);
    private final EthernetReceiver receiver;

    EthernetReceiveBuffers(EthernetReceiver receiver) {
        this.receiver = receiver;
    }

    @Override
    public Handle newHandle() {
        return new Lending((ExtendedHandle) pooled.newHandle());
    }

    private final class Lending extends DelegatingHandle implements ExtendedHandle {
        Lending(ExtendedHandle pooled) {
            super(pooled);
        }

        @Override
        public ByteBuf allocate(ByteBufAllocator alloc) {
            ByteBuf destination = receiver.lendDestination();
            return destination != null ? destination : super.allocate(alloc);
        }

        @Override
        public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
            return ((ExtendedHandle) delegate()).continueReading(maybeMoreDataSupplier);
        }
    }
}
