package org.jmscclpp.core.metrics.probe;

import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.FlightRecorderListener;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jspecify.annotations.Nullable;

/**
 * Everything that names a JFR type, loaded only where {@link Jfr#AVAILABLE} found Flight Recorder.
 * The event classes are registered when the recorder initialises (see {@link Jfr#listen}); until
 * then, and while no recording enables a type ({@link EventType#isEnabled()}, a field read), no event
 * object is made. The callers carry an event as an {@code Object} between its begin and its end.
 */
final class JfrEvents {

    /** The registered types; null until Flight Recorder initialised. */
    private static volatile @Nullable EventType flush;
    private static volatile @Nullable EventType collective;

    private JfrEvents() {
    }

    static void listen() {
        FlightRecorder.addListener(new FlightRecorderListener() {
            @Override
            public void recorderInitialized(FlightRecorder recorder) {
                try {
                    register();
                } catch (RuntimeException e) {
                    // an event class JFR refuses: the counters go on without events
                }
            }
        });
    }

    private static synchronized void register() {
        if (flush != null) {
            return;
        }
        FlightRecorder.addPeriodicEvent(ConnectionStatisticsEvent.class, JfrEvents::emitConnectionStatistics);
        FlightRecorder.addPeriodicEvent(ProxyStatisticsEvent.class, JfrEvents::emitProxyStatistics);
        collective = EventType.getEventType(CollectiveEvent.class);
        flush = EventType.getEventType(FlushEvent.class);
    }

    /** A flush event begun now, or null when no recording wants one. */
    static @Nullable Object beginFlush(long bytes) {
        EventType type = flush;
        if (type == null || !type.isEnabled()) {
            return null;
        }
        FlushEvent e = new FlushEvent();
        e.begin();
        e.bytes = bytes;
        return e;
    }

    static void endFlush(Object started, ConnectionContext context, Transport transport, boolean succeeded) {
        FlushEvent e = (FlushEvent) started;
        e.end();
        if (e.shouldCommit()) {
            e.rank = context.rank();
            e.peer = context.remoteRank();
            e.tag = context.tag();
            e.transport = transport.name();
            e.succeeded = succeeded;
            e.commit();
        }
    }

    /** {@code calls} collective events begun now, or null when no recording wants them. */
    static @Nullable Object beginCollectives(int calls) {
        EventType type = collective;
        if (type == null || !type.isEnabled()) {
            return null;
        }
        CollectiveEvent[] events = new CollectiveEvent[calls];
        for (int i = 0; i < calls; i++) {
            events[i] = new CollectiveEvent();
            events[i].begin();
        }
        return events;
    }

    static void endCollective(Object started, int index, int rank, int ranks, CollectiveCall call, long bytes,
                              String algorithm, boolean group, boolean succeeded) {
        CollectiveEvent e = ((CollectiveEvent[]) started)[index];
        e.end();
        if (e.shouldCommit()) {
            e.rank = rank;
            e.ranks = ranks;
            e.op = call.kind().label();
            e.type = call.type().label();
            e.count = call.count();
            e.bytes = bytes;
            e.algorithm = algorithm;
            e.group = group;
            e.succeeded = succeeded;
            e.commit();
        }
    }

    private static void emitConnectionStatistics() {
        for (ConnectionProbe p : Probes.connectionProbes()) {
            ConnectionStatisticsEvent e = new ConnectionStatisticsEvent();
            e.rank = p.rank();
            e.peer = p.peer();
            e.transport = p.transport().name();
            e.bytesWritten = p.bytesWritten();
            e.writes = p.writes();
            e.signals = p.signals();
            e.flushes = p.flushes();
            e.flushErrors = p.flushErrors();
            e.flushTime = p.flushNanos();
            e.commit();
        }
    }

    private static void emitProxyStatistics() {
        for (ProxyProbe p : Probes.proxyProbes()) {
            ProxyStatisticsEvent e = new ProxyStatisticsEvent();
            e.proxy = p.name();
            e.fifoCapacity = p.fifoCapacity();
            // the total first: it publishes the other counts and the pops of the triggers it counts, so the
            // event never shows a counted trigger still in the fifo (JfrEventsTest saw one in a build of stop 33)
            e.triggers = p.triggers();
            e.dataTriggers = p.dataTriggers();
            e.flagTriggers = p.flagTriggers();
            e.syncTriggers = p.syncTriggers();
            e.fifoOccupancy = p.fifoOccupancy();
            e.commit();
        }
    }
}
