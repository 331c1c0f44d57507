package org.jmscclpp.bootstrap;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The event-loop threads every bootstrap and root of this JVM share (a thousand ranks in one JVM
 * must not mean a thousand thread pools), and with them the {@code ETHERNET} transport's listeners.
 * Reference-counted: the first user starts the group, the last {@link #release()} shuts it down,
 * so a closed job leaves no thread behind. Native epoll is used where it loads, NIO elsewhere.
 */
public final class EventLoops {

    private static final Object LOCK = new Object();
    private static @Nullable EventLoopGroup group;
    private static int users;

    static final boolean EPOLL = Epoll.isAvailable();
    private static final long QUIET_MILLIS = 10;

    private EventLoops() {
    }

    /** The shared group, started if this is its first user; each call needs one {@link #release()}. */
    public static EventLoopGroup acquire() {
        synchronized (LOCK) {
            if (group == null) {
                // One thread by default: bootstrap traffic is small messages, and handing every
                // message between I/O threads cost more than it saved (measured with 1024 ranks in
                // one JVM on 2 cores: 160 ms per allGather with one thread, 330 ms with two).
                int threads = Integer.getInteger("jmscclpp.bootstrap.ioThreads", 1);
                IoHandlerFactory io = EPOLL
                        ? EpollIoHandler.newFactory(0, SpinThenWait.FACTORY)
                        : NioIoHandler.newFactory(java.nio.channels.spi.SelectorProvider.provider(), SpinThenWait.FACTORY);
                group = new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory("jmscclpp-io", true), io);
            }
            users++;
            return group;
        }
    }

    /** Gives back one {@link #acquire()}; the last user's release shuts the group down. */
    public static void release() {
        EventLoopGroup toStop = null;
        synchronized (LOCK) {
            if (users == 0) {
                return;
            }
            if (--users == 0) {
                toStop = group;
                group = null;
            }
        }
        if (toStop != null) {
            // A quiet period, not 0: a loop closes its channels once when it starts shutting down,
            // then runs the tasks still queued. With no quiet period it stops right after them, so a
            // channel one of them registers (a connect or bind racing the last close) stays open
            // for good. With one, the loop goes round again, closing it, until no task has come
            // for QUIET_MILLIS (Netty then needs about 100 ms more to notice).
            toStop.shutdownGracefully(QUIET_MILLIS, 2_000, TimeUnit.MILLISECONDS);
        }
    }

    /** Number of bootstraps, roots and ETHERNET sessions holding the group (tests check it returns to 0). */
    public static int users() {
        synchronized (LOCK) {
            return users;
        }
    }

    static Class<? extends SocketChannel> socketChannel() {
        return EPOLL ? EpollSocketChannel.class : NioSocketChannel.class;
    }

    /** The server channel class that goes with the group's transport (epoll or NIO). */
    public static Class<? extends ServerChannel> serverChannel() {
        return EPOLL ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }
}
