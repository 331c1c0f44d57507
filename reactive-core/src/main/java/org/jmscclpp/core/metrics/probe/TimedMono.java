package org.jmscclpp.core.metrics.probe;

import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * A {@code Mono<Void>} that times its source from subscription to its end and reports to a
 * {@link Timing}: two objects per subscription (this Mono and its subscriber), unlike a chain of
 * {@code defer} and {@code doOn…} operators. Signals pass through unchanged.
 */
final class TimedMono extends Mono<Void> {

    /** What is told of the timed subscription. */
    interface Timing {
        /** At subscription: returns what {@link #end} gets back (a JFR event begun, or null). */
        @Nullable Object start();

        /** At completion ({@code error} null) or error; not at cancellation. */
        void end(@Nullable Object started, long nanos, @Nullable Throwable error);
    }

    private final Mono<Void> source;
    private final Timing timing;

    TimedMono(Mono<Void> source, Timing timing) {
        this.source = source;
        this.timing = timing;
    }

    @Override
    public void subscribe(CoreSubscriber<? super Void> actual) {
        source.subscribe(new Timer(actual, timing));
    }

    private static final class Timer implements CoreSubscriber<Void>, Subscription {
        private final CoreSubscriber<? super Void> actual;
        private final Timing timing;
        private final @Nullable Object started;
        private final long start;
        private @Nullable Subscription upstream;

        Timer(CoreSubscriber<? super Void> actual, Timing timing) {
            this.actual = actual;
            this.timing = timing;
            this.started = timing.start();
            this.start = System.nanoTime();
        }

        @Override
        public Context currentContext() {
            return actual.currentContext();
        }

        @Override
        public void onSubscribe(Subscription s) {
            upstream = s;
            actual.onSubscribe(this);
        }

        @Override
        public void onNext(Void v) {
            actual.onNext(v);
        }

        @Override
        public void onError(Throwable e) {
            try {
                timing.end(started, System.nanoTime() - start, e);
            } finally {
                actual.onError(e);
            }
        }

        @Override
        public void onComplete() {
            try {
                timing.end(started, System.nanoTime() - start, null);
            } finally {
                actual.onComplete();
            }
        }

        @Override
        public void request(long n) {
            Subscription s = upstream;
            if (s != null) {
                s.request(n);
            }
        }

        @Override
        public void cancel() {
            Subscription s = upstream;
            if (s != null) {
                s.cancel();
            }
        }
    }
}
