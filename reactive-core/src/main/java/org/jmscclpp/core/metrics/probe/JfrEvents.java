package org.jmscclpp.core.metrics.probe;

import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import org.jmscclpp.core.ConnectionContext;
import org.jmscclpp.core.Transport;
import org.jmscclpp.core.collective.CollectiveCall;
import org.jspecify.annotations.Nullable;

/**
 * Everything that names a JFR type, loaded only where {@link Jfr#ON} found Flight Recorder. An
 * event is made only while a recording has its type enabled ({@link EventType#isEnabled()}, a field
 * read); the callers carry it as an {@code Object} between its begin and its end.
 */
final class JfrEvents {

    private static final EventType FLUSH = EventType.getEventType(FlushEvent.class);
    private static final EventType COLLECTIVE = EventType.getEventType(CollectiveEvent.class);

    private JfrEvents() {
    }

    static void register() {
        FlightRecorder.addPeriodicEvent(ConnectionStatisticsEvent.class, JfrEvents::emitConnectionStatistics);
        FlightRecorder.addPeriodicEvent(ProxyStatisticsEvent.class, JfrEvents::emitProxyStatistics);
    }

    /** A flush event begun now, or null when no recording wants one. */
    static @Nullable Object beginFlush(long bytes) {
        if (!FLUSH.isEnabled()) {
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
        if (!COLLECTIVE.isEnabled()) {
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
            e.fifoOccupancy = p.fifoOccupancy();
            e.dataTriggers = p.dataTriggers();
            e.flagTriggers = p.flagTriggers();
            e.syncTriggers = p.syncTriggers();
            e.triggers = p.triggers();
            e.commit();
        }
    }
}
