package org.jmscclpp.bootstrap;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jmscclpp.bootstrap.wire.Frame;
import org.jmscclpp.bootstrap.wire.FrameDecoder;
import org.jmscclpp.bootstrap.wire.FrameEncoder;
import org.jmscclpp.bootstrap.wire.Preamble;
import org.jmscclpp.bootstrap.wire.PreambleHandler;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jspecify.annotations.Nullable;

/**
 * The connections of one rank to its peers: one listening socket, and at most a couple of
 * persistent connections per peer, opened lazily and used for every tag and collective.
 *
 * <p>Either side of a pair may open the connection; a rank sends to a peer always on the same
 * connection (the first one it used), which keeps every (peer, tag) stream in order, and receives
 * on any. In collectives only the lower rank of a pair opens it and the higher one waits for it,
 * so a thousand ranks in one JVM open one connection per pair, not two.
 */
final class PeerLinks {

    private static final System.Logger LOG = Log.logger(PeerLinks.class, Subsystem.INIT);
    static final long HANDSHAKE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(
            Long.getLong("jmscclpp.bootstrap.handshakeTimeoutSeconds", 10));
    /**
     * Connections do not close on a failed write (Netty's auto-close is off), so that the frames the
     * peer sent before it left are still read; the reading side closes them at the end of the
     * stream, and a sender closes one this long after its write failed if that has not happened.
     * A send whose connection is gone then waits as long for a failure relayed over another
     * connection, which names the rank that died first.
     */
    static final long DRAIN_AFTER_FAILURE_MS = 2_000;

    /** What the owner hears from the connections. */
    interface Events {
        /** A frame arrived from an authenticated peer; the callee releases it. */
        void onFrame(int peer, Channel channel, Frame frame);

        /** A connection to {@code peer} closed (normally or not). */
        void onClosed(int peer, Channel channel);
    }

    private static final class Link {
        @Nullable Channel sendChannel;
        final List<Channel> channels = new ArrayList<>(2);
        @Nullable CompletableFuture<Channel> connecting;
        final List<CompletableFuture<Channel>> inboundWaiters = new ArrayList<>(1);
    }

    private final int rank;
    private final int size;
    private final byte[] secret;
    private final int maxFrameBytes;
    private final EventLoopGroup group;
    private final Events events;
    private final Link[] links;
    private final CompletableFuture<byte[]> session = new CompletableFuture<>();
    private volatile @Nullable AddressBook book;
    private @Nullable Channel listener;
    private @Nullable JmscclppException failure;
    /** Connections whose handshake is not finished (accepted or dialled); closed by {@link #closeAll()}. */
    private final Set<Channel> handshaking = new HashSet<>();
    /** Set by {@link #closeAll()}: a bind or connection that completes later is closed at once. */
    private boolean closed;

    PeerLinks(int rank, int size, byte[] secret, int maxFrameBytes, EventLoopGroup group, Events events) {
        this.rank = rank;
        this.size = size;
        this.secret = secret;
        this.maxFrameBytes = maxFrameBytes;
        this.group = group;
        this.events = events;
        this.links = new Link[size];
    }

    /** The state kept for {@code peer}, created on first use (a rank talks to few of its peers). */
    private synchronized Link link(int peer) {
        Link l = links[peer];
        if (l == null) {
            l = new Link();
            links[peer] = l;
        }
        return l;
    }

    /** Binds the listening socket on {@code address} (port 0 = any); completes with the bound address. */
    CompletableFuture<InetSocketAddress> listen(InetSocketAddress address) {
        CompletableFuture<InetSocketAddress> bound = new CompletableFuture<>();
        ServerBootstrap sb = new ServerBootstrap()
                .group(group)
                .channel(EventLoops.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 16384)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.ALLOCATOR, io.netty.buffer.PooledByteBufAllocator.DEFAULT)
                .childOption(ChannelOption.AUTO_CLOSE, false)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (!trackHandshake(ch)) {
                            ch.close();
                            return;
                        }
                        ch.pipeline().addLast(new FrameEncoder(), PreambleHandler.accepting(secret,
                                HANDSHAKE_TIMEOUT_NANOS, "rank " + rank + " listener", (ctx, p) -> acceptInbound(ctx, p)));
                    }
                });
        sb.bind(address).addListener((ChannelFuture f) -> {
            if (f.isSuccess()) {
                boolean tooLate;
                synchronized (this) {
                    tooLate = closed;
                    if (!tooLate) {
                        listener = f.channel();
                    }
                }
                if (tooLate) {
                    // the bootstrap closed while the bind was in flight (a cancelled initialize)
                    f.channel().close();
                    bound.completeExceptionally(JmscclppException.builder(ErrorCode.ABORTED,
                            "closed while binding the listening socket").rank(rank).phase("listen").build());
                    return;
                }
                bound.complete((InetSocketAddress) f.channel().localAddress());
            } else {
                bound.completeExceptionally(JmscclppException.builder(ErrorCode.SYSTEM_ERROR,
                        "cannot listen on " + address + ": " + f.cause()).rank(rank).phase("listen")
                        .cause(f.cause()).build());
            }
        });
        return bound;
    }

    /** The job session and the address book are known: connections can be opened and checked. */
    void setSession(byte[] sessionId) {
        session.complete(sessionId);
    }

    void setBook(AddressBook addressBook) {
        this.book = addressBook;
    }

    @Nullable AddressBook book() {
        return book;
    }

    /**
     * The connection this rank sends to {@code peer} on. Opens one when none exists and
     * {@code mayOpen}; otherwise waits for the peer to open one. The caller bounds the wait.
     */
    CompletableFuture<Channel> sendChannel(int peer, boolean mayOpen) {
        Link link = link(peer);
        synchronized (this) {
            if (failure != null) {
                return CompletableFuture.failedFuture(failure);
            }
            if (link.sendChannel != null) {
                return CompletableFuture.completedFuture(link.sendChannel);
            }
            if (!link.channels.isEmpty()) {
                link.sendChannel = link.channels.getFirst();
                return CompletableFuture.completedFuture(link.sendChannel);
            }
            if (link.connecting == null && !mayOpen) {
                CompletableFuture<Channel> waiter = new CompletableFuture<>();
                link.inboundWaiters.add(waiter);
                return waiter.thenApply(ch -> chooseSendChannel(link, ch));
            }
            if (link.connecting == null) {
                link.connecting = open(peer);
            }
            return link.connecting.thenApply(ch -> chooseSendChannel(link, ch));
        }
    }

    /** Opens a connection to {@code peer} if this is the lower rank of the pair and none exists yet. */
    void ensureOpenedByLower(int peer) {
        if (rank >= peer) {
            return;
        }
        Link link = link(peer);
        synchronized (this) {
            if (failure != null || !link.channels.isEmpty() || link.connecting != null) {
                return;
            }
            link.connecting = open(peer);
        }
    }

    /** Connections currently open (for relaying failures and for goodbyes). */
    synchronized List<Channel> allChannels() {
        List<Channel> all = new ArrayList<>();
        for (Link l : links) {
            if (l != null) {
                all.addAll(l.channels);
            }
        }
        return all;
    }

    /** Forgets a closed connection. */
    void closed(int peer, Channel ch) {
        synchronized (this) {
            Link link = link(peer);
            link.channels.remove(ch);
            if (link.sendChannel == ch) {
                link.sendChannel = null;
            }
        }
    }

    /** Fails every pending connection wait with {@code e}, and every later one. */
    void failAll(JmscclppException e) {
        List<CompletableFuture<Channel>> waiting = new ArrayList<>();
        synchronized (this) {
            if (failure != null) {
                return;
            }
            failure = e;
            for (Link l : links) {
                if (l == null) {
                    continue;
                }
                waiting.addAll(l.inboundWaiters);
                l.inboundWaiters.clear();
                if (l.connecting != null) {
                    waiting.add(l.connecting);
                }
            }
        }
        session.completeExceptionally(e);
        for (CompletableFuture<Channel> w : waiting) {
            w.completeExceptionally(e);
        }
    }

    /**
     * Stops accepting connections (connections already made stay), so that the listening port is
     * free for another socket: a shrunk job's root binds it. Returns the close future.
     */
    io.netty.util.concurrent.Future<?> closeListener() {
        Channel l;
        synchronized (this) {
            l = listener;
            listener = null;
        }
        return l == null ? group.next().newSucceededFuture(null) : l.close();
    }

    /**
     * Sends a goodbye on every connection and closes them and the listener; returns the close
     * futures so the caller can wait for them where it may block.
     */
    List<ChannelFuture> closeAll() {
        java.util.Map<Channel, Integer> channels = new java.util.LinkedHashMap<>();
        List<Channel> strays;
        Channel l;
        synchronized (this) {
            closed = true;
            for (Link link : links) {
                if (link != null) {
                    for (Channel ch : link.channels) {
                        channels.put(ch, link.channels.size());
                    }
                }
            }
            l = listener;
            listener = null;
            strays = new ArrayList<>(handshaking);
            handshaking.clear();
        }
        List<ChannelFuture> closing = new ArrayList<>();
        if (l != null) {
            closing.add(l.close());
        }
        for (Channel ch : strays) {
            closing.add(ch.close());
        }
        channels.forEach((ch, connectionsWithPeer) -> {
            if (ch.isActive()) {
                ChannelFuture closedFuture = ch.closeFuture();
                // the goodbye says how many connections this rank has with the peer: the peer
                // counts goodbyes, since one may overtake messages on the other
                LingeringClose.writeLastAndClose(ch, Frame.GOODBYE, connectionsWithPeer, Unpooled.EMPTY_BUFFER);
                closing.add(closedFuture);
            } else {
                closing.add(ch.close());
            }
        });
        return closing;
    }

    private Channel chooseSendChannel(Link link, Channel opened) {
        synchronized (this) {
            if (link.sendChannel == null) {
                link.sendChannel = opened;
            }
            return link.sendChannel;
        }
    }

    private CompletableFuture<Channel> open(int peer) {
        CompletableFuture<Channel> result = new CompletableFuture<>();
        AddressBook b = book;
        if (b == null) {
            result.completeExceptionally(JmscclppException.builder(ErrorCode.INTERNAL_ERROR,
                    "connection to rank " + peer + " wanted before the address book arrived")
                    .rank(rank).peer(peer).phase("connect").build());
            return result;
        }
        InetSocketAddress address = InterfaceSelector.reachableFrom(b.address(peer), b.address(rank).getAddress());
        session.thenAccept(sessionId -> new io.netty.bootstrap.Bootstrap()
                .group(group)
                .channel(EventLoops.socketChannel())
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.ALLOCATOR, io.netty.buffer.PooledByteBufAllocator.DEFAULT)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                .option(ChannelOption.AUTO_CLOSE, false)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (!trackHandshake(ch)) {
                            ch.close();
                            return;
                        }
                        PreambleHandler handshake = PreambleHandler.dialling(secret, HANDSHAKE_TIMEOUT_NANOS,
                                "rank " + rank + " connection to rank " + peer,
                                new Preamble(Preamble.TYPE_PEER, sessionId, rank, peer), (ctx, p) -> {
                                    String why = checkPeer(ctx, p, sessionId, peer);
                                    if (why == null) {
                                        register(peer, ctx.channel());
                                        result.complete(ctx.channel());
                                    }
                                    return why;
                                });
                        handshake.outcome().thenAccept(why -> {
                            if (why != null) {
                                result.completeExceptionally(JmscclppException.builder(ErrorCode.REMOTE_ERROR,
                                                "the handshake with rank " + peer + " at " + address + " failed: " + why)
                                        .rank(rank).peer(peer).phase("connect").build());
                            }
                        });
                        ch.pipeline().addLast(new FrameEncoder(), handshake);
                    }
                })
                .connect(address)
                .addListener((ChannelFuture f) -> {
                    if (!f.isSuccess()) {
                        result.completeExceptionally(JmscclppException.builder(ErrorCode.REMOTE_ERROR,
                                        "cannot connect to rank " + peer + " at " + address + ": " + f.cause().getMessage())
                                .rank(rank).peer(peer).phase("connect").cause(f.cause()).build());
                    }
                }));
        return result;
    }

    private CompletableFuture<PreambleHandler.Answer> acceptInbound(ChannelHandlerContext ctx, Preamble p) {
        if (p.type != Preamble.TYPE_PEER) {
            return refuse("a root check-in sent to a rank's listener");
        }
        if (p.receiverOrSize != rank) {
            return refuse("addressed to rank " + p.receiverOrSize + ", this is rank " + rank);
        }
        if (p.sender < 0 || p.sender >= size || p.sender == rank) {
            return refuse("sender rank " + p.sender + " is not a peer in a job of " + size);
        }
        return session.handle((sessionId, error) -> {
            if (error != null) {
                return PreambleHandler.Answer.refuse("this rank failed before the connection was checked");
            }
            if (!p.sessionEquals(sessionId)) {
                return PreambleHandler.Answer.refuse("preamble of another job session (a stale or foreign connection)");
            }
            return PreambleHandler.Answer.accept(new Preamble(Preamble.TYPE_PEER, sessionId, rank, p.sender),
                    (proven, dialler) -> {
                        proven.pipeline().addLast(new FrameDecoder(maxFrameBytes), new PeerHandler(dialler.sender));
                        register(dialler.sender, proven.channel());
                        return null;
                    });
        });
    }

    private static CompletableFuture<PreambleHandler.Answer> refuse(String why) {
        return CompletableFuture.completedFuture(PreambleHandler.Answer.refuse(why));
    }

    /** Checks the answer of the peer this rank dialled (already proven); on success installs the frame handlers. */
    private @Nullable String checkPeer(ChannelHandlerContext ctx, Preamble p, byte[] sessionId, int peer) {
        if (!p.sessionEquals(sessionId)) {
            return "preamble of another job session (a stale or foreign connection)";
        }
        if (p.type != Preamble.TYPE_PEER || p.sender != peer || p.receiverOrSize != rank) {
            return "the peer at rank " + peer + "'s address answered as rank " + p.sender;
        }
        ctx.pipeline().addLast(new FrameDecoder(maxFrameBytes), new PeerHandler(peer));
        return null;
    }

    private synchronized boolean trackHandshake(Channel ch) {
        if (closed) {
            return false;
        }
        handshaking.add(ch);
        ch.closeFuture().addListener(f -> {
            synchronized (PeerLinks.this) {
                handshaking.remove(ch);
            }
        });
        return true;
    }

    private void register(int peer, Channel ch) {
        List<CompletableFuture<Channel>> waiters;
        synchronized (this) {
            handshaking.remove(ch);
            if (closed) {
                // connected or accepted after closeAll(): nobody would ever close it
                ch.close();
                return;
            }
            Link link = link(peer);
            link.channels.add(ch);
            waiters = new ArrayList<>(link.inboundWaiters);
            link.inboundWaiters.clear();
        }
        ch.closeFuture().addListener(f -> events.onClosed(peer, ch));
        for (CompletableFuture<Channel> w : waiters) {
            w.complete(ch);
        }
    }

    /** Hands an authenticated peer's frames to the owner. */
    private final class PeerHandler extends ChannelInboundHandlerAdapter {
        private final int peer;

        PeerHandler(int peer) {
            this.peer = peer;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            events.onFrame(peer, ctx.channel(), (Frame) msg);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            LOG.log(Level.WARNING, "rank {0}: closing the connection with rank {1}: {2}", rank, peer, cause.toString());
            ctx.close();
        }
    }
}
