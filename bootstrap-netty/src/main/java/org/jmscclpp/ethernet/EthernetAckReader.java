package org.jmscclpp.ethernet;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import org.jmscclpp.bootstrap.wire.Preamble;
import org.jmscclpp.bootstrap.wire.Proofs;
import org.jspecify.annotations.Nullable;

/**
 * The dialler's reader and decoder of what the listener sends back ({@link EthernetWire}): the
 * handshake's CHALLENGE (answered by the connection from this thread), ACK frames, handed to the
 * connection as they arrive, and at most one ERROR frame, after which the
 * listener closes. Anything else ends the connection with the reason.
 *
 * <p>Two kinds of thread read the socket, one at a time (a lock guards the socket's reads and the
 * bytes not yet decoded):
 * <ul>
 *   <li>a platform thread of its own (named {@code jmscclpp-ethernet-acks-...}, one per
 *       {@link EthernetConnection}), which waits in a {@link Selector} for the socket to be
 *       readable, and also wakes for the connection's nearest flush deadline
 *       ({@link EthernetConnection#expireFlushes}). It completes the flushes that were
 *       subscribed to, and notices a peer's error or end while nobody flushes;</li>
 *   <li>a caller blocked in {@link EthernetConnection#awaitFlush} ({@link #poll}, {@link #awaitReadable}):
 *       the kernel then wakes that caller itself when the ack arrives, as a blocking socket read
 *       would, instead of waking this thread, which would then wake the caller (measured on a
 *       2-core VM: about 30 µs of a 90 µs write + flush round trip of 1 KiB).</li>
 * </ul>
 * Both watching the socket would wake both for every ack, and the one that loses the race for
 * {@link #reading} either finds nothing or must wake the other: traced with {@code perf trace} on
 * the 2-core VM, 64 KiB write + flush, the reader thread took the ack and woke the flusher through
 * its selector in 46% of 8000 transfers. So while a caller flushes, and for {@link #QUIET_NANOS}
 * after it leaves (a caller that flushes often comes straight back), the reader thread stays off
 * the socket: its key's interest is cleared and it looks only every millisecond, at its flush
 * deadlines and at whether the flusher has gone. A subscribed flush ({@link #wakeup} from
 * {@link EthernetConnection#flush}, or from a flusher that leaves while one waits) ends the quiet
 * once no caller flushes.
 *
 * <p>The thread ends when the socket reaches its end, fails or is closed, and then tells the
 * connection ({@link EthernetConnection#onClosed}).
 */
final class EthernetAckReader implements Runnable {

    /** Enough for any frame the listener sends (an ERROR is at most 32 + 1024 bytes). */
    private static final int BUFFER_BYTES = 4096;
    /** How long after a blocking flush the reader thread stays off the socket (see the class comment). */
    static final long QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

    private final EthernetConnection connection;
    private final SocketChannel socket;
    private final Selector readable;
    private final SelectionKey readableKey;
    private final Thread thread;
    private final CompletableFuture<Void> ended = new CompletableFuture<>();
    /** Guards reads of the socket, {@link #in} and {@link #over}. */
    private final ReentrantLock reading = new ReentrantLock();
    /** Bytes read and not yet decoded; released when the thread ends. */
    private final ByteBuf in = Unpooled.buffer(BUFFER_BYTES);
    private volatile boolean over;
    /** Held by the one caller that may wait in {@link #flusherSelector}. */
    private final ReentrantLock flusher = new ReentrantLock();
    /** Calls of {@link #wakeFlusher} that found a selector (for tests). */
    private volatile long flusherWakeups;
    /** Made on the first blocking flush; set and closed under {@link #flusher} (its lock and its monitor). */
    private volatile @Nullable Selector flusherSelector;
    private boolean flusherClosed;
    /** When the last blocking flush ended ({@link System#nanoTime()}). */
    private volatile long flusherLeft = System.nanoTime() - QUIET_NANOS;
    /** Whether the reader thread is off the socket now (reader thread writes; {@link #quiet()} reads). */
    private volatile boolean quiet;
    /** Acks the reader thread decoded itself (written under {@link #reading}; for tests). */
    private volatile long acksOnReaderThread;

    /** Opens the reader's selector on {@code socket} (non-blocking); {@link #start} runs it. */
    EthernetAckReader(EthernetConnection connection, SocketChannel socket, String name) throws IOException {
        this.connection = connection;
        this.socket = socket;
        this.readable = Selector.open();
        try {
            this.readableKey = socket.register(readable, SelectionKey.OP_READ);
        } catch (IOException | RuntimeException e) {
            readable.close();
            in.release();
            throw e;
        }
        this.thread = Thread.ofPlatform().daemon().name(name).unstarted(this);
    }

    void start() {
        thread.start();
    }

    /** Cuts the reader thread's current wait short (a nearer flush deadline, or the socket closed). */
    void wakeup() {
        readable.wakeup();
    }

    /** Waits at most {@code millis} for the reader thread to have ended; returns whether it has. */
    boolean awaitEnd(long millis) {
        if (Thread.currentThread() == thread) {
            return false;
        }
        try {
            ended.get(Math.max(1, millis), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public void run() {
        try {
            while (true) {
                boolean flushing = flusher.isLocked();
                if (!flushing) {
                    reading.lock();
                    try {
                        if (!drain()) {
                            break;
                        }
                    } finally {
                        reading.unlock();
                    }
                }
                long now = System.nanoTime();
                // a flushing caller reads every ack, subscribed flushes' too; after it leaves, this
                // thread watches again at once for a subscribed flush, else after QUIET_NANOS
                boolean q = flushing || now - flusherLeft < QUIET_NANOS && !connection.hasSubscribedFlushes();
                if (q != quiet) {
                    // applied by this thread's next select
                    readableKey.interestOps(q ? 0 : SelectionKey.OP_READ);
                    quiet = q;
                }
                long millis = connection.expireFlushes(now);
                readable.select(q ? 1 : millis);
                readable.selectedKeys().clear();
                if (over || !socket.isOpen()) {
                    break;
                }
            }
        } catch (ClosedSelectorException | IOException e) {
            // the selector failed or was closed: the socket is closed below either way
        } finally {
            reading.lock();
            try {
                over = true;
                in.release();
            } finally {
                reading.unlock();
            }
            closeQuietly(socket);
            closeQuietly(readable);
            connection.onClosed();
            ended.complete(null);
        }
    }

    /**
     * Reads (without waiting) what the socket holds and hands its frames to the connection, unless
     * another thread is reading; returns false once the connection is over. Any thread.
     */
    boolean poll() {
        if (!reading.tryLock()) {
            return !over;
        }
        try {
            return drain();
        } finally {
            reading.unlock();
        }
    }

    /** Under {@link #reading}: reads until the socket is empty; false once the connection is over. */
    private boolean drain() {
        if (over) {
            return false;
        }
        try {
            while (true) {
                int want = in.writableBytes();
                int n = in.writeBytes(socket, want);
                if (n == 0) {
                    return true;
                }
                if (n < 0 || !decode(in)) {
                    break;   // the listener closed (or this side did), or the connection is over
                }
                in.discardReadBytes();
                if (n < want) {
                    // the socket held less than the buffer takes: it is empty now, and a read to make
                    // sure would cost a system call per flush (the selectors are level-triggered: bytes
                    // that came since wake the next select at once)
                    return true;
                }
            }
        } catch (IOException e) {
            connection.onBroken(e);
        }
        over = true;
        closeQuietly(socket);
        readable.wakeup();
        connection.onClosed();
        return false;
    }

    // ------------------------------------------------------------------ a blocking flush's wait

    /** Makes the calling thread the one that may {@link #awaitReadable}; false when another is. */
    boolean tryBecomeFlusher() {
        return flusher.tryLock();
    }

    /** Whether the calling thread is the flusher ({@link #tryBecomeFlusher}). */
    boolean isFlusher() {
        return flusher.isHeldByCurrentThread();
    }

    void leaveFlusher() {
        flusherLeft = System.nanoTime();
        flusher.unlock();
    }

    /** How many acks the reader thread decoded itself rather than a flushing caller (for tests). */
    long acksOnReaderThread() {
        return acksOnReaderThread;
    }

    /** Whether the reader thread is off the socket (a subscribed flush then wakes it). */
    boolean quiet() {
        return quiet;
    }

    /**
     * The flusher's wait (at most {@code nanos}) for the socket to be readable or for
     * {@link #wakeFlusher}; returns at once when the connection is over.
     */
    void awaitReadable(long nanos) throws IOException {
        Selector s = prepareFlusher();
        if (s == null) {
            return;
        }
        s.select(selectMillis(nanos));
        s.selectedKeys().clear();
    }

    /**
     * Opens the flusher's selector unless it is open: the flusher calls it before it publishes
     * what it waits for, so that a {@link #wakeFlusher} from then on always finds the selector
     * (a wake-up sent before the selector existed was lost, and the flush then waited for its
     * deadline although its ack had arrived). Returns null once the connection is closing.
     */
    @Nullable Selector prepareFlusher() throws IOException {
        synchronized (flusher) {
            Selector s = flusherSelector;
            if (s == null) {
                if (flusherClosed) {
                    return null;
                }
                s = Selector.open();
                try {
                    socket.register(s, SelectionKey.OP_READ);
                } catch (IOException | RuntimeException e) {
                    closeQuietly(s);
                    throw e;
                }
                flusherSelector = s;
            }
            return s;
        }
    }

    /** Ends the flusher's current or next wait. */
    void wakeFlusher() {
        Selector s = flusherSelector;
        if (s != null) {
            flusherWakeups++;
            s.wakeup();
        }
    }

    /** How many times {@link #wakeFlusher} found a selector to wake (for tests; racy, so approximate). */
    long flusherWakeups() {
        return flusherWakeups;
    }

    /** Closes the flusher's selector once no caller waits in it (the connection is closing). */
    void closeFlusher() {
        synchronized (flusher) {
            flusherClosed = true;
        }
        wakeFlusher();
        flusher.lock();
        try {
            Selector s = flusherSelector;
            flusherSelector = null;
            if (s != null) {
                closeQuietly(s);
            }
        } finally {
            flusher.unlock();
        }
    }

    // ------------------------------------------------------------------ decoding

    /** Decodes the whole frames in {@code in}; returns false when the connection is over. */
    private boolean decode(ByteBuf in) {
        while (in.readableBytes() >= EthernetWire.HEADER_BYTES) {
            int start = in.readerIndex();
            int length = in.getIntLE(start + 4);
            byte type = in.getByte(start);
            if (type == EthernetWire.ERROR && length >= 0 && length <= EthernetWire.MAX_REASON
                    && in.readableBytes() < EthernetWire.HEADER_BYTES + length) {
                return true;   // the reason is not all here yet
            }
            if (type == EthernetWire.CHALLENGE && length == EthernetWire.CHALLENGE_BYTES
                    && in.readableBytes() < EthernetWire.HEADER_BYTES + length) {
                return true;   // the challenge is not all here yet
            }
            EthernetWire.Header h = EthernetWire.readHeader(in);
            @Nullable String why;
            if (h.reserved() != 0 || h.region() != 0 || h.offset() != 0) {
                why = "non-zero reserved fields in a " + EthernetWire.typeName(h.type()) + " frame";
            } else if (h.type() == EthernetWire.CHALLENGE && h.length() == EthernetWire.CHALLENGE_BYTES
                    && h.sequence() == 0) {
                byte[] nonce = new byte[Preamble.NONCE_BYTES];
                byte[] proof = new byte[Proofs.BYTES];
                in.readBytes(nonce).readBytes(proof);
                why = connection.onChallenge(nonce, proof);
            } else if (h.type() == EthernetWire.ACK && h.length() == 0) {
                if (Thread.currentThread() == thread) {
                    acksOnReaderThread++;
                }
                why = connection.onAck(h.sequence());
            } else if (h.type() == EthernetWire.ERROR && h.length() >= 0 && h.length() <= EthernetWire.MAX_REASON) {
                connection.onPeerError(in.readCharSequence(h.length(), StandardCharsets.UTF_8).toString());
                return false;
            } else {
                why = "unexpected " + EthernetWire.typeName(h.type()) + " frame of " + h.length() + " bytes";
            }
            if (why != null) {
                connection.onProtocolError(why);
                return false;
            }
        }
        return true;
    }

    /** Closes {@code c} (nothing when null), ignoring what closing throws: the caller reports what went before. */
    static void closeQuietly(java.io.@Nullable Closeable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (IOException ignored) {
            // closing: nothing more to report
        }
    }

    /** A wait of {@code nanos} as a selector's timeout: milliseconds rounded up, at least 1 (0 means forever). */
    static long selectMillis(long nanos) {
        return Math.max(1, TimeUnit.NANOSECONDS.toMillis(nanos + 999_999));
    }
}
