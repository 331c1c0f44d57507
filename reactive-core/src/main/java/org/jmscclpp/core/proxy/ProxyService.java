package org.jmscclpp.core.proxy;

import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jmscclpp.core.AbortSignal;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.MemoryId;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.channel.PortChannel;
import org.jmscclpp.core.log.Log;
import org.jmscclpp.core.log.Subsystem;
import org.jmscclpp.core.metrics.probe.Probes;
import org.jmscclpp.core.metrics.probe.ProxyProbe;
import org.jmscclpp.core.semaphore.Host2DeviceSemaphore;
import org.jmscclpp.core.semaphore.SemaphoreId;
import org.jmscclpp.core.spi.Waiting;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.util.concurrent.Queues;

/**
 * A proxy that moves data for producers that cannot (GPU kernels, or Java threads standing in for
 * them): MSCCL++'s {@code ProxyService}. Producers push {@link ProxyTrigger}s into the service's
 * {@link Fifo}, usually through a {@link PortChannel}; one polling loop takes them in fifo order
 * and, for the semaphore a trigger names,
 * <ul>
 *   <li>DATA: writes {@code size} bytes from the source to the destination memory with the
 *       semaphore's connection ({@link Connection#write});</li>
 *   <li>FLAG: raises the peer's inbound token ({@link Host2DeviceSemaphore#signal()}), after the
 *       trigger's data;</li>
 *   <li>SYNC: flushes the connection ({@link Connection#flush}), asynchronously: the loop goes on
 *       with other triggers while a connection flushes, flushes of one connection run one at a
 *       time in fifo order, and a slow connection never holds back another. When the flush of the
 *       SYNC at fifo position {@code p} completes, the loop stores {@code p + 1} into that
 *       semaphore's <em>flushed-position word</em> (release, never lowered) and emits a
 *       {@link FlushCompletion} on {@link #flushes()}.</li>
 * </ul>
 *
 * <h2>Flushed-position words</h2>
 * One 64-bit word per semaphore id, at {@code 8 * id} of a host-visible buffer of the backend:
 * one more than the fifo position of the latest completed SYNC of that semaphore, 0 before the
 * first (the {@code +1} keeps a SYNC at position 0 apart from "none yet", as MSCCL++ stores
 * {@code pos + 1}). A producer that pushed a SYNC at {@code p} waits until its word is above
 * {@code p}; {@link PortChannel#flush} does, and device code gets the word's address in the
 * channel's device handle.
 *
 * <h2>Lifecycle</h2>
 * Add semaphores and memories (before or after {@link #start()}), make channels, then
 * {@link #start()}: the loop runs on a virtual thread ({@link Poller#VIRTUAL_THREAD}, the default)
 * or on a daemon platform thread named {@code jmscclpp-proxy-N} ({@link Poller#PLATFORM_THREAD}).
 * {@link #stop(Duration)} stops taking triggers, lets the flushes in flight finish and completes
 * the flush Flux; {@link #close()} also frees the fifo and the flushed-position words. A stopped
 * service does not start again. Once the loop stops (or fails), producers waiting in a push, a
 * sync or a channel's flush or wait get {@link ErrorCode#ABORTED} (stopped) or
 * {@link ErrorCode#REMOTE_ERROR} (failed) instead of waiting for their deadline: the loop writes
 * its state into the fifo's memory ({@link Fifo}).
 *
 * <h2>Errors</h2>
 * A trigger that cannot be handled (an unknown semaphore or memory id, a range outside a memory,
 * a closed connection, a trigger without a type) or a flush that fails ends the loop: the flush
 * Flux errors with a {@link JmscclppException} naming the trigger and its fifo position, with the
 * cause's code ({@link ErrorCode#INVALID_USAGE} for a bad trigger) and the cause attached.
 *
 * <p>Registration and lifecycle methods are thread-safe.
 */
public final class ProxyService implements AutoCloseable {

    private static final System.Logger LOG = Log.logger(ProxyService.class, Subsystem.INIT);

    /** The thread the polling loop runs on. */
    public enum Poller {
        /** A virtual thread: the loop spins briefly, then parks, so it shares carriers fairly. */
        VIRTUAL_THREAD,
        /** A dedicated daemon platform thread named {@code jmscclpp-proxy-N}, with the same spin-then-park loop. */
        PLATFORM_THREAD
    }

    /** Completions buffered for a subscriber that has not requested them, by default. */
    public static final int DEFAULT_FLUSH_BUFFER = 256;
    /** Largest {@link Builder#flushBuffer}. */
    public static final int MAX_FLUSH_BUFFER = 1 << 16;
    /** How long {@link #close()} and a cancelled flush Flux let flushes in flight finish. */
    public static final Duration DEFAULT_STOP_TIMEOUT = Duration.ofSeconds(5);

    private static final AtomicInteger THREADS = new AtomicInteger();

    private final Fifo fifo;
    private final DeviceBuffer flushedWords;
    private final MemorySegment flushedSegment;
    private final Poller poller;
    private final AtomicReferenceArray<@Nullable RegisteredMemory> memories =
            new AtomicReferenceArray<>(ProxyTrigger.MAX_MEMORY_ID + 1);
    private final AtomicReferenceArray<@Nullable Entry> semaphores =
            new AtomicReferenceArray<>(ProxyTrigger.MAX_SEMAPHORE_ID + 1);
    private final Map<Connection, FlushLane> lanes = new IdentityHashMap<>();
    /** The abort signals of the communicators whose semaphores were added: raising one fails the loop. */
    private final Map<AbortSignal, Disposable> abortWatches = new IdentityHashMap<>();
    private final Object lock = new Object();
    private final ProxyLoop loop;
    private final Flux<FlushCompletion> flushes;
    private final AtomicBoolean freed = new AtomicBoolean();
    private int memoryCount;
    private int semaphoreCount;
    private @Nullable Thread thread;
    /** The service's name, and its loop thread's. */
    private final String name;
    /** The service's measurements, from construction to {@link #free}; null with metrics off. */
    private final @Nullable ProxyProbe probe;
    private boolean stopped;
    private boolean closed;

    /** A semaphore the loop serves: its connection and that connection's flush lane. */
    public record Entry(SemaphoreId id, Host2DeviceSemaphore semaphore, Connection connection, FlushLane lane) {
    }

    private ProxyService(Builder b) {
        Fifo f = Fifo.create(b.backend, b.fifoCapacity);
        DeviceBuffer words;
        try {
            words = b.backend.allocateHostVisible((long) Long.BYTES * (ProxyTrigger.MAX_SEMAPHORE_ID + 1));
            try {
                this.flushedSegment = words.hostSegment();
            } catch (RuntimeException e) {
                words.close();
                throw e;
            }
        } catch (RuntimeException e) {
            f.close();
            throw e;
        }
        this.fifo = f;
        this.flushedWords = words;
        this.poller = b.poller;
        Sinks.Many<FlushCompletion> sink = Sinks.many().unicast()
                .onBackpressureBuffer(Queues.<FlushCompletion>get(b.flushBuffer).get());
        this.loop = new ProxyLoop(fifo, flushedSegment, memories, semaphores, sink, b.flushBuffer, b.flushTimeout,
                b.idleSpin.toNanos(), this::loopEnded);
        Flux<FlushCompletion> delivered = sink.asFlux()
                .doOnNext(c -> loop.delivered())
                .doOnCancel(() -> requestStop(DEFAULT_STOP_TIMEOUT));
        // the sink takes one subscriber for good: another gets a typed error, not the sink's IllegalStateException
        AtomicBoolean subscribed = new AtomicBoolean();
        this.flushes = Flux.defer(() -> subscribed.compareAndSet(false, true) ? delivered
                : Flux.error(invalid("flushes", "the flush Flux takes one subscriber, and it has one already (or had"
                        + " one, whose cancel stopped the service)")));
        this.name = "jmscclpp-proxy-" + THREADS.getAndIncrement();
        this.probe = Probes.proxyAdded(name, f.capacity(), f::occupancy);
        loop.meter(probe);
    }

    /** A builder for a service whose fifo and flushed-position words are memory of {@code backend}. */
    public static Builder builder(Backend backend) {
        return new Builder(backend);
    }

    // ------------------------------------------------------------------------------------------
    // registration

    /**
     * Builds a {@link Host2DeviceSemaphore} over {@code connection} with its peer (which must build
     * its end too: {@link Communicator#buildSemaphore}) and adds it. The semaphore belongs to the
     * communicator, which closes it. Emits the id on the communicator's thread; errors as
     * {@link Communicator#buildSemaphore} does, or as {@link #addSemaphore}.
     */
    public Mono<SemaphoreId> buildAndAddSemaphore(Communicator communicator, Connection connection) {
        return Host2DeviceSemaphore.build(communicator, connection).map(this::addSemaphore);
    }

    /**
     * Adds a semaphore (the caller keeps owning it) and returns its id: 0 for the first, then 1,
     * 2, … Triggers naming the id signal it and use its connection.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when 1024 semaphores were added
     *                           already (the trigger's field has 10 bits) or the service is closed
     */
    public SemaphoreId addSemaphore(Host2DeviceSemaphore semaphore) {
        Objects.requireNonNull(semaphore, "semaphore");
        synchronized (lock) {
            checkOpen("addSemaphore");
            if (semaphoreCount > ProxyTrigger.MAX_SEMAPHORE_ID) {
                throw invalid("addSemaphore", "a proxy service holds at most " + (ProxyTrigger.MAX_SEMAPHORE_ID + 1)
                        + " semaphores (a trigger's semaphoreId has 10 bits)");
            }
            Connection connection = semaphore.semaphore().connection();
            AbortSignal signal = semaphore.semaphore().abortSignal();
            if (signal != AbortSignal.NEVER && !abortWatches.containsKey(signal)) {
                abortWatches.put(signal, signal.onRaise(loop::abort));
            }
            FlushLane lane = lanes.computeIfAbsent(connection, FlushLane::new);
            SemaphoreId id = new SemaphoreId(semaphoreCount++);
            semaphores.set(id.value(), new Entry(id, semaphore, connection, lane));
            return id;
        }
    }

    /**
     * Adds a memory that triggers name as source or destination (the caller keeps owning it) and
     * returns its id: 0 for the first, then 1, 2, …
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when 512 memories were added
     *                           already (the trigger's fields have 9 bits) or the service is closed
     */
    public MemoryId addMemory(RegisteredMemory memory) {
        Objects.requireNonNull(memory, "memory");
        synchronized (lock) {
            checkOpen("addMemory");
            if (memoryCount > ProxyTrigger.MAX_MEMORY_ID) {
                throw invalid("addMemory", "a proxy service holds at most " + (ProxyTrigger.MAX_MEMORY_ID + 1)
                        + " memories (a trigger's memory ids have 9 bits)");
            }
            MemoryId id = new MemoryId(memoryCount++);
            memories.set(id.value(), memory);
            return id;
        }
    }

    /** The semaphore added as {@code id}. */
    public Host2DeviceSemaphore semaphore(SemaphoreId id) {
        return entry(id, "semaphore").semaphore();
    }

    /**
     * A channel that pushes triggers for semaphore {@code semaphore}, moving data from
     * {@code src} (memory of this rank) to {@code dst} (the peer's).
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when an id was not issued by this
     *                           service, or the service is closed
     */
    public PortChannel portChannel(SemaphoreId semaphore, MemoryId dst, MemoryId src) {
        synchronized (lock) {
            checkOpen("portChannel");
            Entry entry = entry(semaphore, "portChannel");
            return new PortChannel(this, entry, memory(dst, "portChannel"), dst, memory(src, "portChannel"), src,
                    fifo.producer());
        }
    }

    /**
     * A producer for this service's fifo, for custom triggers (the fifo's consumer side belongs to
     * the loop).
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the service is closed
     */
    public FifoProducer producer() {
        synchronized (lock) {
            checkOpen("producer");
            return fifo.producer();
        }
    }

    /** Triggers the fifo holds. */
    public int fifoCapacity() {
        return fifo.capacity();
    }

    /**
     * The memory of the service's fifo, laid out as {@link Fifo} says: what a producer in another
     * process of this host pushes into. Register it for an IPC transport, send it to that process,
     * and there call {@link Fifo#producer(DeviceBuffer, int)} on the mapping with
     * {@link #fifoCapacity()}. The service owns the buffer and frees it on {@link #close()};
     * the loop marks the fifo stopped before, so pushes through a mapping then end with
     * {@link ErrorCode#ABORTED}.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} when the service is closed
     */
    public DeviceBuffer fifoBuffer() {
        synchronized (lock) {
            checkOpen("fifoBuffer");
            return fifo.buffer();
        }
    }

    // ------------------------------------------------------------------------------------------
    // lifecycle

    /**
     * Starts the polling loop on a new thread of the configured {@link Poller} and returns. A
     * second call while it runs does nothing.
     *
     * @throws JmscclppException {@link ErrorCode#INVALID_USAGE} after {@link #stop}, a cancelled
     *                           flush Flux or {@link #close()}: a stopped service does not restart
     */
    public void start() {
        synchronized (lock) {
            if (closed || stopped) {
                throw invalid("start", "the proxy service was stopped" + (closed ? " and closed" : "")
                        + "; a stopped service does not start again");
            }
            if (thread != null) {
                return;
            }
            Thread t = poller == Poller.VIRTUAL_THREAD ? Thread.ofVirtual().name(name).unstarted(loop)
                    : Thread.ofPlatform().name(name).daemon(true).unstarted(loop);
            loop.bind(t);
            thread = t;
            t.start();
            LOG.log(Level.INFO, "proxy {0} started: {1} poller, fifo of {2} triggers, {3} semaphores", name, poller,
                    fifo.capacity(), semaphoreCount);
        }
    }

    /** {@link #stop(Duration)} with {@link #DEFAULT_STOP_TIMEOUT}. */
    public Mono<Void> stop() {
        return stop(DEFAULT_STOP_TIMEOUT);
    }

    /**
     * When subscribed: makes the loop stop taking triggers, waits up to {@code timeout} for the
     * flushes in flight (their completions are still published and emitted), then marks the fifo
     * stopped (producers get {@link ErrorCode#ABORTED}) and completes the flush Flux. The Mono
     * completes when the loop has ended, on the loop's thread (at once for a service never
     * started or already ended). When flushes are still in flight at the deadline they are
     * cancelled, and both the Mono and the flush Flux error with {@link ErrorCode#TIMEOUT} naming
     * them. Stopping a service whose loop failed completes.
     */
    public Mono<Void> stop(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return Mono.defer(() -> {
            requestStop(timeout);
            return loop.terminated();
        });
    }

    /**
     * The completed flushes, in fifo order for each connection (completions of different
     * connections interleave as their flushes finish). Emitted on the loop's thread: move heavy
     * work elsewhere with {@code publishOn}, and never block the loop waiting for the service
     * itself (a {@link #stop} or {@link #close()} called there returns without waiting).
     *
     * <p>One subscriber (another, while it is subscribed or after it, errors with
     * {@link ErrorCode#INVALID_USAGE}), and only while it is subscribed are completions kept: SYNCs the
     * loop takes while nobody is subscribed complete (flushed words are written) but emit nothing,
     * so subscribe before {@link #start()} to see them all. With a subscriber, at most
     * {@link Builder#flushBuffer} completions wait for its requests; then the loop stops taking
     * SYNC triggers until it requests more, so the fifo fills and producers wait: nothing is
     * dropped. Completes after {@link #stop}; errors when a trigger or a flush fails (see the class
     * comment) or when stop ran out of time. Cancelling stops the service, as
     * {@code stop(DEFAULT_STOP_TIMEOUT)}.
     */
    public Flux<FlushCompletion> flushes() {
        return flushes;
    }

    /**
     * Stops the loop ({@link #stop(Duration)} with {@link #DEFAULT_STOP_TIMEOUT}), waits for its
     * thread to end, and frees the fifo and the flushed-position words. Called on the loop's own
     * thread (from a flush subscriber) it does not wait: the loop frees them as it ends.
     * Idempotent.
     */
    @Override
    public void close() {
        Thread t;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            t = thread;
            abortWatches.values().forEach(Disposable::dispose);
            abortWatches.clear();
        }
        requestStop(DEFAULT_STOP_TIMEOUT);
        if (t == Thread.currentThread()) {
            return;
        }
        if (t != null) {
            boolean interrupted = false;
            long deadline = System.nanoTime() + DEFAULT_STOP_TIMEOUT.toNanos() + 1_000_000_000L;
            while (t.isAlive()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                try {
                    t.join(Duration.ofNanos(left));
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        free();
    }

    // ------------------------------------------------------------------------------------------
    // machinery

    private void requestStop(Duration timeout) {
        Thread t;
        synchronized (lock) {
            stopped = true;
            t = thread;
        }
        if (t == null) {
            loop.endUnstarted();
        } else {
            loop.requestStop(Waiting.deadline(timeout));
        }
    }

    /** Runs on the loop's thread as it ends: frees the memory if the service was closed meanwhile. */
    private void loopEnded() {
        boolean free;
        Thread t;
        synchronized (lock) {
            free = closed;
            t = thread;
        }
        if (t != null) {
            LOG.log(Level.INFO, "proxy {0} stopped", t.getName());
        }
        if (free) {
            free();
        }
    }

    private void free() {
        if (freed.compareAndSet(false, true)) {
            if (probe != null) {
                Probes.proxyRemoved(probe);
            }
            try {
                fifo.close();
            } finally {
                flushedWords.close();
            }
        }
    }

    private Entry entry(SemaphoreId id, String phase) {
        Entry e = semaphores.get(id.value());
        if (e == null) {
            throw invalid(phase, "semaphore " + id.value() + " was not added to this proxy service");
        }
        return e;
    }

    private RegisteredMemory memory(MemoryId id, String phase) {
        RegisteredMemory m = memories.get(id.value());
        if (m == null) {
            throw invalid(phase, "memory " + id.value() + " was not added to this proxy service");
        }
        return m;
    }

    private void checkOpen(String phase) {
        if (closed) {
            throw invalid(phase, "the proxy service is closed");
        }
    }

    private static JmscclppException invalid(String phase, String detail) {
        return JmscclppException.builder(ErrorCode.INVALID_USAGE, detail).phase("proxy service " + phase).build();
    }

    public Fifo fifo() {
        return fifo;
    }

    public DeviceBuffer flushedWords() {
        return flushedWords;
    }

    public MemorySegment flushedSegment() {
        return flushedSegment;
    }

    /** The error that ended the loop, or null. */
    public @Nullable JmscclppException failure() {
        return loop.failure();
    }

    /** The service's name ({@code jmscclpp-proxy-N}): its loop thread's, and its metrics' {@code proxy} tag. */
    public String name() {
        return name;
    }

    /** The loop's thread once started, else null. */
    @Nullable Thread thread() {
        synchronized (lock) {
            return thread;
        }
    }

    @Override
    public String toString() {
        return "ProxyService[" + name + ", " + poller + ", " + fifo + "]";
    }

    /** Options of a {@link ProxyService}; {@link #build()} allocates its memory. */
    public static final class Builder {
        private final Backend backend;
        private int fifoCapacity = Fifo.DEFAULT_CAPACITY;
        private int flushBuffer = DEFAULT_FLUSH_BUFFER;
        private Poller poller = Poller.VIRTUAL_THREAD;
        private Duration flushTimeout = Bootstrap.DEFAULT_TIMEOUT;
        private Duration idleSpin = Duration.ofNanos(Waiting.SPIN_NANOS);

        private Builder(Backend backend) {
            this.backend = Objects.requireNonNull(backend, "backend");
        }

        /** Triggers the fifo holds: a power of two from 1 to 2^26; {@value Fifo#DEFAULT_CAPACITY} by default. */
        public Builder fifoCapacity(int capacity) {
            this.fifoCapacity = FifoLayout.checkCapacity(capacity, "proxy service");
            return this;
        }

        /**
         * SYNC triggers taken and not yet delivered to the flush subscriber (or, without one, not
         * yet flushed) before the loop stops taking more: 1 to {@value #MAX_FLUSH_BUFFER};
         * {@value #DEFAULT_FLUSH_BUFFER} by default.
         */
        public Builder flushBuffer(int completions) {
            if (completions < 1 || completions > MAX_FLUSH_BUFFER) {
                throw invalid("builder", "the flush buffer holds 1 to " + MAX_FLUSH_BUFFER + " completions, got "
                        + completions);
            }
            this.flushBuffer = completions;
            return this;
        }

        /** The poller's thread; {@link Poller#VIRTUAL_THREAD} by default. */
        public Builder poller(Poller poller) {
            this.poller = Objects.requireNonNull(poller, "poller");
            return this;
        }

        /**
         * How long the loop keeps polling once the fifo went idle before it starts parking (with a
         * growing delay, up to 50 µs): 0 to 1 s; {@code jmscclpp.waitSpinMicros} (20 µs) by
         * default, which suits a virtual thread sharing carriers. A dedicated
         * {@link Poller#PLATFORM_THREAD} poller serving a GPU may spin longer, as MSCCL++'s proxy
         * does, so that a trigger arriving after a quiet spell is not taken late by a park. While
         * triggers (or polled flushes) keep arriving less than a millisecond apart, the loop spins
         * longer than this by itself: twice the longest of its last eight idle spells under a
         * millisecond, so that a ping-pong or a stream of transfers is served without parks; once
         * work stops it spins that long once (at most 2 ms), then parks.
         */
        public Builder idleSpin(Duration spin) {
            if (spin.isNegative() || spin.compareTo(Duration.ofSeconds(1)) > 0) {
                throw invalid("builder", "the idle spin is 0 to 1 s, got " + spin);
            }
            this.idleSpin = spin;
            return this;
        }

        /** The timeout of each {@link Connection#flush}; a flush that passes it fails the service. 30 s by default. */
        public Builder flushTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw invalid("builder", "the flush timeout must be positive, got " + timeout);
            }
            this.flushTimeout = timeout;
            return this;
        }

        /**
         * Allocates the fifo and the flushed-position words (8 KiB) from the backend; the loop
         * starts with {@link ProxyService#start()}.
         */
        public ProxyService build() {
            return new ProxyService(this);
        }
    }
}
