package org.jmscclpp.bootstrap;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import java.lang.System.Logger.Level;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jmscclpp.bootstrap.wire.Frame;
import org.jmscclpp.bootstrap.wire.FrameDecoder;
import org.jmscclpp.bootstrap.wire.FrameEncoder;
import org.jmscclpp.bootstrap.wire.Preamble;
import org.jmscclpp.bootstrap.wire.PreambleHandler;
import org.jmscclpp.bootstrap.wire.Proofs;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.UniqueId;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.spi.HostIdentity;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.SignalType;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The TCP {@link Bootstrap}: a root gathers every rank's listen address, then ranks talk over
 * persistent Netty connections (one per pair of ranks, opened on first use and wired along the
 * ring at initialization).
 *
 * <pre>{@code
 * TcpBootstrap rank0 = TcpBootstrap.create(0, n);
 * UniqueId id = rank0.createUniqueId();          // give id to every rank (MPI, a store, an env var)
 * Mono<TcpBootstrap> ready = rank0.initialize(id);
 * // or, with no id to distribute: TcpBootstrap.create(rank, n).initialize("10.0.0.1:50000")
 * }</pre>
 *
 * <p>Initialization: rank 0 (or whoever created the id) runs the root; each rank binds its own
 * listening socket on the chosen interface, checks in with the root, waits for the welcome (the
 * job session; rank 0 also gets the address book and spreads it along a binomial tree), and
 * connects the ring. Everything is bounded by {@link BootstrapOptions#initTimeout()}; a failure
 * names the phase (root check-in, address book, ring) and the rank it waited for.
 *
 * <p>Every connection opens with a {@link Preamble} handshake in which both sides prove, by a
 * challenge-response over fresh nonces, that they know the job secret (which never travels):
 * connections of other jobs, replays, scanners and garbage are dropped with a log line. A peer that disconnects without saying
 * goodbye fails every pending and later operation with {@link ErrorCode#REMOTE_ERROR} naming it,
 * on this rank and — relayed along the connections — on every rank still reachable; {@link
 * #abort(String)} does the same with {@link ErrorCode#ABORTED}.
 *
 * <p>Threads: signals are delivered on the Netty event-loop threads the bootstrap runs on (this
 * JVM's shared {@code jmscclpp-io-*} threads, or the {@linkplain BootstrapOptions.Builder#eventLoopGroup
 * group the service supplied}), and deadlines on its {@linkplain BootstrapOptions.Builder#scheduler
 * scheduler} when one was supplied. Its asynchronous work is Reactor's throughout: Netty's futures
 * join it through one adapter ({@code NettyFutures}), timers are Reactor {@link Scheduler} tasks. Nothing in it
 * blocks but {@link #close()}, which waits briefly for its connections to close where the caller's
 * thread may block (not on an event loop, nor on a Reactor non-blocking thread), and
 * {@link #createUniqueId()}, which waits for the root's bind.
 */
public final class TcpBootstrap implements Bootstrap {

    private static final System.Logger LOG = Log.logger(TcpBootstrap.class, Subsystem.INIT);

    private enum State { NEW, INITIALIZING, READY, CLOSED }

    private final int rank;
    private final int size;
    private final BootstrapOptions options;
    private final AtomicLong collectiveSeq = new AtomicLong(1);
    private final Collectives.Transport transport = new CollectiveTransport();
    private State state = State.NEW;
    private EventLoops.@Nullable Lease loops;
    /** Where timers run: the supplied scheduler, else the event loops; set with {@link #loops}. */
    private @Nullable Scheduler timers;
    private @Nullable Mailboxes mailboxes;
    private @Nullable PeerLinks links;
    private @Nullable BootstrapRoot ownedRoot;
    private @Nullable TcpUniqueId ownedId;
    /** The id this bootstrap joined with (its root and secret), once initializing. */
    private @Nullable TcpUniqueId jobId;
    private boolean shrunk;
    private @Nullable OneShot<Welcome> welcome;
    private volatile @Nullable JmscclppException failure;
    /** Set once {@link #fail} began; {@link #failure} is set only once the failure's relay is queued. */
    private boolean failing;
    /** Emits {@link #failure} once it is set. */
    private final OneShot<JmscclppException> failed = new OneShot<>();
    private volatile @Nullable AddressBook book;
    /**
     * Whether some host of the job runs more ranks than it has cores (set when ready, the same on
     * every rank): then each message costs a context switch, and collectives prefer fewer messages.
     */
    private volatile boolean crowded;
    /** How errors name the root: rank 0's when the job started from an address, else by its address. */
    private volatile String rootName = "the root";
    /** 0 when rank 0 hosts the root (a job started from an address), else {@link JmscclppException#NONE}. */
    private volatile int rootPeer = JmscclppException.NONE;
    /** The connection on which this rank checked in with the root, once the root accepted it. */
    private volatile @Nullable Channel checkedInTo;
    /** Why the last connection attempt to the root failed; null once the root has answered. */
    private volatile @Nullable String rootUnreachable;
    /**
     * Why the last attempt that reached a root failed in the handshake (another job's secret, say),
     * kept when later attempts fail otherwise: the root of this job gives up first, and after it only
     * refused connections remain to report.
     */
    private volatile @Nullable String rootHandshake;

    private TcpBootstrap(int rank, int size, BootstrapOptions options) {
        this.rank = rank;
        this.size = size;
        this.options = options;
    }

    /**
     * The most ranks of a job (2^20): beyond any job this library serves, and far below what the
     * per-peer tables of a bootstrap could hold (a world size of 2^31 - 1 from a garbled launcher
     * variable exhausted the heap instead of failing).
     */
    public static final int MAX_RANKS = 1 << 20;

    /** A bootstrap for {@code rank} of {@code nRanks}, with options from the environment; not yet connected. */
    public static TcpBootstrap create(int rank, int nRanks) {
        return create(rank, nRanks, BootstrapOptions.fromEnvironment());
    }

    /** A bootstrap for {@code rank} of {@code nRanks}; not yet connected. */
    public static TcpBootstrap create(int rank, int nRanks, BootstrapOptions options) {
        Objects.requireNonNull(options, "options");
        if (nRanks <= 0 || rank < 0 || rank >= nRanks) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE,
                    "rank " + rank + " of " + nRanks + " ranks: need 0 <= rank < nRanks").rank(rank).phase("create").build();
        }
        if (nRanks > MAX_RANKS) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "a job of " + nRanks + " ranks: at most "
                    + MAX_RANKS + " (TcpBootstrap.MAX_RANKS)").rank(rank).phase("create").build();
        }
        return new TcpBootstrap(rank, nRanks, options);
    }

    /**
     * Creates a bootstrap and initializes it with {@code id} within {@code timeout}; on error or
     * cancellation the bootstrap is closed.
     */
    public static Mono<TcpBootstrap> initialize(int rank, int nRanks, UniqueId id, Duration timeout) {
        return Mono.defer(() -> create(rank, nRanks, BootstrapOptions.builder().initTimeout(timeout).build())
                .initialize(id));
    }

    /**
     * Starts this job's root in this process and returns the id every rank initializes with. The
     * root listens on the interface {@code MSCCLPP_SOCKET_IFNAME} (or the default order) selects,
     * serves {@link #size()} ranks, and stops once they are wired, when this bootstrap closes, or
     * when {@link BootstrapOptions#initTimeout()} passes.
     */
    public synchronized UniqueId createUniqueId() {
        if (state != State.NEW || ownedRoot != null) {
            throw usage("createUniqueId", state == State.NEW
                    ? "this bootstrap already created a unique id" : "createUniqueId must come before initialize");
        }
        InterfaceSelector.Selected local = InterfaceSelector.of(options).select(null);
        TcpUniqueId id = TcpUniqueId.random(new InetSocketAddress(local.address(), 0));
        // port 0 is never retried: the wait is one bind's, bounded all the same
        BootstrapRoot root = BootstrapRoot.start(id.secret(), size, new InetSocketAddress(local.address(), 0),
                        options.initTimeout(), System.nanoTime(), options.eventLoopGroup(), options.scheduler())
                .block(options.initTimeout());
        ownedRoot = Objects.requireNonNull(root, "root");
        ownedId = new TcpUniqueId(root.localAddress(), id.secret());
        return ownedId.toUniqueId();
    }

    /**
     * Joins the job of {@code id}. Emits this bootstrap once the ring is connected; errors with
     * TIMEOUT (naming the phase) after {@link BootstrapOptions#initTimeout()}, with
     * INVALID_USAGE if the root refused this rank, with REMOTE_ERROR if another rank died first.
     * Cancelling closes the bootstrap.
     */
    public Mono<TcpBootstrap> initialize(UniqueId id) {
        return Mono.defer(() -> {
            TcpUniqueId tid = TcpUniqueId.from(id);
            InterfaceSelector.Selected local = InterfaceSelector.of(options).select(tid.root().getAddress());
            return start(tid, new InetSocketAddress(local.address(), 0), null, false);
        });
    }

    /**
     * Joins the job whose root listens at {@code address}: {@code "ip:port"}, {@code "if:ip:port"},
     * {@code "[v6addr]:port"} or {@code "host:port"}. Rank 0 starts the root there; the job secret is
     * a hash of the address and {@link BootstrapOptions#secret()} ({@code MSCCLPP_BOOTSTRAP_SECRET}, the
     * same on every rank), so every rank agrees on it without exchanging anything. Without a secret
     * it errors with INVALID_USAGE naming {@code MSCCLPP_BOOTSTRAP_SECRET}, unless
     * {@link BootstrapOptions#insecure()} ({@code MSCCLPP_BOOTSTRAP_INSECURE=1}) lets the secret come
     * from the address alone. Otherwise as {@link #initialize(UniqueId)}.
     */
    public Mono<TcpBootstrap> initialize(String address) {
        return Mono.defer(() -> {
            BootstrapAddress root = BootstrapAddress.parse(address);
            TcpUniqueId tid = TcpUniqueId.explicit(root.socketAddress(), address, options, rank);
            InterfaceSelector selector = InterfaceSelector.of(options);
            selector.requireListMatches();
            InetAddress rootIp = root.address();
            InterfaceSelector.Selected local;
            if (root.interfacePrefix() != null) {
                local = selector.withIfname(root.interfacePrefix(), "address " + address).select(rootIp);
            } else if (rootIp.isLoopbackAddress()) {
                local = new InterfaceSelector.Selected("lo", rootIp, 8, "loopback root");
            } else {
                local = selector.findBySubnet(rootIp).orElseGet(() -> selector.select(rootIp));
            }
            return start(tid, new InetSocketAddress(local.address(), 0), rank == 0 ? root.socketAddress() : null, true);
        });
    }

    private Mono<TcpBootstrap> start(TcpUniqueId id, InetSocketAddress listenAt, @Nullable InetSocketAddress rootAt,
                                     boolean rootOnRank0) {
        // The deadline counts from here: starting the event loops (native epoll, threads) is part
        // of initializing, and takes hundreds of milliseconds in a fresh JVM.
        long t0 = System.nanoTime();
        synchronized (this) {
            if (state != State.NEW) {
                return Mono.error(usage("initialize", "initialize was already called (state " + state + ")"));
            }
            state = State.INITIALIZING;
            rootName = (rootOnRank0 ? "rank 0's root at " : "the root at ") + id.root();
            rootPeer = rootOnRank0 ? 0 : JmscclppException.NONE;
            EventLoops.Lease lease = EventLoops.lease(options.eventLoopGroup());
            loops = lease;
            timers = options.scheduler() != null ? options.scheduler() : lease.timers();
            mailboxes = new Mailboxes(timers);
            links = new PeerLinks(rank, size, id.secret(), options.maxFrameBytes(), lease, new LinkEvents());
            jobId = id;
        }
        long deadline = t0 + options.initTimeout().toNanos();
        long[] marks = new long[3];
        Mono<Void> rootStarted = rootAt == null ? Mono.empty() : hostRoot(id, rootAt, deadline);
        Mono<TcpBootstrap> init = rootStarted
                .then(Mono.defer(() -> links().listen(listenAt)))
                .flatMap(bound -> checkIn(id, bound, deadline))
                .flatMap(w -> {
                    marks[0] = System.nanoTime();
                    links().setSession(w.session());
                    return spreadAddressBook(w.book(), deadline);
                })
                .then(Mono.defer(() -> {
                    marks[1] = System.nanoTime();
                    return connectRing(deadline);
                }))
                .then(Mono.fromCallable(() -> {
                    marks[2] = System.nanoTime();
                    ready(t0, marks, listenAt);
                    return this;
                }));
        // On cancel the steps are cancelled first and the bootstrap closed after (doFinally). A
        // step can still be starting on an event loop while the cancel runs (the listen completed
        // and checkIn is entered just as the cancel closes), and it then fails with "closed
        // during initialize" towards a subscriber that is gone: Reactor would drop that error and
        // log it. The cancel is marked before the close, so such an error becomes an empty end
        // that nobody sees.
        AtomicBoolean cancelled = new AtomicBoolean();
        return init
                .onErrorMap(this::unwrap)
                .doOnError(e -> close((JmscclppException) e))
                .doFinally(signal -> {
                    if (signal == SignalType.CANCEL) {
                        close();
                    }
                })
                .doOnCancel(() -> cancelled.set(true))
                .onErrorResume(e -> cancelled.get(), e -> Mono.empty());
    }

    /**
     * Starts the job's root at {@code at}. The bind is followed to its end even when initialize is
     * cancelled meanwhile, so that a root bound after the close is closed too.
     */
    private Mono<Void> hostRoot(TcpUniqueId id, InetSocketAddress at, long deadline) {
        // The root gives up a little before the ranks do, so that its report, which names the
        // ranks that never checked in, reaches the waiting ranks before their own deadlines fire.
        long left = deadline - System.nanoTime();
        OneShot<Void> started = new OneShot<>();
        BootstrapRoot.start(id.secret(), size, at, Duration.ofNanos(Math.max(1, left - BootstrapRoot.reportMargin(left))),
                        deadline, options.eventLoopGroup(), options.scheduler())
                .subscribe(root -> {
                    synchronized (this) {
                        if (state == State.CLOSED) {
                            root.close();
                            started.fail(usage("initialize", "closed while starting the root"));
                            return;
                        }
                        ownedRoot = root;
                    }
                    started.succeedEmpty();
                }, started::fail);
        return started.mono();
    }

    private void ready(long t0, long[] marks, InetSocketAddress listenAt) {
        BootstrapRoot root;
        synchronized (this) {
            if (state != State.INITIALIZING) {
                throw JmscclppException.builder(ErrorCode.ABORTED, "closed during initialize").rank(rank)
                        .phase("initialize").build();
            }
            state = State.READY;
            root = ownedRoot;
            ownedRoot = null;
        }
        if (root != null) {
            root.close();
        }
        AddressBook b = Objects.requireNonNull(book, "book");
        crowded = b.crowded();
        SpinThenWait.crowded(b.ranksOnHostOf(rank) > Runtime.getRuntime().availableProcessors());
        LOG.log(Level.INFO, () -> String.format(Locale.ROOT, "rank %d: bootstrap init done: rank %d of %d in %.1f ms "
                        + "(root check-in %.1f ms, address book %.1f ms, ring %.1f ms) on %s, %d ranks on this host",
                rank, rank, size, ms(marks[2] - t0), ms(marks[0] - t0), ms(marks[1] - marks[0]),
                ms(marks[2] - marks[1]), listenAt.getAddress().getHostAddress(), nRanksPerNode()));
    }

    private static double ms(long nanos) {
        return nanos / 1e6;
    }

    /** What the root said: the session, and for rank 0 the address book. */
    private record Welcome(byte[] session, @Nullable AddressBook book) {
    }

    /**
     * Connects to the root (retrying while it is not listening yet), checks in and waits for the
     * welcome. A connection the root closes before answering the preamble (a previous job's root
     * shutting down on a fixed port) is retried too.
     */
    private Mono<Welcome> checkIn(TcpUniqueId id, InetSocketAddress listening, long deadline) {
        OneShot<Welcome> result = new OneShot<>();
        synchronized (this) {
            if (state == State.CLOSED) {
                // closed (a cancelled initialize) before fail() could see this result: connecting
                // now would open a socket that nothing closes
                return Mono.error(JmscclppException.builder(ErrorCode.ABORTED,
                        "closed during initialize").rank(rank).phase("root check-in").build());
            }
            welcome = result;
        }
        attemptCheckIn(id, listening, deadline, result, 5);
        Disposable timer = timers().schedule(() -> checkInDeadline(result),
                Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        return result.mono().doFinally(signal -> timer.dispose());
    }

    /** What to check when a handshake failed on a proof of the job secret: that every rank has the same one. */
    static String handshakeHint(String why) {
        return why.contains("proof of the job secret") ? " (does every rank of the job have the same "
                + BootstrapOptions.SECRET_ENV + ", and is no other job's root at that address?)" : "";
    }

    /**
     * Why no welcome came: the last attempt's failure ({@code unreachable}), with the handshake's where
     * one reached a root and failed there; with none, whether this rank had checked in.
     */
    private String whyNoWelcome(@Nullable String unreachable) {
        if (unreachable == null) {
            return checkedInTo != null ? "not every rank checked in"
                    : "this rank's connection got no answer to its handshake (is another program listening at that"
                    + " address?)";
        }
        String why = "the root could not be reached (last attempt: " + unreachable + ")";
        String handshake = rootHandshake;
        if (handshake == null) {
            return why;
        }
        return why + (handshake.equals(unreachable) ? "" : "; an earlier attempt reached it, but the handshake failed: "
                + handshake) + handshakeHint(handshake);
    }

    /**
     * This rank's check-in deadline passed without a welcome. Checked in with the root, it tells
     * the root it gives up and waits a little for the root's answer, which names the ranks that
     * never checked in (the root gives up a tenth earlier, but a busy host can delay its report);
     * else, or when no answer comes, it fails with its own TIMEOUT.
     */
    private void checkInDeadline(OneShot<Welcome> result) {
        if (result.isDone()) {
            return;
        }
        String unreachable = rootUnreachable;
        JmscclppException mine = JmscclppException.builder(ErrorCode.TIMEOUT, "no welcome from " + rootName
                        + " within " + options.initTimeout().toMillis() + " ms: " + whyNoWelcome(unreachable))
                .rank(rank).peer(unreachable == null ? JmscclppException.NONE : rootPeer)
                .phase("root check-in").build();
        Channel ch = checkedInTo;
        if (ch == null || !ch.isActive()) {
            result.fail(mine);
            return;
        }
        ch.writeAndFlush(new Frame(Frame.FAILURE, Frame.LAST, mine.code().ordinal(), Failure.encode(mine)));
        long grace = Math.clamp(options.initTimeout().toNanos() / 20, TimeUnit.MILLISECONDS.toNanos(50),
                TimeUnit.SECONDS.toNanos(1));
        timers().schedule(() -> result.fail(mine), grace, TimeUnit.NANOSECONDS);
    }

    private void attemptCheckIn(TcpUniqueId id, InetSocketAddress listening, long deadline,
                                OneShot<Welcome> result, long pauseMillis) {
        if (result.isDone()) {
            return;
        }
        AtomicBoolean answered = new AtomicBoolean();
        int maxWelcome = Math.max(options.maxFrameBytes(), 64 + size * AddressBook.ENTRY_BYTES);
        Runnable retry = () -> {
            long left = deadline - System.nanoTime();
            if (!result.isDone() && left > 0) {
                timers().schedule(() -> attemptCheckIn(id, listening, deadline, result, Math.min(pauseMillis * 2, 100)),
                        Math.min(TimeUnit.MILLISECONDS.toNanos(pauseMillis), left), TimeUnit.NANOSECONDS);
            }
        };
        ChannelFuture connect = new io.netty.bootstrap.Bootstrap()
                .group(loops().group())
                .channel(loops().socketChannel())
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5_000)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        PreambleHandler handshake = PreambleHandler.dialling(id.secret(), PeerLinks.HANDSHAKE_TIMEOUT_NANOS,
                                "rank " + rank + " root connection",
                                new Preamble(Preamble.TYPE_ROOT, Preamble.noSession(), rank, size), (ctx, p) -> {
                            if (p.type != Preamble.TYPE_ROOT) {
                                return "not a root";
                            }
                            // the check-in goes even to a root of another size: the root reports the conflict
                            ByteBuf body = ctx.alloc().buffer(8 + AddressBook.ENTRY_BYTES);
                            body.writeIntLE(rank);
                            body.writeIntLE(size);
                            AddressBook.writeEntry(body, HostIdentity.hostHash(), Runtime.getRuntime().availableProcessors(),
                                    listening);
                            ctx.writeAndFlush(new Frame(Frame.CHECK_IN, Frame.LAST, 0, body));
                            answered.set(true);
                            if (p.receiverOrSize != size) {
                                // This job's root answered: another attempt would get the same answer.
                                result.fail(JmscclppException.builder(ErrorCode.INVALID_USAGE,
                                                "this rank was created for a job of " + size + " ranks, but the root at "
                                                        + id.root() + " serves a job of " + p.receiverOrSize)
                                        .rank(rank).phase("root check-in").build());
                                return "the root serves " + p.receiverOrSize + " ranks";
                            }
                            rootUnreachable = null;
                            checkedInTo = ctx.channel();
                            LOG.log(Level.DEBUG, "rank {0}: checked in with the root at {1}; waiting for the other ranks",
                                    rank, id.root());
                            ctx.pipeline().addLast(new FrameDecoder(maxWelcome), new WelcomeHandler(result));
                            return null;
                        });
                        handshake.refusal().subscribe(why -> {
                            if (!answered.get()) {
                                rootUnreachable = why;   // another job's root on this port, say: retried
                                rootHandshake = why;
                            }
                        });
                        ch.pipeline().addLast(new FrameEncoder(), handshake);
                    }
                })
                .connect(id.root());
        NettyFutures.toMono(connect).subscribe(ch -> {
            result.mono().subscribe(w -> ch.close(), e -> ch.close());
            NettyFutures.toMono(ch.closeFuture()).subscribe(closed -> {
                if (result.isDone()) {
                    return;
                }
                if (!answered.get()) {
                    retry.run();
                } else {
                    result.fail(JmscclppException.builder(ErrorCode.REMOTE_ERROR,
                                    rootName + " closed the connection before welcoming this rank"
                                            + (rootPeer == 0 ? " (rank 0 died or gave up?)" : " (the root's process died?)"))
                            .rank(rank).peer(rootPeer).phase("root check-in").build());
                }
            });
        }, error -> {
            rootUnreachable = NettyFutures.connectFailure(error);
            retry.run();
        });
    }

    private final class WelcomeHandler extends ChannelInboundHandlerAdapter {
        private final OneShot<Welcome> result;

        WelcomeHandler(OneShot<Welcome> result) {
            this.result = result;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Frame frame = (Frame) msg;
            try {
                ByteBuf in = frame.payload();
                if (frame.kind() == Frame.FAILURE) {
                    result.fail(Failure.decode(frame.channel(), in).withRank(rank));
                } else if (frame.kind() == Frame.WELCOME && in.readableBytes() >= 21) {
                    byte[] session = new byte[Preamble.SESSION_BYTES];
                    in.readBytes(session);
                    int n = in.readIntLE();
                    boolean hasBook = in.readByte() != 0;
                    AddressBook b = hasBook ? AddressBook.read(in, size) : null;
                    if (n != size || hasBook != (rank == 0) || (hasBook && b == null)) {
                        result.fail(JmscclppException.builder(ErrorCode.REMOTE_ERROR,
                                "the root sent a malformed welcome").rank(rank).phase("root check-in").build());
                    } else {
                        result.succeed(new Welcome(session, b));
                    }
                } else {
                    result.fail(JmscclppException.builder(ErrorCode.REMOTE_ERROR,
                                    "the root sent frame kind " + frame.kind() + " instead of a welcome")
                            .rank(rank).phase("root check-in").build());
                }
            } finally {
                frame.release();
                ctx.close();
            }
        }

        /**
         * A connection the root broke (reset: its process was killed) is reported as the close
         * before the welcome is, naming rank 0 where it hosts the root: which of the two a rank
         * sees first is a race. Anything else is a bad answer.
         */
        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            String why = cause instanceof java.io.IOException
                    ? rootName + " broke the connection before welcoming this rank"
                            + (rootPeer == 0 ? " (rank 0 died or gave up?)" : " (the root's process died?)") + ": " + cause
                    : "bad answer from " + rootName + ": " + cause;
            result.fail(JmscclppException.builder(ErrorCode.REMOTE_ERROR, why).rank(rank).peer(rootPeer)
                    .phase("root check-in").cause(cause).build());
            ctx.close();
        }
    }

    /** Rank 0 sends the book down a binomial tree; every rank forwards it once it has it. */
    private Mono<Void> spreadAddressBook(@Nullable AddressBook fromRoot, long deadline) {
        byte[] bytes = new byte[0];
        if (fromRoot != null) {
            installBook(fromRoot);
            ByteBuf buf = Unpooled.buffer(4 + size * AddressBook.ENTRY_BYTES);
            fromRoot.writeTo(buf);
            bytes = new byte[buf.readableBytes()];
            buf.readBytes(bytes);
        }
        Consumer<byte[]> install = received -> {
            if (book == null) {
                AddressBook b = AddressBook.read(Unpooled.wrappedBuffer(received), size);
                if (b == null) {
                    throw JmscclppException.builder(ErrorCode.REMOTE_ERROR, "received a malformed address book")
                            .rank(rank).phase("address book").build();
                }
                installBook(b);
            }
        };
        return Collectives.broadcast(transport, 0, 0, bytes, deadline, install).then();
    }

    private void installBook(AddressBook b) {
        book = b;
        links().setBook(b);
    }

    /**
     * Opens the ring's connections: to the next and previous rank, the lower rank of each pair
     * connecting. From {@link Collectives#TREE_MIN_RANKS} ranks the small collectives run on the
     * address book's tree and only very large allGathers use the ring, so its connections are left
     * to open on first use (a thousand-rank job saves hundreds of connection handshakes at start).
     */
    private Mono<Void> connectRing(long deadline) {
        if (size == 1 || size >= Collectives.TREE_MIN_RANKS) {
            return Mono.empty();
        }
        int next = (rank + 1) % size;
        int prev = (rank - 1 + size) % size;
        AtomicBoolean nextConnected = new AtomicBoolean();
        Mono<Channel> a = links().sendChannel(next, rank < next).doOnNext(ch -> nextConnected.set(true));
        Mono<Channel> b = links().sendChannel(prev, rank < prev);
        return Mono.when(a, b).timeout(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())),
                Mono.error(() -> JmscclppException.builder(ErrorCode.TIMEOUT,
                                "the ring was not connected in time (rank " + prev + " or " + next + " is missing)")
                        .rank(rank).peer(nextConnected.get() ? prev : next).phase("ring").build()), timers());
    }

    // ---------------------------------------------------------------- operations

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public int nRanksPerNode() {
        AddressBook b = book;
        if (b == null) {
            throw usage("nRanksPerNode", "the bootstrap is not initialized");
        }
        return b.ranksOnHostOf(rank);
    }

    /**
     * The address this rank's bootstrap listens on: the interface chosen for the job (by the
     * root's address, {@code MSCCLPP_SOCKET_IFNAME} and {@code MSCCLPP_SOCKET_FAMILY}). Transports
     * of this module listen on the same interface, so a job over IPv6 stays on IPv6.
     */
    public InetSocketAddress localAddress() {
        AddressBook b = book;
        if (b == null) {
            throw usage("localAddress", "the bootstrap is not initialized");
        }
        return b.address(rank);
    }

    /** The options this bootstrap was created with. */
    public BootstrapOptions options() {
        return options;
    }

    @Override
    public Duration defaultTimeout() {
        return options.operationTimeout();
    }

    /** The scheduler the service supplied for blocking and timed work, or null ({@link BootstrapOptions#scheduler()}). */
    @Nullable Scheduler scheduler() {
        return options.scheduler();
    }

    /** How long initialization may take; a launcher's rendezvous before it ({@link RankEnvironment}) gets as long. */
    Duration initTimeout() {
        return options.initTimeout();
    }

    /**
     * The address book once this rank has it (during or after initialize), else null; tests reach
     * the ranks' listeners through it.
     */
    @Nullable AddressBook addressBook() {
        return book;
    }

    /** Errors this job's root (if this process runs it) sent to misbehaving ranks, as they happen. */
    public synchronized Flux<JmscclppException> rootProblems() {
        return ownedRoot == null ? Flux.empty() : ownedRoot.problems();
    }

    @Override
    public Mono<byte[]> allGather(byte[] local, Duration timeout) {
        Objects.requireNonNull(local, "local");
        return collective("allGather", timeout, (seq, deadline) -> Collectives.allGather(transport, seq, local, deadline));
    }

    @Override
    public Mono<Void> barrier(Duration timeout) {
        return collective("barrier", timeout, (seq, deadline) -> Collectives.barrier(transport, seq, deadline));
    }

    @Override
    public Mono<byte[]> broadcast(int root, byte[] data, Duration timeout) {
        Objects.requireNonNull(data, "data");
        return collective("broadcast", timeout, () -> checkPeer(root, "broadcast", "root"),
                (seq, deadline) -> Collectives.broadcast(transport, seq, root, data, deadline, b -> { }));
    }

    private interface CollectiveBody<T> {
        Mono<T> run(long seq, long deadlineNanos);
    }

    private <T> Mono<T> collective(String phase, Duration timeout, CollectiveBody<T> body) {
        return collective(phase, timeout, () -> { }, body);
    }

    /**
     * Runs a collective under the next sequence number. {@code checkArguments} runs first: a call
     * refused with INVALID_USAGE must not use up a number, or this rank's later collectives would
     * no longer match the other ranks'.
     */
    private <T> Mono<T> collective(String phase, Duration timeout, Runnable checkArguments, CollectiveBody<T> body) {
        Objects.requireNonNull(timeout, "timeout");
        return Mono.defer(() -> {
            checkReady(phase);
            checkArguments.run();
            long seq = collectiveSeq.getAndIncrement();
            long deadline = Waiting.deadline(timeout);
            return body.run(seq, deadline).doFinally(s -> mailboxes().forgetChannel(Frame.COLLECTIVE, seq));
        });
    }

    @Override
    public Mono<Void> send(int peer, int tag, byte[] data, Duration timeout) {
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(timeout, "timeout");
        return Mono.defer(() -> {
            checkReady("send");
            checkPeer(peer, "send", "peer");
            Mailboxes.Context ctx = new Mailboxes.Context(rank, peer, tag, "send");
            if (peer == rank) {
                mailboxes().deliverLocal(new Mailboxes.Key(rank, Frame.USER, tag), data.clone());
                return Mono.empty();
            }
            return transmit(peer, Frame.USER, tag, data, 0, data.length, true,
                    Waiting.deadline(timeout), ctx);
        });
    }

    @Override
    public Mono<byte[]> recv(int peer, int tag, Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return Mono.defer(() -> {
            checkReady("recv");
            checkPeer(peer, "recv", "peer");
            long deadline = Waiting.deadline(timeout);
            Mailboxes.Context ctx = new Mailboxes.Context(rank, peer, tag, "recv");
            return mailboxes().take(new Mailboxes.Key(peer, Frame.USER, tag), deadline, ctx);
        });
    }

    @Override
    public void abort(String reason) {
        // the peer field names the rank that aborted, on every rank the news reaches
        fail(JmscclppException.builder(ErrorCode.ABORTED, "aborted on rank " + rank + ": " + reason)
                .rank(rank).peer(rank).phase("abort").build(), true);
    }

    /**
     * {@inheritDoc}
     *
     * <p>No message is needed, so it works whatever the old job's state: the lowest surviving rank
     * closes its listening socket and runs the new job's root on that address, which every
     * survivor knows from the address book; the new job's secret is derived from the old one and
     * the excluded set (HMAC-SHA256), so survivors that disagree on the set cannot join each other
     * and time out in root check-in.
     */
    @Override
    public Mono<TcpBootstrap> shrink(Collection<Integer> excludedRanks, Duration timeout) {
        return Mono.defer(() -> {
            TreeSet<Integer> excluded = new TreeSet<>(excludedRanks);
            for (int r : excluded) {
                checkPeer(r, "shrink", "excluded rank");
            }
            if (excluded.contains(rank)) {
                throw usage("shrink", "this rank is in the excluded set " + excluded);
            }
            // checked before this bootstrap counts as shrunk: a bad timeout leaves the one shrink it has
            BootstrapOptions nextOptions;
            try {
                nextOptions = options.toBuilder().initTimeout(timeout).build();
            } catch (JmscclppException e) {
                throw usage("shrink", e.detail());
            }
            AddressBook b;
            TcpUniqueId id;
            synchronized (this) {
                if (book == null || jobId == null || state == State.NEW || state == State.INITIALIZING) {
                    throw usage("shrink", "shrink needs an initialized bootstrap (state " + state + ")");
                }
                if (shrunk) {
                    throw usage("shrink", "this bootstrap was shrunk already; shrink the new one");
                }
                shrunk = true;
                b = book;
                id = jobId;
            }
            List<Integer> survivors = new ArrayList<>();
            for (int r = 0; r < size; r++) {
                if (!excluded.contains(r)) {
                    survivors.add(r);
                }
            }
            int leader = survivors.getFirst();
            InetSocketAddress rootAt = InterfaceSelector.reachableFrom(
                    Objects.requireNonNull(b.address(leader), "leader address"), b.address(rank).getAddress());
            TcpUniqueId next = new TcpUniqueId(rootAt, shrunkSecret(id.secret(), size, excluded));
            TcpBootstrap nb = create(survivors.indexOf(rank), survivors.size(), nextOptions);
            Mono<Void> freePort = rank != leader || links == null ? Mono.empty()
                    : links().closeListener().onErrorResume(e -> Mono.empty());
            LOG.log(Level.INFO, "rank {0}: shrinking to the {1} ranks without {2}; rank {3} runs the root at {4}",
                    rank, survivors.size(), excluded, leader, rootAt);
            return freePort.then(nb.start(next, new InetSocketAddress(Objects.requireNonNull(b.address(rank))
                    .getAddress(), 0), rank == leader ? rootAt : null, true));
        });
    }

    /** The secret of the job shrunk from one of {@code size} ranks with {@code secret} by leaving out {@code excluded}. */
    static byte[] shrunkSecret(byte[] secret, int size, SortedSet<Integer> excluded) {
        ByteBuffer in = ByteBuffer.allocate(4 + 4 * excluded.size()).order(ByteOrder.LITTLE_ENDIAN);
        in.putInt(size);
        excluded.forEach(in::putInt);
        return Arrays.copyOf(Proofs.compute(secret, "jmscclpp shrink 1", in.array()), secret.length);
    }

    @Override
    public Mono<JmscclppException> failure() {
        return failed.mono();
    }

    @Override
    public void close() {
        close(null);
    }

    /**
     * Closes; {@code initFailure} is why initialize failed, which the root this rank runs (if
     * any) passes on to the ranks still waiting for it instead of just dropping them.
     */
    private void close(@Nullable JmscclppException initFailure) {
        List<ChannelFuture> closing;
        BootstrapRoot root;
        boolean acquired;
        synchronized (this) {
            if (state == State.CLOSED) {
                return;
            }
            acquired = loops != null;
            state = State.CLOSED;
            root = ownedRoot;
            ownedRoot = null;
        }
        // The root first: fail() drops this rank's check-in connection, which a root still
        // collecting would report to the other ranks as this rank having died.
        if (root != null) {
            root.close(initFailure == null ? null : JmscclppException.builder(initFailure.code(),
                    "rank " + rank + ", which runs the root, failed: " + initFailure.detail())
                    .peer(rank).phase("root check-in").build());
        }
        fail(JmscclppException.builder(ErrorCode.ABORTED, "rank " + rank + " closed its bootstrap")
                .rank(rank).phase("close").build(), false);
        closing = links == null ? List.of() : links.closeAll();
        if (!acquired) {
            return;
        }
        // waiting on a channel could deadlock on an event loop, and stall a thread that must not block
        boolean mayBlock = !loops().inEventLoop() && !Schedulers.isInNonBlockingThread();
        if (mayBlock) {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            for (ChannelFuture f : closing) {
                f.awaitUninterruptibly(Math.max(0, TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime())));
            }
        }
        loops().close();
    }

    // ---------------------------------------------------------------- machinery

    /**
     * Hands {@code len} bytes to the connection towards {@code peer}, cut into frames of at most
     * {@link BootstrapOptions#maxFrameBytes()}, all written in one event-loop task so the frames of
     * one message stay together. Completes when the last frame is written to the socket.
     */
    private Mono<Void> transmit(int peer, byte kind, long channel, byte[] data, int off, int len, boolean mayOpen,
                                long deadline, Mailboxes.Context ctx) {
        return Mono.create((MonoSink<Void> sink) -> {
            AtomicBoolean finished = new AtomicBoolean();
            AtomicBoolean connected = new AtomicBoolean();
            Disposable timer = timers().schedule(() -> {
                if (finished.compareAndSet(false, true)) {
                    sink.error(JmscclppException.builder(ErrorCode.TIMEOUT, "could not hand a message to rank " + peer
                                    + (connected.get() ? " (it is not reading)" : " (no connection from it yet)"))
                            .rank(rank).peer(peer).tag(ctx.tag()).phase(ctx.phase()).build());
                }
            }, Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            // the job's failure when there is one (it names the rank that died first), else this error
            Consumer<Throwable> reportError = err -> {
                if (finished.compareAndSet(false, true)) {
                    timer.dispose();
                    JmscclppException known = failure;
                    sink.error(located(known != null ? known : err, ctx));
                }
            };
            // A connection that is gone (reset, closed) means its peer died, failed or left. When the
            // job failed, the news of the rank that died first travels as relayed failures, maybe
            // over other connections and a little later: wait for it, at most the drain window,
            // before reporting the lost connection itself.
            Consumer<Throwable> reportAfterNews = err -> {
                if (failure != null) {
                    reportError.accept(err);
                    return;
                }
                Disposable drain;
                try {
                    drain = timers().schedule(() -> reportError.accept(err), PeerLinks.DRAIN_AFTER_FAILURE_MS,
                            TimeUnit.MILLISECONDS);
                } catch (RejectedExecutionException e) {
                    reportError.accept(err);   // the event loops are going: no news will come
                    return;
                }
                failed.mono().subscribe(news -> {
                    drain.dispose();
                    reportError.accept(err);
                });
            };
            Disposable ready = links().sendChannel(peer, mayOpen).subscribe(ch -> {
                connected.set(true);
                Runnable write = () -> {
                    int max = options.maxFrameBytes();
                    ChannelFuture last = null;
                    if (len == 0) {
                        last = ch.write(new Frame(kind, Frame.LAST, channel, Unpooled.EMPTY_BUFFER));
                    }
                    for (int p = 0; p < len; p += max) {
                        int n = Math.min(max, len - p);
                        boolean isLast = p + n >= len;
                        // not the void promise: its failure would close the connection before its
                        // last frames are read; the last frame's write fails as well
                        ByteBuf chunk = Unpooled.wrappedBuffer(data, off + p, n);
                        ChannelFuture written = ch.write(new Frame(kind, isLast ? Frame.LAST : 0, channel, chunk));
                        if (isLast) {
                            last = written;
                        }
                    }
                    ch.flush();
                    NettyFutures.toMono(Objects.requireNonNull(last, "last frame")).subscribe(c -> {
                        if (finished.compareAndSet(false, true)) {
                            timer.dispose();
                            sink.success();
                        }
                    }, writeError -> {
                        // The connection broke. Its last frames may still wait to be read: a failure the
                        // peer relayed before it left names the rank that died first, which is the news.
                        // So report once the connection has closed and those frames were handled (the
                        // link's own close listener, which may fail the job, runs before this one), and
                        // give news over the other connections the same window.
                        NettyFutures.toMono(ch.closeFuture()).subscribe(c -> reportAfterNews.accept(
                                JmscclppException.builder(ErrorCode.REMOTE_ERROR, "could not send to rank " + peer
                                        + ": " + writeError).cause(writeError).build()));
                        try {
                            timers().schedule(ch::close, PeerLinks.DRAIN_AFTER_FAILURE_MS, TimeUnit.MILLISECONDS);
                        } catch (RejectedExecutionException e) {
                            ch.close();   // the timers are going: nothing will drain it
                        }
                    });
                };
                if (ch.eventLoop().inEventLoop()) {
                    write.run();
                } else {
                    ch.eventLoop().execute(write);
                }
            }, err -> {
                if (err.getCause() instanceof ConnectException && !mailboxes().hasDeparted(peer)) {
                    // the links reported the refused dial (onUnreachable), which fails the job
                    // within the drain window unless other news comes first
                    failed.mono().subscribe(news -> reportError.accept(err));
                } else {
                    reportError.accept(err);
                }
            });
            sink.onCancel(() -> {
                finished.set(true);
                timer.dispose();
                ready.dispose();
            });
        });
    }

    private final class CollectiveTransport implements Collectives.Transport {
        @Override
        public int rank() {
            return rank;
        }

        @Override
        public boolean crowded() {
            return crowded;
        }

        @Override
        public int size() {
            return size;
        }

        @Override
        public Mono<Void> send(int peer, long seq, byte[] data, int off, int len, long deadline, String phase) {
            return transmit(peer, Frame.COLLECTIVE, seq, data, off, len, rank < peer, deadline,
                    new Mailboxes.Context(rank, peer, JmscclppException.NONE, phase));
        }

        @Override
        public Mono<byte[]> recv(int peer, long seq, long deadline, String phase) {
            Mailboxes.Context ctx = new Mailboxes.Context(rank, peer, JmscclppException.NONE, phase);
            return Mono.defer(() -> {
                links().ensureOpenedByLower(peer);
                return mailboxes().take(new Mailboxes.Key(peer, Frame.COLLECTIVE, seq), deadline, ctx);
            });
        }
    }

    private final class LinkEvents implements PeerLinks.Events {
        @Override
        public void onFrame(int peer, Channel channel, Frame frame) {
            try {
                switch (frame.kind()) {
                    case Frame.USER, Frame.COLLECTIVE -> mailboxes().deliver(
                            new Mailboxes.Key(peer, frame.kind(), frame.channel()), frame.payload(), frame.last());
                    case Frame.GOODBYE -> {
                        channel.attr(SAID_GOODBYE).set(Boolean.TRUE);
                        goodbye(peer, frame.channel());
                    }
                    case Frame.FAILURE -> fail(Failure.decode(frame.channel(), frame.payload()), true);
                    default -> {
                        LOG.log(Level.WARNING, "rank {0}: rank {1} sent frame kind {2}; closing that connection",
                                rank, peer, frame.kind());
                        channel.close();
                    }
                }
            } finally {
                frame.release();
            }
        }

        @Override
        public void onClosed(int peer, Channel channel) {
            links().closed(peer, channel);
            if (Boolean.TRUE.equals(channel.attr(SAID_GOODBYE).get())) {
                return;
            }
            synchronized (TcpBootstrap.this) {
                if (state == State.CLOSED || mailboxes().hasDeparted(peer)) {
                    return;
                }
            }
            fail(JmscclppException.builder(ErrorCode.REMOTE_ERROR, "lost the connection to rank " + peer
                            + " without a goodbye (its process died or the network failed)")
                    .rank(rank).peer(peer).phase("connection").build(), true);
        }

        /**
         * A peer that does not take connections is gone while the job needs it: unless news of an
         * earlier failure comes within the drain window (it names the rank that died first), the
         * job fails naming it and the news goes to every connected peer. Whoever waits on that peer
         * (a send that dialled it, a receive that never will be served) ends with that failure,
         * and a rank whose operation failed relays it before its goodbye.
         */
        @Override
        public void onUnreachable(int peer, JmscclppException error) {
            Runnable failUnlessNews = () -> {
                synchronized (TcpBootstrap.this) {
                    if (state == State.CLOSED || failure != null || mailboxes().hasDeparted(peer)) {
                        return;
                    }
                }
                fail(JmscclppException.builder(ErrorCode.REMOTE_ERROR, "rank " + peer + " is unreachable ("
                        + error.detail() + "): its process died or the network failed").rank(rank).peer(peer)
                        .phase("connection").cause(error.getCause()).build(), true);
            };
            try {
                timers().schedule(failUnlessNews, PeerLinks.DRAIN_AFTER_FAILURE_MS, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException e) {
                // the timers are going: this bootstrap is closing
            }
        }
    }

    /** Set on a connection whose peer sent its goodbye: no frame follows on it. */
    private static final io.netty.util.AttributeKey<Boolean> SAID_GOODBYE =
            io.netty.util.AttributeKey.valueOf("jmscclpp.saidGoodbye");

    /** Goodbyes received per peer. */
    private final java.util.Map<Integer, Integer> goodbyes = new java.util.HashMap<>();

    /**
     * A peer has left once a goodbye came on every connection it had with this rank (the goodbye
     * says how many): a pair may share two connections, and a goodbye on one can overtake
     * messages, or even the connection itself, still travelling on the other.
     */
    private void goodbye(int peer, long connectionsWithPeer) {
        synchronized (this) {
            int seen = goodbyes.merge(peer, 1, Integer::sum);
            if (seen < connectionsWithPeer) {
                return;
            }
        }
        mailboxes().peerDeparted(peer);
    }


    /**
     * Fails the job on this rank: every pending and later operation errors with {@code e} (seen
     * from this rank); when {@code relay}, tells every connected peer, which does the same, so the
     * news reaches every rank still connected.
     */
    private void fail(JmscclppException e, boolean relay) {
        OneShot<Welcome> w;
        synchronized (this) {
            if (failing) {
                return;
            }
            failing = true;
            w = welcome;
        }
        // The relay is queued on each connection (and on any made later) before anyone can hear of
        // the failure, the failure field included: a caller who hears may close this bootstrap at
        // once, and its goodbyes must follow the failure frames, or the peers would take this
        // rank's departure for the news and never learn which rank failed first.
        if (links != null) {
            links.failAll(e.withRank(rank), relay ? ch -> ch.eventLoop().execute(() -> ch.writeAndFlush(
                    new Frame(Frame.FAILURE, Frame.LAST, e.code().ordinal(), Failure.encode(e)), ch.voidPromise()))
                    : null);
        }
        failure = e;
        if (links != null && relay && (e.code() != ErrorCode.ABORTED || e.rank() == rank)) {
            LOG.log(Level.WARNING, "rank {0}: {1}", rank, e.getMessage());
        }
        failed.succeed(e);
        if (w != null) {
            w.fail(e.withRank(rank));
        }
        if (mailboxes != null) {
            mailboxes.failAll(ctx -> JmscclppException.builder(e.code(), e.detail()).rank(rank)
                    .peer(e.peer() != JmscclppException.NONE ? e.peer() : ctx.peer()).tag(ctx.tag())
                    .phase(ctx.phase()).build());
        }
    }

    private void checkReady(String phase) {
        JmscclppException f = failure;
        synchronized (this) {
            if (state != State.READY) {
                throw usage(phase, state == State.CLOSED ? "the bootstrap is closed" : "the bootstrap is not initialized");
            }
        }
        if (f != null) {
            throw JmscclppException.builder(f.code(), f.detail()).rank(rank).peer(f.peer()).phase(phase).build();
        }
    }

    private void checkPeer(int peer, String phase, String what) {
        if (peer < 0 || peer >= size) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, what + " " + peer + " is outside [0, " + size + ")")
                    .rank(rank).peer(peer).phase(phase).build();
        }
    }

    private JmscclppException usage(String phase, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(rank).phase(phase).build();
    }

    private Throwable unwrap(Throwable c) {
        return c instanceof JmscclppException ? c : JmscclppException.builder(ErrorCode.INTERNAL_ERROR,
                "unexpected " + c).rank(rank).phase("initialize").cause(c).build();
    }

    private JmscclppException located(Throwable err, Mailboxes.Context ctx) {
        Throwable c = unwrap(err);
        JmscclppException je = (JmscclppException) c;
        return JmscclppException.builder(je.code(), je.detail()).rank(rank)
                .peer(je.peer() != JmscclppException.NONE ? je.peer() : ctx.peer()).tag(ctx.tag())
                .phase(ctx.phase()).cause(je.getCause()).build();
    }

    private EventLoops.Lease loops() {
        return Objects.requireNonNull(loops, "loops");
    }

    private Scheduler timers() {
        return Objects.requireNonNull(timers, "timers");
    }

    private Mailboxes mailboxes() {
        return Objects.requireNonNull(mailboxes, "mailboxes");
    }

    private PeerLinks links() {
        return Objects.requireNonNull(links, "links");
    }

    /** Mailboxes still holding messages or waiting receives (tests check that operations leave none). */
    int mailboxCount() {
        Mailboxes m = mailboxes;
        return m == null ? 0 : m.boxCount();
    }

    /** The connections this rank has with its peers now (tests check which event loops they run on). */
    List<Channel> connections() {
        PeerLinks l = links;
        return l == null ? List.of() : l.allChannels();
    }

    /** Bootstraps and roots currently holding the shared event loops in this JVM (for leak checks in tests). */
    static int eventLoopUsers() {
        return EventLoops.users();
    }
}
