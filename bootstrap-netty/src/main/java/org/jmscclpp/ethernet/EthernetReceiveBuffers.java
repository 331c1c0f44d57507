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
 * read, and at most {@value #HEADER_READ} while a header is awaited).
 */
final class EthernetReceiveBuffers implements RecvByteBufAllocator {

    static final int MAX_POOLED = 64 << 10;
    /**
     * The most a read takes while the receiver waits for a frame's header: enough for a run of small
     * frames (a ping-pong's write and token come in one read), little enough that a large body
     * mostly goes into its destination, lent, instead of into a pooled buffer and then copied. With
     * the adaptive guess alone (up to {@value #MAX_POOLED}), a 64 KiB frame's first read took the
     * header and the whole body, which was then copied into place: a memory copy of every byte raw
     * TCP reads straight into place.
     */
    static final int HEADER_READ = 4 << 10;

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
        /** Whether the last read went into a lent destination. */
        private boolean lentLast;

        Lending(ExtendedHandle pooled) {
            super(pooled);
        }

        @Override
        public ByteBuf allocate(ByteBufAllocator alloc) {
            ByteBuf destination = receiver.lendDestination();
            lentLast = destination != null;
            if (destination != null) {
                return destination;
            }
            return receiver.betweenFrames() ? alloc.ioBuffer(Math.min(guess(), HEADER_READ)) : super.allocate(alloc);
        }

        /**
         * Stops after a read that completed a lent body: it filled its buffer exactly, so Netty
         * would read again to see whether more came, and that read (almost always empty: a writer
         * that flushes waits for this frame's ack) would delay the ack, which goes out when the
         * reads end. Netty's epoll transport is level-triggered: bytes that did come wake the loop
         * again at once.
         */
        @Override
        public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
            return !completedALentBody() && ((ExtendedHandle) delegate()).continueReading(maybeMoreDataSupplier);
        }

        @Override
        public boolean continueReading() {
            return !completedALentBody() && super.continueReading();
        }

        private boolean completedALentBody() {
            return lentLast && receiver.betweenFrames();
        }
    }
}
