package org.jmscclpp.testkit;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;

/**
 * A {@code java.util.logging} handler that keeps every record it is given, for tests that check what
 * the library logged: attach it to a logger, run, detach it, read {@link #records()}.
 */
public final class RecordingHandler extends Handler {

    private final List<LogRecord> records = new ArrayList<>();

    @Override
    public synchronized void publish(LogRecord r) {
        records.add(r);
    }

    /** The records published so far, in order (a copy). */
    public synchronized List<LogRecord> records() {
        return List.copyOf(records);
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
    }
}
