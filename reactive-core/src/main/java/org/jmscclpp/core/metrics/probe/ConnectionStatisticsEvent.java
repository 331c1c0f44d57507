package org.jmscclpp.core.metrics.probe;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Period;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;
import org.jmscclpp.core.metrics.JmscclppMetrics;

/** {@value JmscclppMetrics#CONNECTION_STATISTICS_EVENT}: the cumulative figures of one rank, peer and transport. */
@Name(JmscclppMetrics.CONNECTION_STATISTICS_EVENT)
@Label("Connection Statistics")
@Category({"jmscclpp", "Connection"})
@Description("What the connections of one rank to one peer over one transport did since the process started")
@Period("1 s")
@StackTrace(false)
final class ConnectionStatisticsEvent extends Event {

    @Label("Rank")
    int rank;

    @Label("Peer")
    int peer;

    @Label("Transport")
    String transport;

    @Label("Bytes Written")
    @DataAmount
    long bytesWritten;

    @Label("Writes")
    long writes;

    @Label("Signals")
    long signals;

    @Label("Flushes")
    long flushes;

    @Label("Flush Errors")
    long flushErrors;

    @Label("Flush Time")
    @Description("The time of the completed flushes together")
    @Timespan
    long flushTime;
}
