package org.jmscclpp.bootstrap;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
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
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
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
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The root of one job: collects every rank's check-in (rank, rank count, host, listen address),
 * then welcomes each rank with the job session and hands rank 0 the address book.
 *
 * <p>A client can never take the root down: a wrong rank count, a rank outside [0, N) or a second
 * check-in of one rank gets {@link ErrorCode#INVALID_USAGE} sent back on that connection and
 * reported on {@link #problems()}; the root goes on waiting for the right ranks. Stray connections
 * (no proof of the job secret, garbage, silence) are dropped by the {@link PreambleHandler}. A rank that
 * disconnects after checking in, or a deadline that passes first, fails the job: every waiting
 * rank, and every rank that checks in later, is told why (naming the missing or dead ranks, and the
 * check-ins it refused).
 *
 * <p>Once every rank has checked in the root stops listening, so the next job on the same fixed
 * port never reaches it.
 */
final class BootstrapRoot implements AutoCloseable {

    private static final System.Logger LOG = Log.logger(BootstrapRoot.class, Subsystem.INIT);
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int CHECK_IN_MAX_FRAME = 4096;

    private enum State { COLLECTING, WIRED, FAILED, CLOSED }

    private final int expectedSize;
    private final EventLoops.Lease loops;
    private final Sinks.Many<JmscclppException> problems = Sinks.many().replay().limit(256);
    private final List<Channel> clients = new ArrayList<>();
    private final Channel listener;
    private final Disposable deadline;
    private final long startNanos = System.nanoTime();
    private final Channel[] checkedIn;
    private final long[] hostHashes;
    private final int[] cores;
    private final InetSocketAddress[] addresses;
    private int count;
    /** Connections that failed their handshake while collecting, and the last one's reason and address. */
    private int handshakeFailures;
    private String lastHandshakeFailure = "";
    /** Check-ins refused (a wrong job size, a rank outside it, a second check-in), named by the TIMEOUT. */
    private int refusals;
    private String lastRefusal = "";
    private State state = State.COLLECTING;
    private @Nullable JmscclppException failure;

    private BootstrapRoot(int expectedSize, EventLoops.Lease loops, Scheduler timers, Channel listener,
                          Duration timeout) {
        this.expectedSize = expectedSize;
        this.loops = loops;
        this.listener = listener;
        this.checkedIn = new Channel[expectedSize];
        this.hostHashes = new long[expectedSize];
        this.cores = new int[expectedSize];
        this.addresses = new InetSocketAddress[expectedSize];
        this.deadline = timers.schedule(this::expire, timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * Starts a root for a job of {@code expectedSize} ranks on {@code address} (port 0 = any free port),
     * retrying a busy fixed port until {@code bindDeadlineNanos}; emits it once bound. It runs on
     * {@code group} (null: the shared event loops) and its timers on {@code timers} (null: the event
     * loops). The bind goes on when the Mono is cancelled, so a caller must not cancel it: a root
     * nobody receives would listen until its deadline.
     */
    static Mono<BootstrapRoot> start(byte[] secret, int expectedSize, InetSocketAddress address, Duration timeout,
                                     long bindDeadlineNanos, @Nullable EventLoopGroup group,
                                     @Nullable Scheduler timers) {
        return Mono.defer(() -> {
            EventLoops.Lease loops = EventLoops.lease(group);
            Scheduler timer = timers != null ? timers : loops.timers();
            BootstrapRoot[] self = new BootstrapRoot[1];
            ServerBootstrap sb = new ServerBootstrap()
                    .group(loops.group())
                    .channel(loops.serverChannel())
                    .option(ChannelOption.SO_BACKLOG, 16384)
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            BootstrapRoot root = self[0];
                            if (root == null || !root.track(ch)) {
                                ch.close();
                                return;
                            }
                            PreambleHandler handshake = PreambleHandler.accepting(secret,
                                    PeerLinks.HANDSHAKE_TIMEOUT_NANOS, "bootstrap root", root::acceptClient);
                            handshake.refusal().subscribe(why -> root.handshakeFailed(ch, why));
                            ch.pipeline().addLast(new FrameEncoder(), handshake);
                        }
                    });
            return bindWithRetry(sb, address, bindDeadlineNanos, 10, timer)
                    .map(bound -> {
                        BootstrapRoot root = new BootstrapRoot(expectedSize, loops, timer, bound, timeout);
                        self[0] = root;
                        LOG.log(Level.DEBUG, "bootstrap root for {0} ranks listening on {1}", expectedSize,
                                bound.localAddress());
                        return root;
                    })
                    .doOnError(e -> loops.close());
        });
    }

    /** Binds; a fixed port may still be held by the previous job's root for a moment, so a busy one is retried. */
    private static Mono<Channel> bindWithRetry(ServerBootstrap sb, InetSocketAddress address, long deadlineNanos,
                                               long pauseMillis, Scheduler timers) {
        return Mono.defer(() -> NettyFutures.toMono(sb.bind(address))).onErrorResume(error -> {
            long left = deadlineNanos - System.nanoTime();
            if (address.getPort() == 0 || left <= 0) {
                return Mono.error(JmscclppException.builder(ErrorCode.SYSTEM_ERROR,
                                "the root cannot listen on " + address + ": " + error.getMessage())
                        .phase("root bind").cause(error).build());
            }
            return Mono.delay(Duration.ofMillis(Math.min(pauseMillis, TimeUnit.NANOSECONDS.toMillis(left) + 1)), timers)
                    .then(bindWithRetry(sb, address, deadlineNanos, Math.min(pauseMillis * 2, 200), timers));
        });
    }

    /**
     * How much earlier than the ranks a root started with {@code leftNanos} of a rank's deadline
     * gives up: a tenth, between 50 ms and 2 s, so that its report naming the missing ranks reaches
     * the ranks that wait before their own deadlines fire.
     */
    static long reportMargin(long leftNanos) {
        long margin = Math.clamp(leftNanos / 10, TimeUnit.MILLISECONDS.toNanos(50), TimeUnit.SECONDS.toNanos(2));
        return margin < leftNanos ? margin : 0;
    }

    InetSocketAddress localAddress() {
        return (InetSocketAddress) listener.localAddress();
    }

    /** Errors the root sent to misbehaving clients, and the job's failure if it failed. */
    Flux<JmscclppException> problems() {
        return problems.asFlux();
    }

    @Override
    public void close() {
        close(null);
    }

    /**
     * Stops the root. If ranks are still waiting for their welcome, each is told {@code reason}
     * (or that the root was closed, when null) before its connection closes, rather than seeing
     * the connection drop. Blocks at most briefly, and never on an event-loop thread.
     */
    void close(@Nullable JmscclppException reason) {
        List<Channel> toClose = new ArrayList<>();
        List<Channel> toTell = new ArrayList<>();
        JmscclppException told = null;
        synchronized (this) {
            if (state == State.CLOSED) {
                return;
            }
            if (state == State.COLLECTING) {
                failure = reason != null ? reason : JmscclppException.builder(ErrorCode.ABORTED,
                        "the root was closed before every rank checked in").phase("root check-in").build();
                told = failure;
            }
            // Once wired, the welcomes close their connections themselves when written; once
            // failed, so do the failure reports fail() sent to the ranks that had checked in.
            for (Channel ch : clients) {
                boolean checkedInRank = java.util.Arrays.asList(checkedIn).contains(ch);
                if (state == State.COLLECTING && checkedInRank) {
                    toTell.add(ch);
                } else if (!checkedInRank) {
                    // strays: connections that never checked in (silent, or refused)
                    toClose.add(ch);
                }
            }
            state = State.CLOSED;
            clients.clear();
        }
        deadline.dispose();
        List<ChannelFuture> closing = new ArrayList<>();
        closing.add(listener.close());
        for (Channel ch : toTell) {
            sendFailure(ch, told);
            closing.add(ch.closeFuture());
        }
        for (Channel ch : toClose) {
            closing.add(ch.close());
        }
        problems.tryEmitComplete();
        // waiting on a channel could deadlock on an event loop, and stall a thread that must not block
        if (!loops.inEventLoop() && !Schedulers.isInNonBlockingThread()) {
            for (ChannelFuture f : closing) {
                f.awaitUninterruptibly(2, TimeUnit.SECONDS);
            }
        }
        loops.close();
    }

    private synchronized boolean track(Channel ch) {
        if (state == State.CLOSED || state == State.WIRED) {
            return false;
        }
        clients.add(ch);
        NettyFutures.toMono(ch.closeFuture()).subscribe(closed -> clientClosed(ch));
        return true;
    }

    /**
     * A connection failed its handshake: counted for the TIMEOUT of ranks that never check in (a rank
     * with another job's secret gives up on the root's proof and closes), the first one logged.
     */
    private void handshakeFailed(Channel ch, String why) {
        int failed;
        synchronized (this) {
            if (state != State.COLLECTING) {
                return;
            }
            failed = ++handshakeFailures;
            lastHandshakeFailure = why + ", from " + ch.remoteAddress();
        }
        if (failed == 1) {
            LOG.log(Level.WARNING, "bootstrap root: a connection from {0} failed the handshake: {1} (a rank with "
                    + "another {2}, or another job''s rank; later ones are logged at DEBUG)", ch.remoteAddress(), why,
                    BootstrapOptions.SECRET_ENV);
        }
    }

    private Mono<PreambleHandler.Answer> acceptClient(ChannelHandlerContext ctx, Preamble p) {
        if (p.type != Preamble.TYPE_ROOT) {
            return Mono.just(PreambleHandler.Answer.refuse("a rank-to-rank connection sent to the root"));
        }
        Preamble reply = new Preamble(Preamble.TYPE_ROOT, Preamble.noSession(), -1, expectedSize);
        return Mono.just(PreambleHandler.Answer.accept(reply, (proven, rank) -> {
            // the check-in is read only from a client that proved it knows the job secret
            proven.pipeline().addLast(new FrameDecoder(CHECK_IN_MAX_FRAME), new CheckInHandler());
            return null;
        }));
    }

    private void onCheckIn(Channel ch, Frame frame) {
        ByteBuf in = frame.payload();
        if (frame.kind() == Frame.FAILURE && gaveUp(ch, Failure.decode(frame.channel(), in))) {
            return;
        }
        if (frame.kind() != Frame.CHECK_IN || in.readableBytes() != 8 + AddressBook.ENTRY_BYTES) {
            LOG.log(Level.WARNING, "bootstrap root: dropping {0}: expected a check-in frame", ch.remoteAddress());
            ch.close();
            return;
        }
        int rank = in.readIntLE();
        int size = in.readIntLE();
        long hostHash = in.readLongLE();
        InetSocketAddress address = AddressBook.readAddress(in);
        int cores = in.readUnsignedShortLE();
        JmscclppException refused = null;
        JmscclppException jobFailure = null;
        boolean wired = false;
        synchronized (this) {
            switch (state) {
                case FAILED -> jobFailure = failure;
                case WIRED, CLOSED -> {
                    ch.close();
                    return;
                }
                case COLLECTING -> {
                    if (address == null) {
                        refused = invalid(rank, "check-in with a malformed listen address");
                    } else if (size != expectedSize) {
                        refused = invalid(rank, "rank " + rank + " says the job has " + size
                                + " ranks, but the root serves a job of " + expectedSize);
                    } else if (rank < 0 || rank >= expectedSize) {
                        refused = invalid(rank, "rank " + rank + " is outside [0, " + expectedSize + ")");
                    } else if (checkedIn[rank] != null) {
                        refused = invalid(rank, "rank " + rank + " has already checked in from "
                                + checkedIn[rank].remoteAddress() + "; a second check-in came from " + ch.remoteAddress());
                    } else {
                        checkedIn[rank] = ch;
                        hostHashes[rank] = hostHash;
                        this.cores[rank] = cores;
                        addresses[rank] = address;
                        count++;
                        wired = count == expectedSize;
                        if (wired) {
                            state = State.WIRED;
                        }
                    }
                    if (refused != null) {
                        refusals++;
                        lastRefusal = refused.detail() + ", from " + ch.remoteAddress();
                    }
                }
            }
        }
        if (jobFailure != null) {
            sendFailure(ch, jobFailure);
        } else if (refused != null) {
            LOG.log(Level.WARNING, "bootstrap root: refusing a check-in from {0}: {1}", ch.remoteAddress(),
                    refused.getMessage());
            problems.tryEmitNext(refused);
            sendFailure(ch, refused);
        } else if (wired) {
            welcomeAll();
        }
    }

    private void welcomeAll() {
        listener.close();
        deadline.dispose();
        byte[] session = new byte[Preamble.SESSION_BYTES];
        RANDOM.nextBytes(session);
        AddressBook book = AddressBook.of(hostHashes.clone(), cores.clone(), addresses.clone());
        for (int r = 0; r < expectedSize; r++) {
            Channel ch = checkedIn[r];
            ByteBuf welcome = Unpooled.buffer(21 + (r == 0 ? 4 + expectedSize * AddressBook.ENTRY_BYTES : 0));
            welcome.writeBytes(session);
            welcome.writeIntLE(expectedSize);
            welcome.writeByte(r == 0 ? 1 : 0);
            if (r == 0) {
                book.writeTo(welcome);
            }
            // The rank closes its end once welcomed; closing here too bounds the root's lifetime.
            LingeringClose.writeLastAndClose(ch, Frame.WELCOME, 0, welcome);
        }
        LOG.log(Level.DEBUG, "bootstrap root: {0} ranks checked in within {1} ms", expectedSize,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos));
    }

    private void clientClosed(Channel ch) {
        int lost = -1;
        boolean done = false;
        synchronized (this) {
            clients.remove(ch);
            if (state == State.WIRED) {
                done = clients.isEmpty();
            } else if (state != State.COLLECTING) {
                return;
            }
        }
        if (done) {
            // every welcome is out and its connection closed: the root has stopped, so its event
            // loops go now, not when the bootstrap that created the id is closed (if ever)
            close();
            return;
        }
        synchronized (this) {
            for (int r = 0; r < expectedSize; r++) {
                if (checkedIn[r] == ch) {
                    lost = r;
                    break;
                }
            }
        }
        if (lost >= 0) {
            fail(JmscclppException.builder(ErrorCode.REMOTE_ERROR, "rank " + lost
                            + " disconnected from the root before every rank had checked in (process died?)")
                    .peer(lost).phase("root check-in").build());
        }
    }

    /**
     * A rank that had checked in reports that its own deadline passed (it started earlier than the
     * root, or its deadline is shorter): the job fails with TIMEOUT naming the missing ranks, not
     * with that rank's disconnection. Returns false for a frame from a connection that is not a
     * checked-in rank's.
     */
    private boolean gaveUp(Channel ch, JmscclppException report) {
        int who = -1;
        synchronized (this) {
            for (int r = 0; r < expectedSize; r++) {
                if (checkedIn[r] == ch) {
                    who = r;
                }
            }
        }
        if (who < 0) {
            return false;
        }
        LOG.log(Level.DEBUG, "bootstrap root: rank {0} gave up: {1}", who, report.getMessage());
        fail(missingRanks("rank " + who + " stopped waiting at its own deadline"));
        return true;
    }

    private void expire() {
        synchronized (this) {
            if (state != State.COLLECTING) {
                return;
            }
        }
        fail(missingRanks("the root's deadline passed"));
        close();
    }

    /** TIMEOUT naming the ranks that have not checked in (the first 32 of them), and why the root stops waiting. */
    private JmscclppException missingRanks(String why) {
        List<Integer> missing = new ArrayList<>();
        int arrived;
        int failures;
        String lastFailure;
        int refused;
        String lastRefused;
        synchronized (this) {
            arrived = count;
            failures = handshakeFailures;
            lastFailure = lastHandshakeFailure;
            refused = refusals;
            lastRefused = lastRefusal;
            for (int r = 0; r < expectedSize && missing.size() < 32; r++) {
                if (checkedIn[r] == null) {
                    missing.add(r);
                }
            }
        }
        return JmscclppException.builder(ErrorCode.TIMEOUT, "only " + arrived + " of " + expectedSize
                        + " ranks checked in within " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos)
                        + " ms; never checked in: rank" + (missing.size() == 1 ? " " : "s ")
                        + missing.stream().map(String::valueOf).collect(Collectors.joining(", "))
                        + (expectedSize - arrived > missing.size() ? ", ..." : "") + " (" + why + ")"
                        + (failures == 0 ? "" : "; " + failures + " connection" + (failures == 1 ? "" : "s")
                        + " failed the handshake (the last: " + lastFailure + "): a rank with another "
                        + BootstrapOptions.SECRET_ENV + ", or another job's?")
                        + (refused == 0 ? "" : "; " + refused + " check-in" + (refused == 1 ? " was" : "s were")
                        + " refused (the last: " + lastRefused + ")"))
                .peer(missing.isEmpty() ? JmscclppException.NONE : missing.getFirst()).phase("root check-in").build();
    }

    private void fail(JmscclppException e) {
        List<Channel> waiting = new ArrayList<>();
        synchronized (this) {
            if (state != State.COLLECTING) {
                return;
            }
            state = State.FAILED;
            failure = e;
            for (Channel ch : checkedIn) {
                if (ch != null) {
                    waiting.add(ch);
                }
            }
        }
        LOG.log(Level.WARNING, "bootstrap root: the job failed: {0}", e.getMessage());
        problems.tryEmitNext(e);
        for (Channel ch : waiting) {
            sendFailure(ch, e);
        }
    }

    private static void sendFailure(Channel ch, JmscclppException e) {
        if (!ch.isActive()) {
            return;
        }
        LingeringClose.writeLastAndClose(ch, Frame.FAILURE, e.code().ordinal(), Failure.encode(e));
    }

    private static JmscclppException invalid(int rank, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).rank(rank).phase("root check-in").build();
    }

    private final class CheckInHandler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Frame frame = (Frame) msg;
            try {
                onCheckIn(ctx.channel(), frame);
            } finally {
                frame.release();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            LOG.log(Level.WARNING, "bootstrap root: dropping {0}: {1}", ctx.channel().remoteAddress(), cause.toString());
            ctx.close();
        }
    }
}
