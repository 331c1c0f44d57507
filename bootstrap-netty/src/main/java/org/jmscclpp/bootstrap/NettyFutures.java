package org.jmscclpp.bootstrap;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.util.concurrent.Future;
import java.util.concurrent.CancellationException;
import reactor.core.publisher.Mono;

/**
 * The one place where Netty's futures become Reactor: the bootstrap's own asynchronous work is
 * {@link Mono}s, sinks and Reactor timers, and a Netty operation (bind, connect, write, close) joins
 * it through {@link #toMono}. The Mono signals on the thread that completes the future (the
 * channel's event loop), as a listener would.
 */
final class NettyFutures {

    private NettyFutures() {
    }

    /** The channel once {@code future} succeeds; its cause (or a cancellation) when it fails. */
    static Mono<Channel> toMono(ChannelFuture future) {
        return Mono.create(sink -> future.addListener((ChannelFuture f) -> {
            if (f.isSuccess()) {
                sink.success(f.channel());
            } else {
                sink.error(causeOf(f));
            }
        }));
    }

    /** Completes empty once {@code future} succeeds; errors with its cause (or a cancellation) when it fails. */
    static Mono<Void> toMono(Future<?> future) {
        return Mono.create(sink -> future.addListener(f -> {
            if (f.isSuccess()) {
                sink.success();
            } else {
                sink.error(causeOf(f));
            }
        }));
    }

    /**
     * A failed connect in words. Netty's message is the JDK exception's followed by the address, and the JDK gives
     * some no message (an unreachable host's {@code NoRouteToHostException}): "null: /10.0.0.5:5000" reads
     * "NoRouteToHostException: /10.0.0.5:5000" here.
     */
    static String connectFailure(Throwable error) {
        String message = error.getMessage();
        Throwable cause = error.getCause();
        if (message == null) {
            return error.getClass().getSimpleName();
        }
        if (cause != null && cause.getMessage() == null && message.startsWith("null")) {
            return cause.getClass().getSimpleName() + message.substring("null".length());
        }
        return message;
    }

    private static Throwable causeOf(Future<?> f) {
        Throwable cause = f.cause();
        return cause != null ? cause : new CancellationException("the Netty operation was cancelled");
    }
}
