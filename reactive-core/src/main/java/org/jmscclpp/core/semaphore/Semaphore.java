package org.jmscclpp.core.semaphore;

import java.util.concurrent.atomic.AtomicBoolean;
import org.jmscclpp.core.AbortSignal;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.Connection;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.RegisteredMemory;
import org.jmscclpp.core.spi.Tokens;

/**
 * The two token words behind a semaphore over one connection: this rank's inbound token (which
 * the peer signals) and the peer's inbound token (which this rank signals), as MSCCL++'s
 * {@code Semaphore} pairs a local and a remote {@code SemaphoreStub}. Built by
 * {@link Communicator#buildSemaphore}; wrapped by {@link Host2HostSemaphore},
 * {@link Host2DeviceSemaphore} and {@link MemoryDevice2DeviceSemaphore}, which give the waiting and
 * signalling verbs.
 *
 * <p>Tokens are monotonic 64-bit counters: a signal raises the peer's inbound token by one, a wait
 * consumes one signal by raising this side's expected value. {@link #close()} frees this rank's
 * token and unmaps the peer's.
 */
public final class Semaphore implements AutoCloseable {

    /** Bytes of one token word. */
    public static final int TOKEN_BYTES = 8;

    private final Connection connection;
    private final RegisteredMemory localMemory;
    private final DeviceBuffer localToken;
    private final RegisteredMemory remoteMemory;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AbortSignal abortSignal;

    /** A semaphore whose waits end only at their deadlines (made outside a communicator). */
    public Semaphore(Connection connection, DeviceBuffer localToken, RegisteredMemory localMemory, RegisteredMemory remoteMemory) {
        this(connection, localToken, localMemory, remoteMemory, AbortSignal.NEVER);
    }

    /** A semaphore whose waits also end, with its cause, once {@code abortSignal} is raised. */
    public Semaphore(Connection connection, DeviceBuffer localToken, RegisteredMemory localMemory,
                     RegisteredMemory remoteMemory, AbortSignal abortSignal) {
        this.connection = connection;
        this.localToken = localToken;
        this.localMemory = localMemory;
        this.remoteMemory = remoteMemory;
        this.abortSignal = abortSignal;
    }

    /** The job's abort signal (its communicator's), which ends every wait on this semaphore. */
    public AbortSignal abortSignal() {
        return abortSignal;
    }

    /** The connection whose transport carries the signals. */
    public Connection connection() {
        return connection;
    }

    /** This rank's inbound token, registered with the connection's transport. */
    public RegisteredMemory localMemory() {
        return localMemory;
    }

    /** The peer's inbound token, which this rank signals. */
    public RegisteredMemory remoteMemory() {
        return remoteMemory;
    }

    /** Frees the local token and unmaps the remote one. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            remoteMemory.close();
            localMemory.close();
            localToken.close();
        }
    }

    @Override
    public String toString() {
        return "Semaphore[" + connection.context() + ", " + connection.transport() + "]";
    }
}
