package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.socket.DuplexChannel;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.bootstrap.wire.Frame;

/**
 * Closes a connection after its last frame without losing that frame. Closing a TCP socket while
 * the peer's bytes are still unread makes the kernel send a reset, and a reset makes the peer drop
 * whatever it had not read yet, the last frame among it. So: once the last write is done, end this
 * direction (the FIN follows the frame), keep reading (the channel's handlers see, or drop, what
 * still comes) until the peer closes too, and close at the latest after the linger time.
 */
public final class LingeringClose {

    /**
     * How long a connection that sent its last frame waits for the peer to close too; below the 2 s
     * that closing a bootstrap waits for its connections.
     */
    static final long LAST_FRAME_LINGER_MS = 1_000;

    private LingeringClose() {
    }

    /**
     * Sends one last frame on {@code ch} from its event loop, then closes it once the frame is
     * written and the peer has closed too, at most {@link #LAST_FRAME_LINGER_MS} later (a welcome,
     * a failure report, a goodbye): an abrupt close could reset the connection before the peer read
     * the frame, and the peer would lose it.
     */
    static void writeLastAndClose(Channel ch, byte kind, long channel, ByteBuf payload) {
        ch.eventLoop().execute(() -> after(ch.writeAndFlush(new Frame(kind, Frame.LAST, channel, payload)),
                LAST_FRAME_LINGER_MS));
    }

    /** Closes {@code lastWrite}'s channel as the class describes once that write completes; at once if it failed. */
    public static void after(ChannelFuture lastWrite, long lingerMillis) {
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
