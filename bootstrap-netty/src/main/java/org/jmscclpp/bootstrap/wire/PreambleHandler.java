package org.jmscclpp.bootstrap.wire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.concurrent.ScheduledFuture;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * First handler of every bootstrap connection: runs the {@link Preamble} handshake, in which both
 * sides prove they know the job secret, then removes itself so the bytes that follow reach the
 * frame decoder. The side that connects is made with {@link #dialling}, the side that accepts with
 * {@link #accepting}. A connection whose preamble or proof is wrong, or that does not finish the
 * handshake within its deadline, is closed at once with one log line, and nothing of it is read
 * any more; nothing else in the job notices. On accepting sides that line is a WARNING for the
 * first refusal and then at most once a {@linkplain #WARNING_INTERVAL_NANOS minute} (naming how many
 * refusals went to DEBUG meanwhile): strays come by the thousand from a port scanner or a flood.
 */
public final class PreambleHandler extends ByteToMessageDecoder {

    private static final System.Logger LOG = Log.logger(PreambleHandler.class, Subsystem.NET);
    /** The least time between two refusals logged at WARNING by accepting sides (of this JVM). */
    static final long WARNING_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);
    /** When an accepting side may next log a refusal at WARNING ({@link System#nanoTime()}). */
    private static final AtomicLong NEXT_WARNING = new AtomicLong(System.nanoTime());
    /** Refusals of accepting sides logged at DEBUG since the last WARNING. */
    private static final AtomicLong QUIET_REFUSALS = new AtomicLong();

    /** The accepting side's decision on a dialler's well-formed preamble. */
    public interface Acceptor {
        /**
         * Emits the answer to {@code dialler}'s preamble: this side's preamble, or why the
         * connection is refused. May emit later, for example once the job session is known;
         * the connection reads nothing meanwhile (an error or an empty Mono refuses it). Nothing of the
         * connection may be trusted yet: the dialler has not proven that it knows the secret.
         */
        Mono<Answer> answer(ChannelHandlerContext ctx, Preamble dialler);
    }

    /**
     * What an {@link Acceptor} decided: either {@code reply} (this side's preamble) and what to do
     * once the dialler has proven the secret ({@code proven}, which adds the handlers that read the
     * frames), or {@code refusal}.
     */
    public record Answer(@Nullable Preamble reply, @Nullable Proven proven, @Nullable String refusal) {
        /** Answer with {@code reply}; run {@code proven} once the dialler has proven the secret. */
        public static Answer accept(Preamble reply, Proven proven) {
            return new Answer(reply, proven, null);
        }

        /** Refuse the connection, for {@code why}. */
        public static Answer refuse(String why) {
            return new Answer(null, null, why);
        }
    }

    /** What to do once the other side has proven the secret. */
    public interface Proven {
        /**
         * Called on the event loop with the other side's preamble, after both proofs; returns why
         * the connection is refused after all, or null after taking it (then it has added the
         * handlers that read the frames, and may write frames).
         */
        @Nullable String proven(ChannelHandlerContext ctx, Preamble other);
    }

    private enum State { EXPECT_PREAMBLE, ANSWERING, EXPECT_PROOF, DONE }

    /** An acceptor's answer that came during the call ({@code now}), or whether it comes later. */
    private static final class Pending {
        @Nullable Answer now;
        boolean later;
    }

    private final byte[] secret;
    private final long handshakeTimeoutNanos;
    private final String where;
    private final @Nullable Acceptor acceptor;
    /** The dialler's own preamble; null on the accepting side. */
    private final @Nullable Preamble mine;
    private final @Nullable Proven dialled;
    /** Empty once the handshake succeeded, else why it failed; emitted on the event loop only. */
    private final Sinks.One<String> outcome = Sinks.one();
    private @Nullable ScheduledFuture<?> deadline;
    private State state = State.EXPECT_PREAMBLE;
    /** Accepting side: the dialler's preamble, this side's answer. */
    private @Nullable Preamble theirs;
    private @Nullable Preamble ours;
    private @Nullable Proven onProven;
    /** Dialling side: whether {@link #mine} was sent. */
    private boolean sent;

    private PreambleHandler(byte[] secret, long handshakeTimeoutNanos, String where, @Nullable Acceptor acceptor,
                            @Nullable Preamble mine, @Nullable Proven dialled) {
        this.secret = secret;
        this.handshakeTimeoutNanos = handshakeTimeoutNanos;
        this.where = where;
        this.acceptor = acceptor;
        this.mine = mine;
        this.dialled = dialled;
    }

    /**
     * The accepting side's handler: expects a preamble, answers it as {@code acceptor} decides, and
     * expects the dialler's proof of {@code secret}, all within {@code handshakeTimeoutNanos};
     * {@code where} names the connection in log lines.
     */
    public static PreambleHandler accepting(byte[] secret, long handshakeTimeoutNanos, String where,
                                            Acceptor acceptor) {
        return new PreambleHandler(secret, handshakeTimeoutNanos, where, Objects.requireNonNull(acceptor), null, null);
    }

    /**
     * The connecting side's handler: sends {@code mine} once connected, expects the acceptor's
     * preamble with its proof of {@code secret}, sends its own proof and hands the acceptor's
     * preamble to {@code proven}, all within {@code handshakeTimeoutNanos}.
     */
    public static PreambleHandler dialling(byte[] secret, long handshakeTimeoutNanos, String where, Preamble mine,
                                           Proven proven) {
        return new PreambleHandler(secret, handshakeTimeoutNanos, where, null, Objects.requireNonNull(mine),
                Objects.requireNonNull(proven));
    }

    /**
     * Completes empty once the handshake succeeded (the handler is gone then), or emits why it
     * failed (the connection is closed then). Signals on the event loop.
     */
    public Mono<String> refusal() {
        return outcome.asMono();
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        deadline = ctx.executor().schedule(() -> {
            if (state != State.DONE) {
                refuse(ctx, "no complete handshake within "
                        + TimeUnit.NANOSECONDS.toMillis(handshakeTimeoutNanos) + " ms", ctx.channel().isActive());
            }
        }, handshakeTimeoutNanos, TimeUnit.NANOSECONDS);
        if (mine != null && ctx.channel().isActive()) {
            sendMine(ctx);
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        if (mine != null) {
            sendMine(ctx);
        }
        super.channelActive(ctx);
    }

    private void sendMine(ChannelHandlerContext ctx) {
        if (sent) {
            return;
        }
        sent = true;
        ByteBuf out = ctx.alloc().buffer(Preamble.BYTES);
        Objects.requireNonNull(mine).writeTo(out);
        ctx.writeAndFlush(out);
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        cancelDeadline();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (state != State.DONE) {
            state = State.DONE;
            cancelDeadline();
            LOG.log(Level.DEBUG, "{0}: {1} closed the connection during the handshake", where,
                    ctx.channel().remoteAddress());
            outcome.tryEmitValue("the other side closed the connection during the handshake");
        }
        super.channelInactive(ctx);
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (state == State.DONE) {
            in.skipBytes(in.readableBytes());   // refused: what a read still brought is dropped
            return;
        }
        step(ctx, in);
    }

    private void step(ChannelHandlerContext ctx, ByteBuf in) {
        if (mine != null) {
            stepDialling(ctx, in);
        } else {
            stepAccepting(ctx, in);
        }
    }

    private void stepDialling(ChannelHandlerContext ctx, ByteBuf in) {
        if (state != State.EXPECT_PREAMBLE || in.readableBytes() < Preamble.BYTES + Preamble.PROOF_BYTES) {
            return;
        }
        Preamble[] read = new Preamble[1];
        @Nullable String why = Preamble.read(in, read);
        if (why != null) {
            refuse(ctx, why, true);
            return;
        }
        Preamble acceptorPreamble = read[0];
        Preamble me = Objects.requireNonNull(mine);
        byte[] proof = new byte[Preamble.PROOF_BYTES];
        in.readBytes(proof);
        if (!Proofs.matches(Preamble.acceptProof(secret, me, acceptorPreamble), proof)) {
            refuse(ctx, "the accepting side's proof of the job secret is wrong (a different job, or an impostor)",
                    true);
            return;
        }
        ByteBuf answer = ctx.alloc().buffer(Preamble.PROOF_BYTES);
        answer.writeBytes(Preamble.dialProof(secret, me, acceptorPreamble));
        ctx.writeAndFlush(answer);
        finish(ctx, in, Objects.requireNonNull(dialled).proven(ctx, acceptorPreamble));
    }

    private void stepAccepting(ChannelHandlerContext ctx, ByteBuf in) {
        if (state == State.EXPECT_PREAMBLE && in.readableBytes() >= Preamble.BYTES) {
            Preamble[] read = new Preamble[1];
            @Nullable String why = Preamble.read(in, read);
            if (why != null) {
                refuse(ctx, why, true);
                return;
            }
            theirs = read[0];
            state = State.ANSWERING;
            Mono<Answer> answer;
            try {
                answer = Objects.requireNonNull(acceptor).answer(ctx, read[0]);
            } catch (RuntimeException e) {
                answer = Mono.error(e);
            }
            // An answer that is there at once is used at once, on the bytes at hand; a later one
            // resumes reading from the event loop.
            Pending pending = new Pending();
            answer.defaultIfEmpty(Answer.refuse("acceptor failed"))
                    .onErrorResume(error -> Mono.just(Answer.refuse(error.toString())))
                    .subscribe(a -> {
                        synchronized (pending) {
                            if (!pending.later) {
                                pending.now = a;
                                return;
                            }
                        }
                        ctx.executor().execute(() -> {
                            if (state != State.ANSWERING) {
                                return;   // timed out or closed meanwhile
                            }
                            ctx.channel().config().setAutoRead(true);
                            answered(ctx, internalBuffer(), a);
                        });
                    });
            Answer now;
            synchronized (pending) {
                now = pending.now;
                pending.later = now == null;
            }
            if (now != null) {
                answered(ctx, in, now);
                return;
            }
            ctx.channel().config().setAutoRead(false);
            return;
        }
        if (state == State.EXPECT_PROOF && in.readableBytes() >= Preamble.PROOF_BYTES) {
            byte[] proof = new byte[Preamble.PROOF_BYTES];
            in.readBytes(proof);
            Preamble dialler = Objects.requireNonNull(theirs);
            if (!Proofs.matches(Preamble.dialProof(secret, dialler, Objects.requireNonNull(ours)), proof)) {
                refuse(ctx, "the connecting side's proof of the job secret is wrong (a different job, a stray "
                        + "connection, or a replay)", true);
                return;
            }
            finish(ctx, in, Objects.requireNonNull(onProven).proven(ctx, dialler));
        }
    }

    private void answered(ChannelHandlerContext ctx, ByteBuf in, @Nullable Answer answer) {
        if (answer == null || answer.refusal() != null || answer.reply() == null || answer.proven() == null) {
            refuse(ctx, answer == null || answer.refusal() == null ? "acceptor failed" : answer.refusal(), true);
            return;
        }
        Preamble reply = answer.reply();
        ours = reply;
        onProven = answer.proven();
        state = State.EXPECT_PROOF;
        ByteBuf out = ctx.alloc().buffer(Preamble.BYTES + Preamble.PROOF_BYTES);
        reply.writeTo(out);
        out.writeBytes(Preamble.acceptProof(secret, Objects.requireNonNull(theirs), reply));
        ctx.writeAndFlush(out);
        stepAccepting(ctx, in);
    }

    private void finish(ChannelHandlerContext ctx, ByteBuf in, @Nullable String why) {
        if (why != null) {
            refuse(ctx, why, true);
            return;
        }
        state = State.DONE;
        cancelDeadline();
        outcome.tryEmitEmpty();
        if (!ctx.isRemoved()) {
            ctx.pipeline().remove(this);
        }
    }

    private void refuse(ChannelHandlerContext ctx, String why, boolean log) {
        if (state == State.DONE) {
            return;
        }
        state = State.DONE;
        if (log) {
            logRefusal(ctx, why);
        }
        ctx.channel().config().setAutoRead(false);
        ByteBuf left = internalBuffer();
        left.skipBytes(left.readableBytes());
        cancelDeadline();
        outcome.tryEmitValue(why);
        ctx.close();
    }

    private void logRefusal(ChannelHandlerContext ctx, String why) {
        // the dialling side's caller reports its failure itself, retrying a root maybe
        if (mine == null) {
            long now = System.nanoTime();
            long next = NEXT_WARNING.get();
            if (now - next >= 0 && NEXT_WARNING.compareAndSet(next, now + WARNING_INTERVAL_NANOS)) {
                long quiet = QUIET_REFUSALS.getAndSet(0);
                LOG.log(Level.WARNING, "{0}: dropping connection {1}: {2}{3}", where, ctx.channel().remoteAddress(), why,
                        quiet == 0 ? "" : " (" + quiet + " more connection(s) dropped since the last warning, logged at"
                                + " DEBUG)");
                return;
            }
            QUIET_REFUSALS.incrementAndGet();
        }
        LOG.log(Level.DEBUG, "{0}: dropping connection {1}: {2}", where, ctx.channel().remoteAddress(), why);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (state == State.DONE) {
            ctx.fireExceptionCaught(cause);
            return;
        }
        refuse(ctx, "socket error during the handshake: " + cause, true);
    }

    private void cancelDeadline() {
        if (deadline != null) {
            deadline.cancel(false);
            deadline = null;
        }
    }
}
