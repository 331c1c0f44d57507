package org.jmscclpp.cuda.kernel;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.Optional;
import org.jmscclpp.core.AbortSignal;
import org.jmscclpp.core.Backend;
import org.jmscclpp.core.Communicator;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import reactor.core.Disposable;

/**
 * A communicator's {@link AbortSignal} as device code sees it: a 64-bit word of host-visible memory
 * (pinned and mapped into the GPU on the cuda backend) that is 0 while the job runs and set to
 * {@link #RAISED} the moment the signal is raised (a dead peer, an {@code abort} on any rank).
 * Kernels get the word as a parameter of type {@code jmscclpp::AbortFlag} (8 bytes: pass it
 * with {@link KernelArgs.Builder#abortFlag}, which is {@link #address()} as a pointer) and give it to the waits of the device
 * API ({@code channel.wait(abort)}, {@code flush(abort)}, {@code unpackPackets(..., abort)}, ...):
 * such a wait looks at the word while it spins and returns {@code false} once it is set, instead
 * of spinning to its deadline and stopping the kernel with a trap, which would leave the CUDA
 * context unusable for the rest of the process. A wait given the flag that passes its deadline
 * (or whose proxy is gone) does not trap either: it stores {@link #TIMEOUT} (or
 * {@link #PROXY_GONE}) into the word, which ends every other wait given the flag, and returns
 * false. The kernel then returns early with garbage results, and after it the host calls
 * {@link #throwIfSet} (or reads {@link #failure}) to turn the word into the job's error.
 *
 * <pre>{@code
 * try (DeviceAbortFlag abort = DeviceAbortFlag.create(communicator)) {
 *     KernelArgs args = KernelArgs.builder()
 *             .handle(MemoryChannel.DEVICE_HANDLE_BYTES, channel::encodeDeviceHandle)
 *             .abortFlag(abort)                     // jmscclpp::AbortFlag abort
 *             .build();
 *     stream.launch(kernel, LaunchConfig.of(1, 1), args);
 *     stream.synchronize(timeout, "my kernel");     // ends soon after an abort: no trap
 *     abort.throwIfSet("my kernel");                // ABORTED / REMOTE_ERROR naming the rank that failed first
 * }
 * }</pre>
 *
 * <p>One flag serves any number of kernels and launches; a communicator may have several (the
 * CUDA collective communicator has its own). Once set the word stays set, as the signal stays
 * raised: build a new communicator (new job) to go on. Thread-safe.
 */
public final class DeviceAbortFlag implements AutoCloseable {

    /** The word's value while the job runs. */
    public static final long NONE = 0;
    /** The host raised the communicator's abort signal ({@code jmscclpp::AbortRaised}). */
    public static final long RAISED = 1;
    /** A device wait given the flag passed its deadline ({@code jmscclpp::AbortTimeout}). */
    public static final long TIMEOUT = 2;
    /** A device wait given the flag found its proxy stopped or failed ({@code jmscclpp::AbortProxyGone}). */
    public static final long PROXY_GONE = 3;
    /** The bits of the word that hold one of the codes above; kernels may use the others (the collectives mark 1 << 8). */
    public static final long CODE_MASK = 0xFF;
    /** Bytes of the device-side {@code jmscclpp::AbortFlag}: one pointer. */
    public static final int DEVICE_BYTES = 8;

    private static final VarHandle WORD = ValueLayout.JAVA_LONG.varHandle();

    private final DeviceBuffer word;
    private final MemorySegment host;
    private final AbortSignal signal;
    private final int rank;
    private final Disposable listener;
    /** Guarded by this: the word is not written after it is freed. */
    private volatile boolean closed;

    private DeviceAbortFlag(DeviceBuffer word, AbortSignal signal, int rank) {
        this.word = word;
        this.host = word.hostSegment();
        this.signal = signal;
        this.rank = rank;
        WORD.setRelease(host, 0L, NONE);
        // a signal raised already sets the word at once
        this.listener = signal.onRaise(cause -> raise());
    }

    /** A flag for {@code communicator}'s abort signal, its word in the communicator's backend. */
    public static DeviceAbortFlag create(Communicator communicator) {
        Objects.requireNonNull(communicator, "communicator");
        return create(communicator.backend(), communicator.abortSignal(), communicator.rank());
    }

    /**
     * A flag for {@code signal}, its word allocated with {@code backend}'s
     * {@link Backend#allocateHostVisible}; {@code rank} names this rank in errors.
     */
    public static DeviceAbortFlag create(Backend backend, AbortSignal signal, int rank) {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(signal, "signal");
        DeviceBuffer word = backend.allocateHostVisible(DEVICE_BYTES);
        try {
            return new DeviceAbortFlag(word, signal, rank);
        } catch (RuntimeException e) {
            word.close();
            throw e;
        }
    }

    /** The word's device address: the value of a {@code jmscclpp::AbortFlag} kernel parameter. */
    public long address() {
        return word.address();
    }

    /** The word: {@link #NONE} while the job runs, else a code (in {@link #CODE_MASK}) and the kernels' own bits. */
    public long status() {
        if (closed) {
            throw JmscclppException.builder(ErrorCode.INVALID_USAGE, "the device abort flag is closed").rank(rank)
                    .phase("abort flag").build();
        }
        return (long) WORD.getAcquire(host, 0L);
    }

    /** Whether the word is set: the job was aborted, or a device wait given the flag gave up. */
    public boolean isSet() {
        return status() != NONE;
    }

    /**
     * Sets the word to {@link #RAISED} unless it holds a code already; what raising the signal
     * does. Kernels waiting with the flag return soon after.
     */
    public synchronized void raise() {
        if (!closed) {
            WORD.compareAndExchangeRelease(host, 0L, NONE, RAISED);
        }
    }

    /**
     * The error the word stands for, located at {@code phase}: the signal's cause where it was
     * raised (ABORTED or REMOTE_ERROR naming the rank that failed first), else TIMEOUT or
     * SYSTEM_ERROR for a device wait that gave up; empty while the word is clear.
     */
    public Optional<JmscclppException> failure(String phase) {
        long status = status();
        if (status == NONE) {
            return Optional.empty();
        }
        Optional<JmscclppException> cause = signal.cause();
        if (cause.isPresent()) {
            JmscclppException c = cause.get();
            return Optional.of(JmscclppException.builder(c.code(), "the job failed while this rank's kernels waited: "
                    + c.detail()).rank(rank).peer(c.peer()).phase(phase).cause(c).build());
        }
        long code = status & CODE_MASK;
        JmscclppException e = code == TIMEOUT
                ? JmscclppException.builder(ErrorCode.TIMEOUT, "a device wait passed its deadline (the kernels"
                        + " returned early; their results are garbage)").rank(rank).phase(phase).build()
                : code == PROXY_GONE
                ? JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "a device wait found its proxy stopped or failed"
                        + " (the kernels returned early; their results are garbage)").rank(rank).phase(phase).build()
                : JmscclppException.builder(ErrorCode.ABORTED, "the device abort flag was set (word 0x"
                        + Long.toHexString(status) + ") without an abort of the job").rank(rank).phase(phase).build();
        return Optional.of(e);
    }

    /** Throws {@link #failure}'s error when the word is set. */
    public void throwIfSet(String phase) {
        Optional<JmscclppException> e = failure(phase);
        if (e.isPresent()) {
            throw e.get();
        }
    }

    /**
     * Stops listening to the signal and frees the word. Call it once the kernels given the flag
     * have ended. Idempotent.
     */
    @Override
    public void close() {
        listener.dispose();
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        word.close();
    }

    @Override
    public String toString() {
        return "DeviceAbortFlag[rank " + rank + (closed ? ", closed]" : ", 0x" + Long.toHexString(status()) + "]");
    }
}
