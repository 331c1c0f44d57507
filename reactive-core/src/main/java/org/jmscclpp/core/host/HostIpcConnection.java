package org.jmscclpp.core.host;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Device;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.spi.ConnectionChecks;
import org.jmscclpp.core.spi.Endpoint;
import reactor.core.publisher.Mono;

/**
 * A {@link Connection} over {@link Transport#HOST_IPC}: the peer's memory is a shared-memory file
 * mapped into this process, so a write is a copy into that mapping, done by the calling thread.
 *
 * <p>{@link #write} returns when the bytes are in the peer's mapping: the same physical pages the
 * peer reads, kept coherent by the CPU. {@link #updateAndSync} stores the token with release
 * semantics, so a peer that loads it with acquire sees every write made before it by this thread
 * (and by threads whose writes happen-before it). {@link #flush} has nothing in flight to wait
 * for; it issues a full fence and completes, which orders every earlier write before whatever the
 * flushing thread does next (typically telling the peer, by another channel, that the data is
 * there).
 *
 * <p>Every check happens before any byte moves: a rejected operation leaves the destination as it
 * was. Thread-safe.
 */
final class HostIpcConnection implements Connection {

    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private final Endpoint local;
    private final Endpoint remote;
    private final ConnectionContext context;
    private final AtomicBoolean closed = new AtomicBoolean();

    HostIpcConnection(Endpoint local, Endpoint remote, ConnectionContext context) {
        this.local = local;
        this.remote = remote;
        this.context = context;
    }

    @Override
    public void write(RegisteredMemory dst, long dstOffset, RegisteredMemory src, long srcOffset, long size) {
        String phase = "write";
        checkOpen(phase);
        ConnectionChecks.write(context, Transport.HOST_IPC, dst, dstOffset, src, srcOffset, size);
        MemorySegment d = segment(dst, phase, "destination");
        MemorySegment s = segment(src, phase, "source");
        try {
            MemorySegment.copy(s, srcOffset, d, dstOffset, size);
        } catch (IllegalStateException | WrongThreadException | IndexOutOfBoundsException e) {
            throw invalid(phase, "the copy of " + size + " bytes failed (" + e.getMessage()
                    + "): was a buffer closed meanwhile?");
        }
    }

    @Override
    public void updateAndSync(RegisteredMemory dst, long dstOffset, AtomicLong localToken, long newValue) {
        String phase = "updateAndSync";
        checkOpen(phase);
        ConnectionChecks.token(context, Transport.HOST_IPC, dst, dstOffset);
        MemorySegment d = segment(dst, phase, "token");
        localToken.set(newValue);
        try {
            WORD.setRelease(d, dstOffset, newValue);
        } catch (IllegalStateException e) {
            throw invalid(phase, "the token store failed (" + e.getMessage() + "): was the memory closed meanwhile?");
        }
    }

    /**
     * Completes at once, on the subscribing thread, after a full fence: {@link #write} and
     * {@link #updateAndSync} are synchronous, so everything issued before is already in the
     * peer's mapping; the fence makes sure no later access of this thread is reordered before
     * those stores. Never times out; errors with {@link ErrorCode#INVALID_USAGE} when the
     * connection is closed.
     */
    @Override
    public Mono<Void> flush(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        return Mono.fromRunnable(() -> {
            checkOpen("flush");
            VarHandle.fullFence();
        });
    }

    @Override
    public Transport transport() {
        return Transport.HOST_IPC;
    }

    @Override
    public Transport remoteTransport() {
        return Transport.HOST_IPC;
    }

    @Override
    public Device localDevice() {
        return local.device();
    }

    @Override
    public ConnectionContext context() {
        return context;
    }

    /** The local endpoint's queue depth; -1 unless configured, since writes never queue here. */
    @Override
    public int maxWriteQueueSize() {
        return local.maxWriteQueueSize();
    }

    /** Marks the connection closed; it holds nothing else (the memories belong to their owners). */
    @Override
    public void close() {
        closed.set(true);
    }

    /** Whether {@link #close()} was called. */
    boolean isClosed() {
        return closed.get();
    }

    private void checkOpen(String phase) {
        if (closed.get()) {
            throw invalid(phase, "the connection is closed");
        }
    }

    private MemorySegment segment(RegisteredMemory memory, String phase, String which) {
        try {
            return memory.hostSegment();
        } catch (JmscclppException e) {
            throw invalid(phase, which + ": " + e.detail());
        }
    }

    private JmscclppException invalid(String phase, String detail) {
        return ConnectionChecks.invalid(context, phase, detail);
    }

    @Override
    public String toString() {
        return "HostIpcConnection[" + context + (closed.get() ? ", closed" : "") + ", remote " + remote + "]";
    }
}
