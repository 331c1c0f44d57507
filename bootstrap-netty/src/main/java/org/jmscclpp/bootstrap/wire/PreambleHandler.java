package org.jmscclpp.bootstrap.wire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.concurrent.ScheduledFuture;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * First handler of every bootstrap connection: waits for the peer's {@link Preamble}, checks it,
 * then removes itself so the bytes that follow reach the frame decoder. A connection that sends a
 * wrong preamble, or nothing within the handshake deadline, is closed with one log line; nothing
 * else in the job notices.
 */
public final class PreambleHandler extends ByteToMessageDecoder {

    private static final System.Logger LOG = System.getLogger(PreambleHandler.class.getName());

    /** Decides what to do with a well-formed preamble. */
    public interface Acceptor {
        /**
         * Completes with why the preamble is refused, or with null after taking the connection (then
         * the acceptor has added the handlers that read the frames). May complete later, for example
         * once the job session is known; the connection reads nothing meanwhile.
         */
        CompletableFuture<@Nullable String> accept(ChannelHandlerContext ctx, Preamble preamble);
    }

    private final byte[] secret;
    private final long handshakeTimeoutNanos;
    private final String where;
    private final Acceptor acceptor;
    private @Nullable ScheduledFuture<?> deadline;
    private boolean decided;

    /**
     * A handler that expects a preamble with {@code secret} within {@code handshakeTimeoutNanos} and
     * hands acceptable ones to {@code acceptor}; {@code where} names the connection in log lines.
     */
    public PreambleHandler(byte[] secret, long handshakeTimeoutNanos, String where, Acceptor acceptor) {
        this.secret = secret;
        this.handshakeTimeoutNanos = handshakeTimeoutNanos;
        this.where = where;
        this.acceptor = acceptor;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        deadline = ctx.executor().schedule(() -> {
            if (ctx.channel().isActive()) {
                LOG.log(Level.WARNING, "{0}: dropping {1}: no preamble within {2} ms", where,
                        ctx.channel().remoteAddress(), TimeUnit.NANOSECONDS.toMillis(handshakeTimeoutNanos));
                ctx.close();
            }
        }, handshakeTimeoutNanos, TimeUnit.NANOSECONDS);
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        cancelDeadline();
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (decided || in.readableBytes() < Preamble.BYTES) {
            return;
        }
        decided = true;
        Preamble[] accepted = new Preamble[1];
        @Nullable String why = Preamble.read(in, secret, accepted);
        if (why != null) {
            refuse(ctx, in, why);
            return;
        }
        CompletableFuture<@Nullable String> verdict = acceptor.accept(ctx, accepted[0]);
        if (verdict.isDone()) {
            conclude(ctx, in, verdict.getNow("acceptor failed"));
            return;
        }
        ctx.channel().config().setAutoRead(false);
        verdict.whenComplete((reason, error) -> ctx.executor().execute(() -> {
            ctx.channel().config().setAutoRead(true);
            conclude(ctx, internalBuffer(), error != null ? error.toString() : reason);
        }));
    }

    private void conclude(ChannelHandlerContext ctx, ByteBuf in, @Nullable String why) {
        if (why != null) {
            refuse(ctx, in, why);
            return;
        }
        cancelDeadline();
        if (!ctx.isRemoved()) {
            ctx.pipeline().remove(this);
        }
    }

    private void refuse(ChannelHandlerContext ctx, ByteBuf in, String why) {
        LOG.log(Level.WARNING, "{0}: dropping connection from {1}: {2}", where, ctx.channel().remoteAddress(), why);
        in.skipBytes(in.readableBytes());
        cancelDeadline();
        ctx.close();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.log(Level.WARNING, "{0}: closing {1} during handshake: {2}", where, ctx.channel().remoteAddress(),
                cause.toString());
        ctx.close();
    }

    private void cancelDeadline() {
        if (deadline != null) {
            deadline.cancel(false);
            deadline = null;
        }
    }
}
