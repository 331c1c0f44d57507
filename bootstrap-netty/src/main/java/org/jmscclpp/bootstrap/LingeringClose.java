package org.jmscclpp.bootstrap;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.socket.DuplexChannel;
import java.util.concurrent.TimeUnit;

/**
 * Closes a connection after its last frame without losing that frame. Closing a TCP socket while
 * the peer's bytes are still unread makes the kernel send a reset, and a reset makes the peer drop
 * whatever it had not read yet, the last frame among it. So: once the last write is done, end this
 * direction (the FIN follows the frame), keep reading (the channel's handlers see, or drop, what
 * still comes) until the peer closes too, and close at the latest after the linger time.
 */
final class LingeringClose {

    private LingeringClose() {
    }

    /** Closes {@code lastWrite}'s channel as above once that write completes; at once if it failed. */
    static void after(ChannelFuture lastWrite, long lingerMillis) {
        Channel ch = lastWrite.channel();
        lastWrite.addListener(f -> {
            if (f.isSuccess() && ch.isActive() && ch instanceof DuplexChannel d) {
                d.shutdownOutput();
                ch.eventLoop().schedule(() -> ch.close(), lingerMillis, TimeUnit.MILLISECONDS);
            } else {
                ch.close();
            }
        });
    }
}
