package org.jmscclpp.bootstrap;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jmscclpp.bootstrap.wire.Frame;
import org.jmscclpp.bootstrap.wire.FrameDecoder;
import org.jmscclpp.bootstrap.wire.FrameEncoder;
import org.jmscclpp.bootstrap.wire.Preamble;
import org.jmscclpp.bootstrap.wire.PreambleHandler;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.spi.Tunables;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

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
            Tunables.longValue("jmscclpp.bootstrap.handshakeTimeoutSeconds", 10, 1, 86_400));
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

        /**
         * Dialling {@code peer} failed before any handshake: nothing listens at its address (its
         * process is gone) or the network does not reach it. {@code error} names the peer.
         */
        void onUnreachable(int peer, JmscclppException error);
    }

    private static final class Link {
        @Nullable Channel sendChannel;
        final List<Channel> channels = new ArrayList<>(2);
        @Nullable OneShot<Channel> connecting;
        final List<OneShot<Channel>> inboundWaiters = new ArrayList<>(1);
    }

    private final int rank;
    private final int size;
    private final byte[] secret;
    private final int maxFrameBytes;
    private final EventLoops.Lease loops;
    private final Events events;
    private final Link[] links;
    private final OneShot<byte[]> session = new OneShot<>();
    private volatile @Nullable AddressBook book;
    private @Nullable Channel listener;
    private @Nullable JmscclppException failure;
    /** Set with {@link #failure} when the failure is relayed: it also goes on connections made later. */
    private @Nullable Consumer<Channel> relay;
    /** Connections whose handshake is not finished (accepted or dialled); closed by {@link #closeAll()}. */
    private final Set<Channel> handshaking = new HashSet<>();
    /** Set by {@link #closeAll()}: a bind or connection that completes later is closed at once. */
    private boolean closed;

    PeerLinks(int rank, int size, byte[] secret, int maxFrameBytes, EventLoops.Lease loops, Events events) {
        this.rank = rank;
        this.size = size;
        this.secret = secret;
        this.maxFrameBytes = maxFrameBytes;
        this.loops = loops;
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
    Mono<InetSocketAddress> listen(InetSocketAddress address) {
        OneShot<InetSocketAddress> bound = new OneShot<>();
        ServerBootstrap sb = new ServerBootstrap()
                .group(loops.group())
                .channel(loops.serverChannel())
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
        // followed whether or not anyone still waits: a bind that completes after a close is undone
        NettyFutures.toMono(sb.bind(address)).subscribe(ch -> {
            boolean tooLate;
            synchronized (this) {
                tooLate = closed;
                if (!tooLate) {
                    listener = ch;
                }
            }
            if (tooLate) {
                // the bootstrap closed while the bind was in flight (a cancelled initialize)
                ch.close();
                bound.fail(JmscclppException.builder(ErrorCode.ABORTED,
                        "closed while binding the listening socket").rank(rank).phase("listen").build());
                return;
            }
            bound.succeed((InetSocketAddress) ch.localAddress());
        }, error -> bound.fail(JmscclppException.builder(ErrorCode.SYSTEM_ERROR,
                "cannot listen on " + address + ": " + error).rank(rank).phase("listen").cause(error).build()));
        return bound.mono();
    }

    /** The job session and the address book are known: connections can be opened and checked. */
    void setSession(byte[] sessionId) {
        session.succeed(sessionId);
    }

    void setBook(AddressBook addressBook) {
        this.book = addressBook;
    }

    @Nullable AddressBook book() {
        return book;
    }

    /**
     * The connection this rank sends to {@code peer} on. Opens one when none exists and
     * {@code mayOpen}; otherwise waits for the peer to open one. The connection is opened (or the
     * wait starts) at the call; the caller bounds the wait.
     */
    Mono<Channel> sendChannel(int peer, boolean mayOpen) {
        Link link = link(peer);
        synchronized (this) {
            if (failure != null) {
                return Mono.error(failure);
            }
            if (link.sendChannel != null) {
                return Mono.just(link.sendChannel);
            }
            if (!link.channels.isEmpty()) {
                link.sendChannel = link.channels.getFirst();
                return Mono.just(link.sendChannel);
            }
            if (link.connecting == null && !mayOpen) {
                OneShot<Channel> waiter = new OneShot<>();
                link.inboundWaiters.add(waiter);
                return waiter.mono().map(ch -> chooseSendChannel(link, ch));
            }
            if (link.connecting == null) {
                link.connecting = open(peer);
            }
            return link.connecting.mono().map(ch -> chooseSendChannel(link, ch));
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

    /** Connections currently open. */
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

    /**
     * Fails every pending connection wait with {@code e}, and every later one. A non-null
     * {@code relay} (which writes the failure on a connection) runs first on every open
     * connection, before any waiter hears of the failure, and on every connection registered
     * later: a peer whose dial or accept completes after this rank failed hears of it too, before
     * the goodbye of a close.
     */
    void failAll(JmscclppException e, @Nullable Consumer<Channel> relay) {
        List<OneShot<Channel>> waiting = new ArrayList<>();
        List<Channel> open = new ArrayList<>();
        synchronized (this) {
            if (failure != null) {
                return;
            }
            failure = e;
            this.relay = relay;
            for (Link l : links) {
                if (l == null) {
                    continue;
                }
                open.addAll(l.channels);
                waiting.addAll(l.inboundWaiters);
                l.inboundWaiters.clear();
                if (l.connecting != null) {
                    waiting.add(l.connecting);
                }
            }
        }
        if (relay != null) {
            open.forEach(relay);
        }
        session.fail(e);
        for (OneShot<Channel> w : waiting) {
            w.fail(e);
        }
    }

    /**
     * Stops accepting connections (connections already made stay), so that the listening port is
     * free for another socket: a shrunk job's root binds it. Completes once it is closed.
     */
    Mono<Void> closeListener() {
        Channel l;
        synchronized (this) {
            l = listener;
            listener = null;
        }
        return l == null ? Mono.empty() : NettyFutures.toMono(l.close()).then();
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

    private OneShot<Channel> open(int peer) {
        OneShot<Channel> result = new OneShot<>();
        AddressBook b = book;
        if (b == null) {
            result.fail(JmscclppException.builder(ErrorCode.INTERNAL_ERROR,
                    "connection to rank " + peer + " wanted before the address book arrived")
                    .rank(rank).peer(peer).phase("connect").build());
            return result;
        }
        InetSocketAddress address = InterfaceSelector.reachableFrom(b.address(peer), b.address(rank).getAddress());
        // a failed session fails the connection through failAll
        session.mono().subscribe(sessionId -> connect(peer, address, sessionId, result), error -> { });
        return result;
    }

    private void connect(int peer, InetSocketAddress address, byte[] sessionId, OneShot<Channel> result) {
        ChannelFuture connecting = new io.netty.bootstrap.Bootstrap()
                .group(loops.group())
                .channel(loops.socketChannel())
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
                                        result.succeed(ctx.channel());
                                    }
                                    return why;
                                });
                        handshake.refusal().subscribe(why -> result.fail(JmscclppException.builder(
                                        ErrorCode.REMOTE_ERROR,
                                        "the handshake with rank " + peer + " at " + address + " failed: " + why)
                                .rank(rank).peer(peer).phase("connect").build()));
                        ch.pipeline().addLast(new FrameEncoder(), handshake);
                    }
                })
                .connect(address);
        NettyFutures.toMono(connecting).subscribe(ch -> { }, error -> {
            JmscclppException e = JmscclppException.builder(ErrorCode.REMOTE_ERROR, "cannot connect to rank " + peer
                    + " at " + address + ": " + NettyFutures.connectFailure(error)).rank(rank).peer(peer)
                    .phase("connect").cause(error).build();
            result.fail(e);
            events.onUnreachable(peer, e);
        });
    }

    private Mono<PreambleHandler.Answer> acceptInbound(ChannelHandlerContext ctx, Preamble p) {
        if (p.type != Preamble.TYPE_PEER) {
            return refuse("a root check-in sent to a rank's listener");
        }
        if (p.receiverOrSize != rank) {
            return refuse("addressed to rank " + p.receiverOrSize + ", this is rank " + rank);
        }
        if (p.sender < 0 || p.sender >= size || p.sender == rank) {
            return refuse("sender rank " + p.sender + " is not a peer in a job of " + size);
        }
        return session.mono().map(sessionId -> {
            if (!p.sessionEquals(sessionId)) {
                return PreambleHandler.Answer.refuse("preamble of another job session (a stale or foreign connection)");
            }
            return PreambleHandler.Answer.accept(new Preamble(Preamble.TYPE_PEER, sessionId, rank, p.sender),
                    (proven, dialler) -> {
                        proven.pipeline().addLast(new FrameDecoder(maxFrameBytes), new PeerHandler(dialler.sender));
                        register(dialler.sender, proven.channel());
                        return null;
                    });
        }).onErrorResume(error -> Mono.just(
                PreambleHandler.Answer.refuse("this rank failed before the connection was checked")));
    }

    private static Mono<PreambleHandler.Answer> refuse(String why) {
        return Mono.just(PreambleHandler.Answer.refuse(why));
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
        NettyFutures.toMono(ch.closeFuture()).subscribe(closed -> {
            synchronized (PeerLinks.this) {
                handshaking.remove(ch);
            }
        });
        return true;
    }

    private void register(int peer, Channel ch) {
        List<OneShot<Channel>> waiters;
        Consumer<Channel> lateRelay;
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
            lateRelay = relay;
        }
        if (lateRelay != null) {
            lateRelay.accept(ch);
        }
        NettyFutures.toMono(ch.closeFuture()).subscribe(closed -> events.onClosed(peer, ch));
        for (OneShot<Channel> w : waiters) {
            w.succeed(ch);
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
