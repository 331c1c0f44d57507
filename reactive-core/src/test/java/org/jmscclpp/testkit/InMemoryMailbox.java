package org.jmscclpp.testkit;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jmscclpp.core.Bootstrap;
import org.jmscclpp.core.JmscclppException;
import org.jspecify.annotations.Nullable;

/**
 * The stream of messages from one rank to another on one tag: messages nobody has asked for yet,
 * or receivers waiting for a message, never both (a waiting receiver that has already ended
 * elsewhere may linger until the next delivery skips it).
 *
 * <p>Matching is first come, first served under the mailbox lock, so the i-th send delivered is the
 * i-th receive subscribed: the per (peer, tag) FIFO of the {@link Bootstrap} contract.
 */
final class InMemoryMailbox {

    private final ArrayDeque<byte[]> messages = new ArrayDeque<>();
    private final ArrayDeque<InMemoryPending> receivers = new ArrayDeque<>();

    /** Hands {@code message} to the oldest live receiver, or queues it for the next one. */
    void deliver(byte[] message) {
        InMemoryPending taker = null;
        synchronized (this) {
            InMemoryPending r;
            while ((r = receivers.poll()) != null) {
                if (r.claim()) {
                    taker = r;
                    break;
                }
            }
            if (taker == null) {
                messages.add(message);
            }
        }
        if (taker != null) {
            taker.succeedClaimed(message);
        }
    }

    /**
     * Gives {@code op} the oldest queued message, or fails it with {@code senderGone} when the sender
     * has closed and nothing is queued, or makes it wait for the next delivery.
     *
     * @param senderClosed whether the sending rank has closed; read under the mailbox lock: a closing
     *                     sender sets its flag before its {@link #senderClosed} pass takes this lock,
     *                     so a receiver is never left waiting on a closed sender
     */
    void receive(InMemoryPending op, BooleanSupplier senderClosed, Supplier<JmscclppException> senderGone) {
        byte[] message = null;
        synchronized (this) {
            if (op.isDone()) {
                return;
            }
            if (!messages.isEmpty()) {
                if (!op.claim()) {
                    return;
                }
                message = messages.poll();
            } else if (!senderClosed.getAsBoolean()) {
                receivers.add(op);
                return;
            }
        }
        if (message != null) {
            op.succeedClaimed(message);
        } else {
            op.fail(senderGone.get());
        }
    }

    /** Forgets a receiver that ended without a message (deadline, cancel, abort, close). */
    synchronized void remove(InMemoryPending op) {
        receivers.remove(op);
    }

    /**
     * The sender has closed: messages already queued stay receivable, but receivers waiting on an
     * empty mailbox will never get one and fail with the error {@code gone} builds for each.
     */
    void senderClosed(Function<InMemoryPending, JmscclppException> gone) {
        List<InMemoryPending> orphans = new ArrayList<>();
        synchronized (this) {
            if (!messages.isEmpty()) {
                return;
            }
            @Nullable InMemoryPending r;
            while ((r = receivers.poll()) != null) {
                if (r.claim()) {
                    orphans.add(r);
                }
            }
        }
        for (InMemoryPending r : orphans) {
            r.failClaimed(gone.apply(r));
        }
    }
}
