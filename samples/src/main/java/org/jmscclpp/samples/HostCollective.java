package org.jmscclpp.samples;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jmscclpp.core.DeviceBuffer;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;
import org.jmscclpp.nativebridge.CudaStream;
import org.jspecify.annotations.Nullable;

/**
 * What the host-backend collectives share: their {@link HostLinks}, input and output buffers of
 * the setup's {@code maxSize}, the list of what they made (closed newest first: registrations
 * before their buffers, every one even when one fails), and runs that end inside
 * {@link #enqueue} (so {@link #synchronize} has nothing to wait for and there is no stream).
 *
 * <p>A subclass builds its channels in its own constructor and, when that throws, hands the
 * failure to {@link #failed}, which releases what {@link #own} collected so far.
 */
abstract class HostCollective implements Collective {

    final HostLinks links;
    private final CollectiveKind kind;
    private final String algorithm;
    private final String name;
    private final long maxSize;
    private final List<AutoCloseable> owned = new ArrayList<>();
    private final DeviceBuffer input;
    private final DeviceBuffer output;

    /** {@code name} is how errors call it: "the host NAME" in setup, "NAME close" when releasing. */
    HostCollective(CollectiveSetup setup, CollectiveKind kind, String algorithm, String name) {
        this.links = new HostLinks(setup, "the host " + name);
        this.kind = kind;
        this.algorithm = algorithm;
        this.name = name;
        this.maxSize = setup.maxSize();
        this.input = own(links.allocate(maxSize));
        try {
            this.output = own(links.allocate(maxSize));
        } catch (RuntimeException e) {
            throw failed(e);
        }
    }

    /** Registers {@code resource} to be closed with the collective; returns it. */
    final <T extends AutoCloseable> T own(T resource) {
        owned.add(resource);
        return resource;
    }

    /** Releases what setup made so far after it failed with {@code failure}, attaching what closing threw; returns {@code failure}. */
    final RuntimeException failed(RuntimeException failure) {
        try {
            closeAll(-1, "setup cleanup");
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
        return failure;
    }

    @Override
    public final CollectiveKind kind() {
        return kind;
    }

    @Override
    public final String algorithm() {
        return algorithm;
    }

    @Override
    public final long maxSize() {
        return maxSize;
    }

    @Override
    public final DeviceBuffer input() {
        return input;
    }

    @Override
    public final DeviceBuffer output() {
        return output;
    }

    @Override
    public final void synchronize(Duration timeout) {
        // enqueue ran the operation to its end on the calling thread
    }

    @Override
    public final @Nullable CudaStream stream() {
        return null;
    }

    @Override
    public final void close() {
        closeAll(links.rank, name + " close");
    }

    /** Closes what {@link #own} collected, newest first, and forgets it; SYSTEM_ERROR with the first failure (the others suppressed). */
    private void closeAll(int rank, String phase) {
        List<AutoCloseable> reversed = new ArrayList<>(owned);
        owned.clear();
        Collections.reverse(reversed);
        Exception first = null;
        for (AutoCloseable c : reversed) {
            try {
                c.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw JmscclppException.builder(ErrorCode.SYSTEM_ERROR, "releasing the collective's resources failed: "
                    + first.getMessage()).rank(rank).phase(phase).cause(first).build();
        }
    }
}
