package org.jmscclpp.bootstrap;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoopGroup;
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
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.NonBlocking;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The event-loop threads every bootstrap and root of this JVM share (a thousand ranks in one JVM
 * must not mean a thousand thread pools), and with them the {@code ETHERNET} transport's listeners.
 * Reference-counted: the first user starts the group, the last {@link #release()} shuts it down,
 * so a closed job leaves no thread behind. Native epoll is used where it loads, NIO elsewhere.
 *
 * <p>The shared group's threads ({@code jmscclpp-io-*}) are Reactor {@link NonBlocking} threads: a
 * {@code block()} on one of them fails at once with Reactor's {@link IllegalStateException} instead of
 * stalling every connection of the JVM. A service that supplies its own group
 * ({@link BootstrapOptions.Builder#eventLoopGroup}) holds a {@link Lease} on it that never shuts it down.
 */
public final class EventLoops {

    /** The system property of the shared group's thread count (default 1). */
    static final String IO_THREADS_PROPERTY = "jmscclpp.bootstrap.ioThreads";

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
                int threads = ioThreads(System.getProperty(IO_THREADS_PROPERTY));
                IoHandlerFactory io = EPOLL
                        ? EpollIoHandler.newFactory(0, SpinThenWait.FACTORY)
                        : NioIoHandler.newFactory(java.nio.channels.spi.SelectorProvider.provider(), SpinThenWait.FACTORY);
                group = new MultiThreadIoEventLoopGroup(threads, new IoThreadFactory("jmscclpp-io"), io);
            }
            users++;
            return group;
        }
    }

    /** {@value #IO_THREADS_PROPERTY}: 1 when unset or blank; INVALID_USAGE naming it when not an integer >= 1. */
    private static int ioThreads(@Nullable String value) {
        if (value == null || value.isBlank()) {
            return 1;
        }
        try {
            int threads = Integer.parseInt(value.strip());
            if (threads >= 1) {
                return threads;
            }
        } catch (NumberFormatException e) {
            // named below
        }
        throw JmscclppException.builder(ErrorCode.INVALID_USAGE, IO_THREADS_PROPERTY
                + " must be an integer of at least 1, got '" + value + "'").phase("options").build();
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

    /** Whether the default event loops use the native epoll transport (else NIO). */
    public static boolean epoll() {
        return EPOLL;
    }

    static Class<? extends SocketChannel> socketChannel() {
        return EPOLL ? EpollSocketChannel.class : NioSocketChannel.class;
    }

    /** The server channel class that goes with the group's transport (epoll or NIO). */
    public static Class<? extends ServerChannel> serverChannel() {
        return EPOLL ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }

    /** The socket channel class that runs on {@code group}: epoll on an epoll group, NIO otherwise. */
    static Class<? extends SocketChannel> socketChannel(EventLoopGroup group) {
        return isEpoll(group) ? EpollSocketChannel.class : NioSocketChannel.class;
    }

    /** The server channel class that runs on {@code group}: epoll on an epoll group, NIO otherwise. */
    public static Class<? extends ServerChannel> serverChannel(EventLoopGroup group) {
        return isEpoll(group) ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }

    private static boolean isEpoll(EventLoopGroup group) {
        return group instanceof IoEventLoopGroup io ? io.isIoType(EpollIoHandler.class) : EPOLL;
    }

    /**
     * A hold on the event loops one bootstrap, root or ETHERNET session runs on: the shared group, or
     * the group a service supplied; {@link #close()} gives the shared group back (its last user's close
     * shuts it down) and leaves a supplied one alone, since the service owns it.
     */
    public static Lease lease(@Nullable EventLoopGroup supplied) {
        return supplied != null ? new Lease(supplied, false) : new Lease(acquire(), true);
    }

    /** See {@link #lease}. */
    public static final class Lease implements AutoCloseable {
        private final EventLoopGroup group;
        private final boolean shared;
        private final AtomicBoolean released = new AtomicBoolean();
        private final Scheduler timers;

        private Lease(EventLoopGroup group, boolean shared) {
            this.group = group;
            this.shared = shared;
            // never disposed: disposing it would shut the group down
            this.timers = Schedulers.fromExecutorService(group, "jmscclpp-io-timers");
        }

        /** The group. */
        public EventLoopGroup group() {
            return group;
        }

        /** The group as a Reactor {@link Scheduler} for timers; tasks run on its event loops. */
        public Scheduler timers() {
            return timers;
        }

        /** Whether the caller runs on one of this group's event loops, where waiting for a channel could deadlock. */
        public boolean inEventLoop() {
            for (EventExecutor e : group) {
                if (e.inEventLoop()) {
                    return true;
                }
            }
            return false;
        }

        /** The socket channel class for this group. */
        Class<? extends SocketChannel> socketChannel() {
            return EventLoops.socketChannel(group);
        }

        /** The server channel class for this group. */
        public Class<? extends ServerChannel> serverChannel() {
            return EventLoops.serverChannel(group);
        }

        /** Gives the shared group back (once); a supplied group stays as it is. */
        @Override
        public void close() {
            if (shared && released.compareAndSet(false, true)) {
                release();
            }
        }
    }

    /**
     * Makes the shared group's threads: Netty's fast-thread-local threads that are also Reactor
     * {@link NonBlocking}, so that Reactor refuses to {@code block()} on them.
     */
    static final class IoThreadFactory extends DefaultThreadFactory {
        IoThreadFactory(String prefix) {
            super(prefix, true);
        }

        @Override
        protected Thread newThread(Runnable r, String name) {
            return new IoThread(threadGroup, r, name);
        }
    }

    /** An event-loop thread of the shared group; Reactor sees it as {@link NonBlocking}. */
    static final class IoThread extends FastThreadLocalThread implements NonBlocking {
        IoThread(ThreadGroup group, Runnable r, String name) {
            super(group, r, name);
        }
    }
}
