package org.jmscclpp.ethernet;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.bootstrap.BootstrapOptions;
import org.jmscclpp.bootstrap.EventLoops;
import org.jmscclpp.bootstrap.InterfaceSelector;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.EndpointConfig;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.spi.Endpoint;
import org.jmscclpp.core.spi.TransportProvider;
import org.jspecify.annotations.Nullable;

/**
 * One communicator's use of {@code ETHERNET}: a listening socket, a random secret, the table of
 * buffers registered for {@code ETHERNET} (regions), the receiving ends of peers' connections and
 * the connections this rank dialled. The listener and the receiving ends run on the event loops
 * the bootstrap uses ({@link EventLoops}: the service's group, else the shared one, holding one reference to
 * it until {@link #close()});
 * the connections this rank dialled write on their callers' threads and read their acks on a
 * thread each ({@link EthernetConnection}).
 *
 * <p>The socket listens on the interface {@code MSCCLPP_SOCKET_IFNAME} selects (the bootstrap's
 * rule: an NCCL-style interface list, else the default order), or on loopback when this host has
 * no usable interface. A same-host peer dials that address too; the kernel short-cuts it. The
 * listener accepts only diallers that present this session's secret; see {@link EthernetWire}.
 */
final class EthernetSession implements TransportProvider.Session {

    private static final System.Logger LOG = Log.logger(EthernetSession.class, Subsystem.NET);
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final AtomicLong NEXT_REGION = new AtomicLong(RANDOM.nextInt() & 0xFFFFL);

    static final long HANDSHAKE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(30);
    /** A buffer registered for ETHERNET in this session. */
    record Region(long id, DeviceBuffer buffer) {
    }

    private final Backend backend;
    private final byte[] secret = new byte[EthernetWire.SECRET_BYTES];
    private final EventLoops.Lease loops;
    /** The loop the receiving ends run on when the session uses the default event loops; null with a service's group. */
    private final @Nullable EthernetProgress progress;
    private final Channel listener;
    private final InetSocketAddress listening;
    private final Map<Long, Region> regions = new ConcurrentHashMap<>();
    private final Set<Channel> inbound = ConcurrentHashMap.newKeySet();
    private final Set<EthernetConnection> outbound = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile int rank = -1;
    /** Tests: apply every frame off the event loop, as for device memory. */
    private volatile boolean offloadAlways;
    /** Tests: stage every source through host-visible memory, as for device memory. */
    private volatile boolean stageAlways;

    EthernetSession(Backend backend) {
        this(backend, listenAddress(), null);
    }

    /** A session listening on {@code group} (null: the shared event loops). */
    EthernetSession(Backend backend, @Nullable EventLoopGroup group) {
        this(backend, listenAddress(), group);
    }

    EthernetSession(Backend backend, InetAddress address) {
        this(backend, address, null);
    }

    EthernetSession(Backend backend, InetAddress address, @Nullable EventLoopGroup group) {
        this.backend = backend;
        RANDOM.nextBytes(secret);
        this.loops = EventLoops.lease(group);
        this.progress = group == null ? EthernetProgress.acquire() : null;
        try {
            if (loops.inEventLoop()) {
                // the bind below runs on this very thread after the current task: waiting for it here would
                // deadlock (Netty refuses with a BlockingOperationException)
                throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the ETHERNET listener cannot be opened on "
                        + Thread.currentThread().getName() + ", an event loop of the bootstrap's group, which must"
                        + " run its bind: register memory for ETHERNET (or connect over it) off the event loop,"
                        + " e.g. after publishOn(Schedulers.boundedElastic())")
                        .phase("ETHERNET session").build();
            }
            ServerBootstrap sb = new ServerBootstrap()
                    .group(loops.group(), progress != null ? progress.loop() : loops.group())
                    .channel(loops.serverChannel())
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childOption(ChannelOption.ALLOCATOR, PooledByteBufAllocator.DEFAULT)
                    .childHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            if (closed.get()) {
                                ch.close();
                                return;
                            }
                            inbound.add(ch);
                            ch.closeFuture().addListener(f -> inbound.remove(ch));
                            EthernetReceiver receiver = new EthernetReceiver(EthernetSession.this, HANDSHAKE_TIMEOUT_NANOS);
                            ch.config().setRecvByteBufAllocator(new EthernetReceiveBuffers(receiver));
                            ch.pipeline().addLast(receiver);
                        }
                    });
            ChannelFuture f = sb.bind(new InetSocketAddress(address, 0));
            if (!f.awaitUninterruptibly(CONNECT_TIMEOUT.toMillis()) || !f.isSuccess()) {
                f.channel().close();
                throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "cannot listen for ETHERNET on "
                        + address.getHostAddress() + ": " + (f.cause() == null ? "timed out" : f.cause()))
                        .phase("ETHERNET session").cause(f.cause()).build();
            }
            this.listener = f.channel();
            this.listening = (InetSocketAddress) listener.localAddress();
        } catch (RuntimeException e) {
            loops.close();
            if (progress != null) {
                EthernetProgress.release();
            }
            throw e;
        }
    }

    /** The interface the bootstrap would listen on; loopback where none is usable. */
    private static InetAddress listenAddress() {
        try {
            return InterfaceSelector.listenAddress(BootstrapOptions.fromEnvironment());
        } catch (JmscclppException e) {
            if (e.code() != ErrorCode.SYSTEM_ERROR) {
                throw e;   // MSCCLPP_SOCKET_IFNAME names nothing here: the user asked for an interface
            }
            LOG.log(Level.INFO, "ETHERNET listens on loopback: {0}", e.getMessage());
            return InetAddress.getLoopbackAddress();
        }
    }

    InetSocketAddress listening() {
        return listening;
    }

    byte[] secret() {
        return secret;
    }

    Backend backend() {
        return backend;
    }

    /** This rank, once a connection told it; -1 before. */
    int rank() {
        return rank;
    }

    String rankName() {
        int r = rank;
        return r < 0 ? "ETHERNET listener " + listening : "rank " + r;
    }

    boolean offloadAlways() {
        return offloadAlways;
    }

    boolean stageAlways() {
        return stageAlways;
    }

    /** For tests: take the device-memory paths (staged sends, off-loop applies) on host memory. */
    void forceDevicePaths(boolean on) {
        offloadAlways = on;
        stageAlways = on;
    }

    @Nullable Region region(long id) {
        Region r = regions.get(id);
        return r == null || r.buffer().isClosed() ? null : r;
    }

    /** A connection this rank dialled has closed. */
    void forget(EthernetConnection c) {
        outbound.remove(c);
    }

    int inboundCount() {
        return inbound.size();
    }

    /** The receiving ends open now (tests check which event loops they run on). */
    List<Channel> inboundChannels() {
        return List.copyOf(inbound);
    }

    @Override
    public TransportProvider.Registration registerMemory(DeviceBuffer buffer, Transport transport) {
        checkTransport(transport, "registerMemory");
        checkOpen("registerMemory");
        long id = NEXT_REGION.incrementAndGet();
        regions.put(id, new Region(id, buffer));
        byte[] handle = EthernetWire.handle(id);
        return new TransportProvider.Registration() {
            private final AtomicBoolean ended = new AtomicBoolean();

            @Override
            public byte[] handle() {
                return handle.clone();
            }

            @Override
            public void close() {
                if (ended.compareAndSet(false, true)) {
                    regions.remove(id);
                }
            }
        };
    }

    @Override
    public Endpoint createEndpoint(EndpointConfig config) {
        checkTransport(config.transport(), "connect");
        checkOpen("connect");
        return Endpoint.local(config, backend.device(), EthernetWire.endpointInfo(secret, listening));
    }

    /**
     * Dials the peer's listener, sends the hello and waits (at most {@link #CONNECT_TIMEOUT}) for
     * it to be accepted ({@link EthernetConnection#dial}). Blocks: the communicator calls it on a
     * virtual thread.
     */
    @Override
    public Connection connect(Endpoint local, Endpoint remote, ConnectionContext context) {
        checkOpen("connect");
        if (remote.transport() != Transport.ETHERNET || local.transport() != Transport.ETHERNET) {
            throw error(ErrorCode.INVALID_USAGE, context, "both ends must be ETHERNET, got " + local.transport()
                    + " here and " + remote.transport() + " at the peer");
        }
        rank = context.rank();
        EthernetWire.Listener peer;
        try {
            peer = EthernetWire.parseEndpointInfo(remote.info());
        } catch (JmscclppException e) {
            throw error(ErrorCode.INVALID_USAGE, context, e.detail());
        }
        // a link-local listener is dialled through this session's own interface (see reachableFrom)
        peer = new EthernetWire.Listener(peer.secret(),
                InterfaceSelector.reachableFrom(peer.address(), listening.getAddress()));
        EthernetConnection connection = EthernetConnection.dial(this, local, context, peer,
                System.nanoTime() + CONNECT_TIMEOUT.toNanos());
        outbound.add(connection);
        if (closed.get()) {
            connection.close();
            checkOpen("connect");
        }
        return connection;
    }

    private void checkTransport(Transport transport, String phase) {
        if (transport != Transport.ETHERNET) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the ETHERNET provider cannot serve " + transport)
                    .phase(phase).build();
        }
    }

    private void checkOpen(String phase) {
        if (closed.get()) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the ETHERNET session is closed (its communicator"
                    + " was closed)").phase(phase).build();
        }
    }

    private boolean onEventLoop() {
        return loops.inEventLoop() || progress != null && progress.loop().inEventLoop();
    }

    static JmscclppException error(ErrorCode code, ConnectionContext where, String detail) {
        return JmscclppException.builder(code, detail).rank(where.rank()).peer(where.remoteRank()).tag(where.tag())
                .phase("connect").build();
    }

    /**
     * Closes the listener, the receiving ends and any connection still open, waits (boundedly) for
     * their sockets to close, and gives back the event loops. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<ChannelFuture> closing = new ArrayList<>();
        closing.add(listener.close());
        for (EthernetConnection c : List.copyOf(outbound)) {
            c.close();
        }
        for (Channel ch : List.copyOf(inbound)) {
            closing.add(ch.close());
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        for (ChannelFuture f : closing) {
            if (f != null && !onEventLoop()) {
                f.awaitUninterruptibly(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            }
        }
        regions.clear();
        loops.close();
        if (progress != null) {
            EthernetProgress.release();
        }
    }
}
