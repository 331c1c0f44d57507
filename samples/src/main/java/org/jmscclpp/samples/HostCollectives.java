package org.jmscclpp.samples;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jmscclpp.core.ErrorCode;
import org.jmscclpp.core.JmscclppException;

/** Releasing what a host collective made: newest first (registrations before their buffers), every one even when one fails. */
final class HostCollectives {

    private HostCollectives() {
    }

    /** Closes {@code owned} newest first and empties it; SYSTEM_ERROR with the first failure (the others suppressed). */
    static void closeAll(List<AutoCloseable> owned, int rank, String phase) {
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

    /** Closes {@code owned} after setup failed with {@code failure}, attaching what closing threw to it. */
    static void closeAfterFailure(List<AutoCloseable> owned, RuntimeException failure) {
        try {
            closeAll(owned, -1, "setup cleanup");
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }
}
